import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerMemoryCli } from "../../dist/cli.js";
import { Runtime } from "../../dist/runtime.js";
import { startFakeMuma } from "../support/fake-muma.mjs";
import { createMockProgram } from "../support/mock-api.mjs";
import { closedPort, setup } from "../support/util.mjs";

let fake;
before(async () => {
  fake = await startFakeMuma({ token: "tok" });
  await setup({ serviceUrl: fake.url, token: "tok" })
    .toolsFor({ sessionKey: "agent:main:user:cli-user", sessionId: "s" })
    .memory_write.execute("c", { content: "Likes green tea" });
});
after(() => fake.close());

function cli(config) {
  const logs = [];
  const logger = { info: () => {}, warn: (m) => logs.push(m), error: (m) => logs.push(m), debug: () => {} };
  const rt = new Runtime({ serviceUrl: fake.url, token: "tok", ...config }, logger);
  const program = createMockProgram();
  const io = { stdout: [], stderr: [], code: 0 };
  registerMemoryCli(rt, { program }, { out: (t) => io.stdout.push(t), err: (t) => io.stderr.push(t), setExitCode: (c) => (io.code = c) });
  return { program, io };
}

test("registerCli is wired through the plugin entry with a `memory` root command", async () => {
  const api = setup({ serviceUrl: fake.url, token: "tok" });
  const program = createMockProgram();
  await api.clis[0].registrar({ program, parentPath: [], config: {}, logger: api.logger });
  assert.deepEqual([...program.children.get("memory").children.keys()].sort(), ["conflicts", "consolidate", "export", "stats"]);
});

test("openclaw memory stats", async () => {
  const { program, io } = cli();
  await program.run(["memory", "stats"], { user: "cli-user" });
  assert.match(io.stdout.join("\n"), /notes: 1/);
  await program.run(["memory", "stats"], { user: "cli-user", json: true });
  assert.equal(JSON.parse(io.stdout.at(-1)).notes, 1);
  assert.equal(io.code, 0);
});

test("openclaw memory export (stdout and --out)", async () => {
  const { program, io } = cli();
  await program.run(["memory", "export"], { user: "cli-user" });
  assert.match(io.stdout.join(""), /Likes green tea/);
  assert.equal(fake.requestsTo("/v1/export").at(-1).query.format, "jsonl");
  assert.equal(fake.requestsTo("/v1/export").at(-1).query.agent_id, "main"); // agent tokens name one
  await program.run(["memory", "export"], { user: "cli-user", agent: "coder" });
  assert.equal(fake.requestsTo("/v1/export").at(-1).query.agent_id, "coder");
  const dir = mkdtempSync(join(tmpdir(), "muma-cli-"));
  try {
    const out = join(dir, "export.jsonl");
    await program.run(["memory", "export"], { user: "cli-user", out });
    assert.match(readFileSync(out, "utf8"), /Likes green tea/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("openclaw memory consolidate / conflicts", async () => {
  const { program, io } = cli();
  await program.run(["memory", "consolidate"], { user: "cli-user" });
  assert.equal(io.stdout.at(-1), "consolidation queued");
  assert.deepEqual(fake.requestsTo("/v1/consolidate").at(-1).body, { user_id: "cli-user" });
  await program.run(["memory", "conflicts"], { user: "cli-user" });
  assert.equal(io.stdout.at(-1), "no conflicts");
  assert.equal(fake.requestsTo("/v1/conflicts").at(-1).query.agent_id, "main");
  await program.run(["memory", "conflicts"], { user: "cli-user", agent: "coder" });
  assert.equal(fake.requestsTo("/v1/conflicts").at(-1).query.agent_id, "coder");
  assert.equal(io.code, 0);
});

test("CLI uses defaultUserId, and fails cleanly without a user or a service", async () => {
  const withDefault = cli({ defaultUserId: "cli-user" });
  await withDefault.program.run(["memory", "stats"], {});
  assert.match(withDefault.io.stdout.join("\n"), /notes: 1/);

  const noUser = cli();
  await noUser.program.run(["memory", "stats"], {});
  assert.equal(noUser.io.code, 1);
  assert.match(noUser.io.stderr.join(""), /pass --user/);

  const port = await closedPort();
  const down = cli({ serviceUrl: `http://127.0.0.1:${port}` });
  await down.program.run(["memory", "stats"], { user: "x" });
  assert.equal(down.io.code, 1);
  assert.match(down.io.stderr.join(""), /unreachable/);
});
