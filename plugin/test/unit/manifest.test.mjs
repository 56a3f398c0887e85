import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import entry, { HOOK_NAMES, TOOL_NAMES } from "../../dist/index.js";
import { resolveConfig, DEFAULTS } from "../../dist/config.js";
import { startFakeMuma } from "../support/fake-muma.mjs";
import { createMockApi } from "../support/mock-api.mjs";
import { sleep } from "../support/util.mjs";

const root = new URL("../../", import.meta.url);
const manifest = JSON.parse(readFileSync(new URL("openclaw.plugin.json", root), "utf8"));
const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));

const SEED_TOOLS = [
  "memory_write",
  "memory_query",
  "memory_forget",
  "memory_pin",
  "memory_set_visibility",
  "memory_get_context",
  "memory_stats",
  "memory_link",
  "memory_search_agents",
  "memory_consolidate",
  "memory_review",
];

test("manifest: id, kind, activation, tool contract", () => {
  assert.equal(manifest.id, "muma");
  assert.equal(manifest.kind, "memory");
  assert.equal(manifest.activation?.onStartup, true);
  assert.deepEqual([...manifest.contracts.tools].sort(), [...SEED_TOOLS].sort());
  assert.deepEqual([...TOOL_NAMES].sort(), [...SEED_TOOLS].sort());
  assert.deepEqual(manifest.cliCommands.map((c) => c.name), ["memory"]);
});

test("manifest: configSchema keys, defaults, additionalProperties false", () => {
  const s = manifest.configSchema;
  assert.equal(s.type, "object");
  assert.equal(s.additionalProperties, false);
  for (const key of ["serviceUrl", "token", "tenantId", "timeoutMs", "maxTopK", "autoRecall", "autoCapture", "captureToolResults", "defaultUserId"]) {
    assert.ok(s.properties[key], `configSchema has ${key}`);
  }
  assert.equal(s.properties.timeoutMs.default, 150);
  assert.equal(s.properties.maxTopK.default, 8);
  assert.equal(s.properties.autoRecall.default, true);
  assert.equal(s.properties.autoCapture.default, true);
  assert.equal(s.properties.captureToolResults.default, true);
  // The code's defaults agree with the manifest's.
  for (const [key, prop] of Object.entries(s.properties)) {
    if ("default" in prop) assert.equal(DEFAULTS[key], prop.default, `default of ${key}`);
  }
  assert.deepEqual(Object.keys(s.properties).sort(), Object.keys(DEFAULTS).sort());
});

test("package.json: ESM, openclaw.extensions, no runtime dependencies", () => {
  assert.equal(pkg.type, "module");
  assert.deepEqual(pkg.openclaw.extensions, ["./dist/index.js"]);
  assert.equal(pkg.dependencies, undefined, "the plugin has no runtime dependencies");
  assert.ok(pkg.devDependencies.typescript);
  assert.ok(!pkg.devDependencies.openclaw, "openclaw is not a dependency");
});

test("entry: plain definePluginEntry-compatible object", () => {
  assert.equal(entry.id, "muma");
  assert.equal(entry.kind, "memory");
  assert.equal(typeof entry.register, "function");
  assert.equal(typeof entry.name, "string");
  assert.deepEqual(entry.configSchema.jsonSchema, manifest.configSchema);
  assert.equal(entry.configSchema.safeParse({ serviceUrl: "http://x:1" }).success, true);
  assert.equal(entry.configSchema.safeParse({ bogus: 1 }).success, false);
});

test("register: all tools, hooks and the CLI; no connection; safe to call many times", async () => {
  const fake = await startFakeMuma();
  try {
    const apis = [];
    for (const mode of ["full", "discovery", "discovery", "cli-metadata"]) {
      const api = createMockApi({ pluginConfig: { serviceUrl: fake.url, token: fake.token }, registrationMode: mode });
      entry.register(api);
      apis.push(api);
    }
    await sleep(50);
    assert.equal(fake.state.requests.length, 0, "register opens no connection");
    for (const api of apis) {
      assert.deepEqual(api.hookNames(), [...HOOK_NAMES].sort());
      assert.deepEqual(
        api.hookNames(),
        [
          "after_tool_call",
          "agent_end",
          "before_compaction",
          "before_prompt_build",
          "before_reset",
          "gateway_start",
          "gateway_stop",
          "llm_input",
          "llm_output",
          "message_received",
          "session_end",
          "session_start",
        ],
      );
      assert.equal(api.tools.length, 1);
      assert.deepEqual(api.tools[0].opts.names, SEED_TOOLS);
      assert.deepEqual(Object.keys(api.toolsFor({ sessionKey: "agent:main:user:x" })).sort(), [...SEED_TOOLS].sort());
      assert.equal(api.clis.length, 1);
      assert.deepEqual(api.clis[0].opts.descriptors.map((d) => d.name), ["memory"]);
      assert.deepEqual(api.warnings(), []);
    }
    await sleep(20);
    assert.equal(fake.state.requests.length, 0, "building tools opens no connection either");
  } finally {
    await fake.close();
  }
});

test("register: survives a missing or bad config and says so", () => {
  const api = createMockApi({ pluginConfig: { serviceUrl: "ftp://nope", timeoutMs: -5, extra: true } });
  entry.register(api);
  const warnings = api.warnings().map((w) => w.message).join("\n");
  assert.match(warnings, /serviceUrl/);
  assert.match(warnings, /timeoutMs/);
  assert.match(warnings, /unknown key extra/);
  const api2 = createMockApi({ pluginConfig: undefined });
  entry.register(api2);
  assert.equal(api2.hooks.length, HOOK_NAMES.length);
});

test("resolveConfig: defaults and trimming", () => {
  const { config, problems } = resolveConfig({ serviceUrl: "http://h:1/// ", token: " t ", maxTopK: 3 });
  assert.deepEqual(problems, []);
  assert.equal(config.serviceUrl, "http://h:1");
  assert.equal(config.token, "t");
  assert.equal(config.maxTopK, 3);
  assert.equal(config.timeoutMs, 150);
  assert.equal(config.autoRecall, true);
});
