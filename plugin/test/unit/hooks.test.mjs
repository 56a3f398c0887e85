import { test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeMuma } from "../support/fake-muma.mjs";
import { resetSharedState } from "../../dist/runtime.js";
import { agentCtx, closedPort, setup, sleep, waitFor } from "../support/util.mjs";
import { stripInjected, userTextFromPrompt } from "../../dist/hooks.js";

let fake;
before(async () => {
  fake = await startFakeMuma({ token: "tok" });
});
after(() => fake.close());
beforeEach(() => {
  resetSharedState();
  fake.reset();
  fake.state.delays = {};
  fake.state.failures = {};
});

const plugin = (config = {}) => setup({ serviceUrl: fake.url, token: "tok", ...config });
const episodesOf = (user) => fake.state.episodes.filter((e) => e.user_id === user);

async function remember(user, content) {
  await plugin().toolsFor(agentCtx(user)).memory_write.execute("c", { content });
}

// ---------------------------------------------------------------- before_prompt_build

test("before_prompt_build: injects the /v1/context block as prependContext", async () => {
  await remember("u-recall", "My dog is called Biscuit");
  const api = plugin();
  const res = await api.fire("before_prompt_build", { prompt: "What is my dog called?", messages: [] }, agentCtx("u-recall"));
  assert.match(res.prependContext, /^<relevant-memories>[\s\S]*Biscuit[\s\S]*<\/relevant-memories>$/);
  const [req] = fake.requestsTo("/v1/context");
  assert.equal(req.body.user_id, "u-recall");
  assert.equal(req.body.agent_id, "main");
  assert.equal(req.body.session_id, "sid-u-recall-s1");
  assert.equal(req.body.prompt, "What is my dog called?");
  assert.ok(req.body.timeout_ms > 0 && req.body.timeout_ms <= 150, "tells the service its budget");
});

test("before_prompt_build: prefers currentUserMessage and strips an old block from the prompt", async () => {
  const api = plugin();
  await api.fire(
    "before_prompt_build",
    { prompt: "history... <relevant-memories>old</relevant-memories> hi", currentUserMessage: "Where do I live?", messages: [] },
    agentCtx("u-cur"),
  );
  assert.equal(fake.requestsTo("/v1/context")[0].body.prompt, "Where do I live?");
});

test("before_prompt_build: payload fits the service's limits (no empty session id, long prompts cut)", async () => {
  const api = plugin();
  await api.fire("before_prompt_build", { prompt: `${"x ".repeat(10_000)}tail`, messages: [] }, { sessionKey: "user:u-lim" });
  const [req] = fake.requestsTo("/v1/context");
  assert.equal(req.body.session_id, "user:u-lim", "falls back to the session key");
  assert.ok(req.body.prompt.length <= 8000 && req.body.prompt.endsWith("tail"));
  const api2 = setup({ serviceUrl: fake.url, token: "tok", defaultUserId: "solo" });
  await api2.fire("before_prompt_build", { prompt: "hi", messages: [] }, {});
  assert.ok(!("session_id" in fake.requestsTo("/v1/context")[1].body), "no empty session_id");
});

test("long idempotency keys are hashed to fit the service's 256-character limit", async () => {
  const api = plugin();
  await api.fire(
    "message_received",
    { from: "x".repeat(300), content: "hello", messageId: "m".repeat(300) },
    { channelId: "telegram", senderId: "777", conversationId: "c".repeat(100) },
  );
  await waitFor(() => episodesOf("telegram:777").length === 1);
  const [ep] = episodesOf("telegram:777");
  assert.ok(ep.idempotency_key.length <= 256);
  assert.match(ep.idempotency_key, /^openclaw:h:/);
  assert.equal(ep.speaker.length, 128);
});

test("before_prompt_build: nothing to inject → no prependContext", async () => {
  const res = await plugin().fire("before_prompt_build", { prompt: "hello there", messages: [] }, agentCtx("u-empty"));
  assert.equal(res, undefined);
});

test("before_prompt_build: another user never gets the block", async () => {
  await remember("u-owner", "The vault code is 4711");
  const res = await plugin().fire("before_prompt_build", { prompt: "what is the vault code", messages: [] }, agentCtx("u-other"));
  assert.equal(res, undefined);
});

test("before_prompt_build: timeout → returns within ~timeoutMs, no injection, one log line", async () => {
  await remember("u-slow", "Slow memory about pizza");
  fake.state.delays["/v1/context"] = 1000;
  const api = plugin();
  const started = Date.now();
  const res = await api.fire("before_prompt_build", { prompt: "pizza?", messages: [] }, agentCtx("u-slow"));
  const elapsed = Date.now() - started;
  assert.equal(res, undefined);
  assert.ok(elapsed < 150 + 150, `took ${elapsed} ms`);
  const warns = api.warnings();
  assert.equal(warns.length, 1);
  assert.match(warns[0].message, /auto-recall skipped: POST \/v1\/context timed out after 150 ms/);
});

test("before_prompt_build: a read the service cut short is injected and logged as such", async () => {
  await remember("u-partial", "My dog is called Biscuit");
  fake.state.contextTimedOut = true;
  try {
    const api = plugin();
    const res = await api.fire("before_prompt_build", { prompt: "What is my dog called?", messages: [] }, agentCtx("u-partial"));
    assert.match(res.prependContext, /Biscuit/);
    assert.match(api.logs.map((l) => l.message).join("\n"), /cut its search short .*injected what it found in time/);
    const empty = await api.fire("before_prompt_build", { prompt: "zzz unrelated", messages: [] }, agentCtx("u-partial"));
    assert.equal(empty, undefined);
    assert.match(api.logs.map((l) => l.message).join("\n"), /budget ran out .*nothing injected/);
  } finally {
    fake.state.contextTimedOut = false;
  }
});

test("before_prompt_build: custom timeoutMs is honoured", async () => {
  fake.state.delays["/v1/context"] = 1000;
  const api = plugin({ timeoutMs: 60 });
  const started = Date.now();
  await api.fire("before_prompt_build", { prompt: "anything", messages: [] }, agentCtx("u-t60"));
  assert.ok(Date.now() - started < 60 + 120);
  assert.match(api.warnings()[0].message, /timed out after 60 ms/);
});

test("before_prompt_build: outage (connection refused) → immediate, no injection, log line", async () => {
  const port = await closedPort();
  const api = setup({ serviceUrl: `http://127.0.0.1:${port}`, token: "tok" });
  const started = Date.now();
  const res = await api.fire("before_prompt_build", { prompt: "hello", messages: [] }, agentCtx("u-down"));
  assert.equal(res, undefined);
  assert.ok(Date.now() - started < 150 + 150);
  assert.match(api.warnings()[0].message, /auto-recall skipped: .*unreachable.*ECONNREFUSED/);
});

test("before_prompt_build: HTTP 500 → no injection, log line", async () => {
  fake.state.failures["/v1/context"] = 500;
  const api = plugin();
  assert.equal(await api.fire("before_prompt_build", { prompt: "x", messages: [] }, agentCtx("u-500")), undefined);
  assert.match(api.warnings()[0].message, /HTTP 500/);
});

test("before_prompt_build: autoRecall=false or unknown user → no call", async () => {
  await plugin({ autoRecall: false }).fire("before_prompt_build", { prompt: "x", messages: [] }, agentCtx("u-off"));
  await plugin().fire("before_prompt_build", { prompt: "x", messages: [] }, { sessionKey: "agent:main:main", sessionId: "s" });
  assert.equal(fake.requestsTo("/v1/context").length, 0);
});

test("a conversation without an identity says once that it has no memory, and why", async () => {
  const api = plugin();
  for (const hook of ["before_prompt_build", "llm_input"]) {
    await api.fire(hook, { prompt: "x", messages: [] }, { sessionKey: "agent:main:anon-warn", sessionId: "s-anon" });
  }
  const warned = api.warnings().filter((w) => /no memory for session/.test(w.message));
  assert.equal(warned.length, 1, "once per session, not once per hook");
  assert.match(warned[0].message, /not identified .*no defaultUserId.*set defaultUserId/);
  assert.equal(fake.requestsTo("/v1/context").length + fake.requestsTo("/v1/episodes").length, 0);
});

test("before_prompt_build: registered with a host timeout above the plugin's own", () => {
  const api = plugin({ timeoutMs: 200 });
  const hook = api.hooks.find((h) => h.name === "before_prompt_build");
  assert.ok(hook.opts.timeoutMs > 200);
});

// ---------------------------------------------------------------- capture

test("llm_input + llm_output: capture user and assistant turns, strip our block, run idempotency keys", async () => {
  await remember("u-cap", "Lives in Lisbon");
  const api = plugin();
  const ctx = agentCtx("u-cap", "s9", { runId: "run-42" });
  const built = await api.fire("before_prompt_build", { prompt: "Where do I live? Lisbon?", messages: [] }, ctx);
  assert.ok(built.prependContext);
  // What the model actually receives: timestamp + our block + the message.
  await api.fire(
    "llm_input",
    {
      runId: "run-42",
      sessionId: ctx.sessionId,
      provider: "fake",
      model: "fake-1",
      prompt: `[Mon 2026-09-07 10:00 UTC] ${built.prependContext}\n\nWhere do I live? Lisbon?`,
      historyMessages: [],
      imagesCount: 0,
    },
    ctx,
  );
  // a second model call in the same run (after a tool call) does not capture again
  await api.fire("llm_input", { runId: "run-42", sessionId: ctx.sessionId, prompt: "again", historyMessages: [] }, ctx);
  await api.fire("llm_output", { runId: "run-42", sessionId: ctx.sessionId, assistantTexts: ["You live in Lisbon."] }, ctx);
  await waitFor(() => episodesOf("u-cap").length === 2, 2000, "2 episodes");
  const [user, assistant] = episodesOf("u-cap");
  assert.equal(user.role, "user");
  assert.equal(user.content, "Where do I live? Lisbon?");
  assert.ok(!user.content.includes("relevant-memories"));
  assert.equal(user.idempotency_key, "openclaw:run:run-42:user");
  assert.equal(user.session_id, ctx.sessionId);
  assert.equal(user.agent_id, "main");
  assert.equal(user.metadata.source, "openclaw");
  assert.ok(user.occurred_at);
  assert.equal(assistant.role, "assistant");
  assert.equal(assistant.content, "You live in Lisbon.");
  assert.equal(assistant.idempotency_key, "openclaw:run:run-42:assistant");
});

test("llm_input without a prior before_prompt_build strips the block from the prompt itself", async () => {
  const api = plugin();
  const ctx = agentCtx("u-strip", "s1", { runId: "run-strip" });
  await api.fire(
    "llm_input",
    {
      runId: "run-strip",
      sessionId: ctx.sessionId,
      prompt: "[Mon 2026-11-30 07:52 UTC] <relevant-memories>\n- x\n</relevant-memories>\n\nHello!",
      historyMessages: [],
    },
    ctx,
  );
  await waitFor(() => episodesOf("u-strip").length === 1);
  assert.equal(episodesOf("u-strip")[0].content, "Hello!");
});

test("agent_end: captures both turns when llm_input/llm_output did not fire; llm_output after it adds nothing", async () => {
  const api = plugin();
  const ctx = agentCtx("u-end", "s1", { runId: "run-end" });
  await api.fire(
    "agent_end",
    {
      runId: "run-end",
      success: true,
      messages: [
        { role: "user", content: "old question" },
        { role: "assistant", content: [{ type: "text", text: "old answer" }] },
        { role: "user", content: [{ type: "text", text: "<relevant-memories>m</relevant-memories>\n\nI moved to Porto." }] },
        { role: "assistant", content: [{ type: "text", text: "Noted: Porto." }] },
      ],
    },
    ctx,
  );
  await api.fire("llm_output", { runId: "run-end", assistantTexts: ["Noted: Porto."] }, ctx);
  await sleep(30);
  const eps = episodesOf("u-end");
  assert.deepEqual(
    eps.map((e) => [e.role, e.content, e.idempotency_key]),
    [
      ["user", "I moved to Porto.", "openclaw:run:run-end:user"],
      ["assistant", "Noted: Porto.", "openclaw:run:run-end:assistant"],
    ],
  );
  assert.equal(fake.requestsTo("/v1/episodes").length, 1, "one batch for both turns");
});

test("autoCapture=false → no episodes", async () => {
  const api = plugin({ autoCapture: false });
  const ctx = agentCtx("u-nocap", "s1", { runId: "r" });
  await api.fire("llm_input", { runId: "r", prompt: "hi", historyMessages: [] }, ctx);
  await api.fire("llm_output", { runId: "r", assistantTexts: ["hello"] }, ctx);
  await api.fire("agent_end", { runId: "r", success: true, messages: [{ role: "user", content: "hi" }] }, ctx);
  await api.fire("message_received", { from: "x", content: "hi" }, { channelId: "telegram", senderId: "1" });
  await sleep(30);
  assert.equal(fake.requestsTo("/v1/episodes").length, 0);
});

test("heartbeat and cron runs are not captured (their prompt is the host's, not the user's)", async () => {
  const api = plugin();
  for (const extra of [{ trigger: "heartbeat" }, { trigger: "cron", jobId: "job-1" }]) {
    const ctx = agentCtx("u-sys", "s1", { runId: `run-${extra.trigger}`, ...extra });
    await api.fire("llm_input", { runId: ctx.runId, prompt: "Check the inbox", historyMessages: [] }, ctx);
    await api.fire("agent_end", { runId: ctx.runId, success: true, messages: [{ role: "user", content: "Check the inbox" }] }, ctx);
    await api.fire("llm_output", { runId: ctx.runId, assistantTexts: ["Done"] }, ctx);
  }
  await sleep(30);
  assert.equal(fake.requestsTo("/v1/episodes").length, 0);
});

test("with autoRecall=false the captured user turn is still the clean request", async () => {
  const api = plugin({ autoRecall: false });
  const ctx = agentCtx("u-norecall", "s1", { runId: "run-nr" });
  assert.equal(await api.fire("before_prompt_build", { prompt: "I like jazz", messages: [] }, ctx), undefined);
  await api.fire("llm_input", { runId: "run-nr", prompt: "[Mon 2026-11-30 07:52 UTC] I like jazz\n\nRuntime: x", historyMessages: [] }, ctx);
  await waitFor(() => episodesOf("u-norecall").length === 1);
  assert.equal(episodesOf("u-norecall")[0].content, "I like jazz");
  assert.equal(fake.requestsTo("/v1/context").length, 0);
});

test("message_received: channel messages become episodes under the channel-prefixed sender", async () => {
  const api = plugin();
  await api.fire(
    "message_received",
    { from: "Ana", content: "Remind me: dentist on Friday", timestamp: Date.parse("2026-09-07T08:00:00Z"), messageId: "m1" },
    { channelId: "telegram", senderId: "555", conversationId: "chat-1", sessionKey: "agent:main:telegram:dm:555" },
  );
  await waitFor(() => episodesOf("telegram:555").length === 1);
  const [ep] = episodesOf("telegram:555");
  assert.equal(ep.role, "user");
  assert.equal(ep.speaker, "Ana");
  assert.equal(ep.content, "Remind me: dentist on Friday");
  assert.equal(ep.occurred_at, "2026-09-07T08:00:00.000Z");
  assert.equal(ep.idempotency_key, "openclaw:msg:telegram:chat-1:m1");
  assert.equal(ep.metadata.channel, "telegram");
});

test("message_received with a runId shares the run's user key with llm_input (one episode)", async () => {
  const api = plugin();
  const msgCtx = { channelId: "slack", senderId: "U9", runId: "run-msg", sessionKey: "agent:main:slack:dm:u9" };
  await api.fire("message_received", { from: "U9", content: "hello from slack" }, msgCtx);
  await api.fire(
    "llm_input",
    { runId: "run-msg", prompt: "hello from slack", historyMessages: [] },
    { runId: "run-msg", sessionKey: "agent:main:slack:dm:u9", senderId: "U9", channel: "slack" },
  );
  await sleep(50);
  const eps = episodesOf("slack:U9");
  assert.equal(eps.length, 1);
  assert.equal(eps[0].idempotency_key, "openclaw:run:run-msg:user");
});

test("captures the service never acknowledged outlive the process (the spool)", async () => {
  const spoolDir = mkdtempSync(join(tmpdir(), "muma-spool-"));
  try {
    fake.state.failures["/v1/episodes"] = 503;
    const ctx = agentCtx("u-spool", "s1", { runId: "run-sp1" });
    await plugin({ spoolDir }).fire("llm_input", { runId: "run-sp1", prompt: "my locker code is 7319", historyMessages: [] }, ctx);
    await waitFor(() => readdirSync(spoolDir).some((n) => n.endsWith(".json")), 2000, "a spool file");
    resetSharedState(); // a new process: nothing of the first is left in memory
    fake.state.failures = {};
    const next = agentCtx("u-spool", "s2", { runId: "run-sp2" });
    await plugin({ spoolDir }).fire("llm_input", { runId: "run-sp2", prompt: "and my gym is Zuiderpark", historyMessages: [] }, next);
    await waitFor(() => episodesOf("u-spool").length === 2, 2000, "both turns delivered");
    assert.deepEqual(episodesOf("u-spool").map((e) => e.content), ["my locker code is 7319", "and my gym is Zuiderpark"]);
    assert.deepEqual(readdirSync(spoolDir), [], "the spool is emptied once delivered");
  } finally {
    rmSync(spoolDir, { recursive: true, force: true });
  }
});

test("capture during an outage is kept and delivered on the next flush", async () => {
  fake.state.failures["/v1/episodes"] = 503;
  const api = plugin();
  const ctx = agentCtx("u-retry", "s1", { runId: "run-r1" });
  await api.fire("llm_input", { runId: "run-r1", prompt: "first", historyMessages: [] }, ctx);
  await sleep(30);
  assert.equal(episodesOf("u-retry").length, 0);
  assert.match(api.warnings()[0].message, /capture failed, 1 episode\(s\) kept for retry/);
  fake.state.failures = {};
  await api.fire("llm_output", { runId: "run-r1", assistantTexts: ["second"] }, ctx);
  await waitFor(() => episodesOf("u-retry").length === 2);
  assert.deepEqual(episodesOf("u-retry").map((e) => e.content), ["first", "second"]);
});

test("capture hooks never wait longer than timeoutMs on a hanging service", async () => {
  fake.state.delays["/v1/episodes"] = 1000;
  const api = plugin({ timeoutMs: 100 });
  const ctx = agentCtx("u-hang", "s1", { runId: "run-h" });
  for (const [name, event] of [
    ["llm_input", { runId: "run-h", prompt: "x", historyMessages: [] }],
    ["llm_output", { runId: "run-h", assistantTexts: ["y"] }],
    ["agent_end", { runId: "run-h2", success: true, messages: [{ role: "user", content: "z" }] }],
    ["message_received", { from: "a", content: "b", messageId: "m" }],
  ]) {
    const started = Date.now();
    await api.fire(name, event, name === "message_received" ? { channelId: "telegram", senderId: "1" } : ctx);
    assert.ok(Date.now() - started < 100 + 150, `${name} took ${Date.now() - started} ms`);
  }
});

test("capture hooks with the service down return at once and never throw", async () => {
  const port = await closedPort();
  const api = setup({ serviceUrl: `http://127.0.0.1:${port}`, token: "tok" });
  const ctx = agentCtx("u-x", "s1", { runId: "run-x" });
  const started = Date.now();
  await api.fire("session_start", { sessionId: ctx.sessionId, sessionKey: ctx.sessionKey }, ctx);
  await api.fire("llm_input", { runId: "run-x", prompt: "x", historyMessages: [] }, ctx);
  await api.fire("llm_output", { runId: "run-x", assistantTexts: ["y"] }, ctx);
  await api.fire("agent_end", { runId: "run-x", success: true, messages: [] }, ctx);
  await api.fire("message_received", { from: "a", content: "b" }, { channelId: "telegram", senderId: "1" });
  await api.fire("after_tool_call", { toolName: "exec", params: {}, result: "ok" }, { ...ctx, toolName: "exec" });
  await api.fire("before_compaction", { messageCount: 10 }, ctx);
  await api.fire("before_reset", { reason: "reset" }, ctx);
  await api.fire("session_end", { sessionId: ctx.sessionId, messageCount: 3 }, ctx);
  await api.fire("gateway_stop", { reason: "test" }, {});
  assert.ok(Date.now() - started < 2000);
});

// ---------------------------------------------------------------- L1 working memory

test("after_tool_call: tool results go to the session's working memory", async () => {
  const api = plugin();
  const ctx = { agentId: "main", sessionKey: "agent:main:user:u-tool", sessionId: "sid-tool", runId: "r", toolName: "web_fetch", toolCallId: "tc1" };
  await api.fire(
    "after_tool_call",
    { toolName: "web_fetch", params: { url: "https://example.org" }, result: { content: [{ type: "text", text: "Example Domain" }] }, durationMs: 12 },
    ctx,
  );
  const [req] = fake.requestsTo("/v1/sessions/sid-tool/working", "PUT");
  assert.equal(req.body.user_id, "u-tool");
  assert.equal(req.body.agent_id, "main");
  assert.equal(req.body.items.length, 1);
  assert.match(req.body.items[0].content, /^web_fetch\(\{"url":"https:\/\/example.org"\}\) → Example Domain$/);
  assert.equal(req.body.items[0].metadata.tool, "web_fetch");
  assert.equal(req.body.items[0].role, "tool");
  assert.equal(req.body.items[0].speaker, "web_fetch");
  assert.equal(req.body.items[0].metadata.tool_call_id, "tc1");
  assert.equal(req.body.items[0].metadata.url, "https://example.org"); // the memory's origin

  await api.fire("after_tool_call", { toolName: "exec", params: { cmd: "false" }, error: "exit 1" }, { ...ctx, toolName: "exec" });
  const second = fake.requestsTo("/v1/sessions/sid-tool/working", "PUT")[1];
  assert.match(second.body.items[0].content, /error: exit 1/);
  assert.equal(second.body.items[0].metadata.error, true);
  assert.equal(second.body.items[0].metadata.url, undefined);

  await api.fire("after_tool_call", { toolName: "read", params: { path: "docs/a.md" }, result: "text" }, { ...ctx, toolName: "read" });
  const third = fake.requestsTo("/v1/sessions/sid-tool/working", "PUT")[2];
  assert.equal(third.body.items[0].metadata.file_path, "docs/a.md");
});

test("after_tool_call: skips our own memory tools and honours captureToolResults=false", async () => {
  const ctx = { agentId: "main", sessionKey: "agent:main:user:u-tool2", sessionId: "sid-tool2" };
  await plugin().fire("after_tool_call", { toolName: "memory_query", params: { query: "x" }, result: "r" }, ctx);
  await plugin({ captureToolResults: false }).fire("after_tool_call", { toolName: "exec", params: {}, result: "r" }, ctx);
  assert.equal(fake.requestsTo("/v1/sessions/sid-tool2/working").length, 0);
});

test("after_tool_call: long results are truncated", async () => {
  const ctx = { agentId: "main", sessionKey: "agent:main:user:u-long", sessionId: "sid-long" };
  await plugin().fire("after_tool_call", { toolName: "read", params: {}, result: "x".repeat(10_000) }, ctx);
  const [req] = fake.requestsTo("/v1/sessions/sid-long/working");
  assert.ok(req.body.items[0].content.length <= 2000);
});

test("before_compaction / before_reset / session_end promote L1 with their reason", async () => {
  const api = plugin();
  const ctx = { agentId: "main", sessionKey: "agent:main:user:u-promo", sessionId: "sid-promo" };
  await api.fire("after_tool_call", { toolName: "exec", params: {}, result: "42" }, ctx);
  await api.fire("before_compaction", { messageCount: 40, compactingCount: 30 }, ctx);
  await api.fire("before_reset", { reason: "new" }, ctx);
  // session hooks carry only agentId/sessionId/sessionKey
  await api.fire("session_end", { sessionId: "sid-promo", sessionKey: ctx.sessionKey, messageCount: 4, reason: "idle" }, ctx);
  const reasons = fake.requestsTo("/v1/sessions/sid-promo/promote").map((r) => [r.body.reason, r.body.user_id, r.body.agent_id]);
  assert.deepEqual(reasons, [
    ["compaction", "u-promo", "main"],
    ["reset", "u-promo", "main"],
    ["end", "u-promo", "main"],
  ]);
  assert.equal(fake.state.promotions[0].count, 1);
});

test("session_end for a sender-identified session uses the user remembered at session start", async () => {
  const api = plugin();
  await api.fire("llm_input", { runId: "r-s", prompt: "hey", historyMessages: [] }, {
    runId: "r-s",
    sessionKey: "agent:main:discord:dm:77",
    sessionId: "sid-discord",
    senderId: "77",
    channel: "discord",
  });
  await api.fire("session_end", { sessionId: "sid-discord", messageCount: 2 }, { sessionId: "sid-discord", agentId: "main" });
  const [req] = fake.requestsTo("/v1/sessions/sid-discord/promote");
  assert.equal(req.body.user_id, "discord:77");
  assert.equal(req.body.reason, "end");
});

test("promotion on a hanging service returns within ~timeoutMs", async () => {
  fake.state.delays["/v1/sessions"] = 1000;
  const api = plugin({ timeoutMs: 80 });
  const ctx = { agentId: "main", sessionKey: "agent:main:user:u-ph", sessionId: "sid-ph" };
  for (const name of ["before_compaction", "before_reset", "session_end"]) {
    const started = Date.now();
    await api.fire(name, { sessionId: "sid-ph", messageCount: 1 }, ctx);
    assert.ok(Date.now() - started < 80 + 150, `${name} took ${Date.now() - started}`);
  }
});

// ---------------------------------------------------------------- gateway lifecycle

test("gateway_start: logs that the service is reachable", async () => {
  const api = plugin();
  await api.fire("gateway_start", { port: 18789 }, {});
  assert.ok(api.logs.some((l) => l.level === "info" && /MUMA service reachable at http:\/\/127\.0\.0\.1:\d+ \(status ok\)/.test(l.message)));
  assert.equal(fake.requestsTo("/healthz")[0].headers.authorization, undefined, "healthz needs no token");
});

test("gateway_start: logs clearly when the service is unreachable, and does not throw", async () => {
  const port = await closedPort();
  const api = setup({ serviceUrl: `http://127.0.0.1:${port}`, token: "tok" });
  await api.fire("gateway_start", { port: 18789 }, {});
  const warn = api.warnings().map((w) => w.message).join("\n");
  assert.match(warn, /MUMA service UNREACHABLE at http:\/\/127\.0\.0\.1:\d+.*ECONNREFUSED.*Turns continue without memory/);
});

test("gateway_start: a 503 from /healthz is logged as unhealthy", async () => {
  fake.state.failures["/healthz"] = 503;
  const api = plugin();
  await api.fire("gateway_start", { port: 1 }, {});
  assert.match(api.warnings()[0].message, /is UNHEALTHY: GET \/healthz failed: HTTP 503/);
});

test("gateway_start: warns when no token is configured", async () => {
  const api = setup({ serviceUrl: fake.url });
  await api.fire("gateway_start", { port: 1 }, {});
  assert.match(api.warnings()[0].message, /token is not configured/);
});

test("an unset ${MUMA_TOKEN} is named as such, never sent as a token", async () => {
  const api = setup({ serviceUrl: fake.url, token: "${MUMA_TOKEN}" });
  await api.fire("gateway_start", { port: 1 }, {});
  assert.match(api.warnings()[0].message, /token is \$\{MUMA_TOKEN\} and MUMA_TOKEN is not set in the gateway's environment/);
  await assert.rejects(api.toolsFor(agentCtx("u-env")).memory_query.execute("c", { query: "dog" }), /MUMA_TOKEN is not set/);
  assert.equal(fake.requestsTo("/v1/search").length, 0, "nothing sent with the placeholder");
});

test("gateway_stop: flushes episodes that could not be sent earlier", async () => {
  fake.state.failures["/v1/episodes"] = 503;
  const api = plugin();
  const ctx = agentCtx("u-stop", "s1", { runId: "run-stop" });
  await api.fire("llm_input", { runId: "run-stop", prompt: "keep me", historyMessages: [] }, ctx);
  await sleep(30);
  fake.state.failures = {};
  await api.fire("gateway_stop", { reason: "shutdown" }, {});
  assert.deepEqual(episodesOf("u-stop").map((e) => e.content), ["keep me"]);
  assert.ok(api.logs.some((l) => /flushed 1 captured episode/.test(l.message)));
});

test("state is shared across registrations (OpenClaw registers the plugin several times)", async () => {
  fake.state.failures["/v1/episodes"] = 503;
  const first = plugin(); // e.g. the registration whose hooks ran the turn
  const second = plugin(); // e.g. the one whose gateway_stop runs at shutdown
  const ctx = agentCtx("u-shared", "s1", { runId: "run-shared" });
  await first.fire("before_prompt_build", { prompt: "hello shared", messages: [] }, ctx);
  await first.fire("llm_input", { runId: "run-shared", prompt: "hello shared", historyMessages: [] }, ctx);
  await sleep(30);
  fake.state.failures = {};
  // the other registration does not capture the same run twice ...
  await second.fire("llm_input", { runId: "run-shared", prompt: "hello shared", historyMessages: [] }, ctx);
  // ... and flushes what the first one queued
  await second.fire("gateway_stop", { reason: "shutdown" }, {});
  assert.deepEqual(episodesOf("u-shared").map((e) => e.content), ["hello shared"]);
  // a different config is a different state
  const other = plugin({ timeoutMs: 999 });
  await other.fire("gateway_stop", {}, {});
  assert.ok(!other.logs.some((l) => /flushed/.test(l.message)));
});

test("session_start: records the session owner without calling the service", async () => {
  const api = plugin();
  await api.fire("session_start", { sessionId: "sid-new", sessionKey: "agent:main:user:u-new" }, { sessionId: "sid-new", sessionKey: "agent:main:user:u-new", agentId: "main" });
  assert.equal(fake.state.requests.length, 0);
  // a later hook that only has the session id still knows the user
  await api.fire("before_reset", {}, { sessionId: "sid-new", agentId: "main" });
  assert.equal(fake.requestsTo("/v1/sessions/sid-new/promote")[0].body.user_id, "u-new");
});

test("a hook never throws, even with a broken event", async () => {
  const api = plugin();
  for (const name of api.hookNames()) {
    await api.fire(name, null, null);
    await api.fire(name, { messages: "nope", assistantTexts: 5, prompt: 42 }, { sessionKey: 7 });
  }
});

test("stripInjected", () => {
  assert.equal(stripInjected("<relevant-memories>\n- a\n</relevant-memories>\n\nHi"), "Hi");
  assert.equal(stripInjected("A <relevant-memories source='x'>b</relevant-memories> C"), "A  C");
  assert.equal(stripInjected("EXACT BLOCK\n\nHi", "EXACT BLOCK"), "Hi");
  assert.equal(stripInjected("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nstuff\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"), "");
});

test("userTextFromPrompt removes OpenClaw's timestamp envelope and our block", () => {
  assert.equal(userTextFromPrompt("[Mon 2026-11-30 07:52 UTC] What is my dog called?"), "What is my dog called?");
  assert.equal(userTextFromPrompt("[Mon 2026-11-30 07:52 UTC] <relevant-memories>\n- a\n</relevant-memories>\n\nHi"), "Hi");
  assert.equal(userTextFromPrompt("[not a timestamp] hi"), "[not a timestamp] hi");
});
