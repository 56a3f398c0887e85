/**
 * Capture hooks: the user and assistant turns of a run (llm_input, llm_output, with
 * agent_end as the fallback) and channel messages (message_received), sent as episodes.
 * Each turn is captured once: `rt.runState` records it and all hooks share its key.
 */
import { safely } from "../client.js";
import type { ResolvedIdentity } from "../identity.js";
import type { HookContext } from "../types.js";
import { type HookEntry, type HookEvent, type HookKit, buildEpisode, runIdOf, turnKey } from "./kit.js";
import { messageText, sha, str, stripInjected, userTextFromPrompt } from "./text.js";

export type CaptureHookName = "llm_input" | "llm_output" | "agent_end" | "message_received";

export function captureHooks(kit: HookKit): Record<CaptureHookName, HookEntry> {
  return {
    llm_input: runCapture(kit, "llm_input", captureLlmInput),
    llm_output: runCapture(kit, "llm_output", captureLlmOutput),
    agent_end: runCapture(kit, "agent_end", captureAgentEnd),
    message_received: {
      handler: (event: HookEvent, ctx: HookContext) =>
        safely(kit.logger, "capture (message_received)", () => captureMessage(kit, event, ctx), undefined),
    },
  };
}

/**
 * Runs started by OpenClaw itself rather than by the user: their prompt is an instruction
 * from the host (heartbeat, cron job), not something the user said, so it is not captured.
 * (Recall still runs for them.)
 */
const SYSTEM_TRIGGERS = new Set(["heartbeat", "cron"]);
const isSystemRun = (ctx: HookContext | undefined): boolean =>
  (typeof ctx?.trigger === "string" && SYSTEM_TRIGGERS.has(ctx.trigger)) || typeof ctx?.jobId === "string";

type CaptureBody = (kit: HookKit, event: HookEvent, ctx: HookContext, id: ResolvedIdentity) => Promise<void>;

/** A model-run capture hook: runs `body` only with autoCapture on, for a user's run, for an identified user. */
function runCapture(kit: HookKit, hook: string, body: CaptureBody): HookEntry {
  return {
    handler: (event: HookEvent, ctx: HookContext) =>
      safely(
        kit.logger,
        `capture (${hook})`,
        async () => {
          if (!kit.config.autoCapture || isSystemRun(ctx)) return;
          const id = kit.identify(hook, ctx, event);
          if (!id) return;
          await body(kit, event, ctx, id);
        },
        undefined,
      ),
  };
}

/** Provider and model of the run, when the event names them. */
function modelMeta(event: HookEvent): Record<string, unknown> {
  return {
    ...(str(event.provider) ? { provider: event.provider } : {}),
    ...(str(event.model) ? { model: event.model } : {}),
  };
}

/** llm_input: the user turn, once per run (the clean request from before_prompt_build if stashed). */
async function captureLlmInput(kit: HookKit, event: HookEvent, ctx: HookContext, id: ResolvedIdentity): Promise<void> {
  const runId = runIdOf(event, ctx);
  if (!runId) return;
  const state = kit.rt.runState(runId);
  if (state.user) return;
  const stashed = kit.rt.userMessageByKey.get(`run:${runId}`) ?? (id.sessionKey ? kit.rt.userMessageByKey.get(`key:${id.sessionKey}`) : undefined);
  const content = stashed ?? userTextFromPrompt(typeof event.prompt === "string" ? event.prompt : "", kit.injectionFor(id, runId));
  if (!content) return;
  state.user = true;
  kit.rt.capture.enqueue(buildEpisode(id, "user", content, turnKey(id, runId, "user", content), { hook: "llm_input", run_id: runId, ...modelMeta(event) }));
  await kit.flushBounded();
}

/** llm_output: the assistant turn, once per run. */
async function captureLlmOutput(kit: HookKit, event: HookEvent, ctx: HookContext, id: ResolvedIdentity): Promise<void> {
  const runId = runIdOf(event, ctx);
  if (!runId) return;
  const state = kit.rt.runState(runId);
  if (state.assistant) return;
  const texts = Array.isArray(event.assistantTexts) ? event.assistantTexts.filter((t): t is string => typeof t === "string") : [];
  const content = texts.join("\n\n").trim() || messageText(event.lastAssistant).trim();
  if (!content) return;
  state.assistant = true;
  await captureAssistant(kit, "llm_output", id, runId, content, modelMeta(event));
}

/** agent_end: fallback capture for runtimes without llm_input/llm_output. */
async function captureAgentEnd(kit: HookKit, event: HookEvent, ctx: HookContext, id: ResolvedIdentity): Promise<void> {
  const runId = runIdOf(event, ctx);
  const state = runId ? kit.rt.runState(runId) : { user: false, assistant: false };
  const messages = Array.isArray(event.messages) ? (event.messages as HookEvent[]) : [];
  const lastOf = (role: string) => lastText(messages, role, kit.injectionFor(id, runId));
  if (!state.user) {
    const stashed = runId ? kit.rt.userMessageByKey.get(`run:${runId}`) : undefined;
    const user = stashed ?? lastOf("user");
    if (user) {
      state.user = true;
      kit.rt.capture.enqueue(buildEpisode(id, "user", user, turnKey(id, runId, "user", user), { hook: "agent_end", ...(runId ? { run_id: runId } : {}) }));
    }
  }
  if (!state.assistant && event.success !== false) {
    const assistant = lastOf("assistant");
    if (assistant) {
      state.assistant = true;
      await captureAssistant(kit, "agent_end", id, runId, assistant, {});
      return;
    }
  }
  await kit.flushBounded();
}

/** Text of the last message with `role` that has any once the injected blocks are removed. */
function lastText(messages: HookEvent[], role: string, injection: string | undefined): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m && m.role === role) {
      const t = userTextFromPrompt(messageText(m.content), injection);
      if (t) return t;
    }
  }
  return "";
}

async function captureAssistant(
  kit: HookKit,
  hook: string,
  id: ResolvedIdentity,
  runId: string | undefined,
  content: string,
  meta: Record<string, unknown>,
): Promise<void> {
  const clean = stripInjected(content, kit.injectionFor(id, runId));
  if (!clean) return;
  const metadata = { hook, ...(runId ? { run_id: runId } : {}), ...meta };
  kit.rt.capture.enqueue(buildEpisode(id, "assistant", clean, turnKey(id, runId, "assistant", clean), metadata, id.agentId));
  await kit.flushBounded();
}

/** message_received: a channel message as a user episode. */
async function captureMessage(kit: HookKit, event: HookEvent, ctx: HookContext): Promise<void> {
  if (!kit.config.autoCapture) return;
  const content = typeof event.content === "string" ? stripInjected(event.content) : "";
  if (!content) return;
  const id = kit.identify("message_received", ctx, event);
  if (!id) return;
  const runId = str(ctx?.runId) ?? str(event.runId);
  const channel = str(ctx?.channelId) ?? "channel";
  const messageId = str(ctx?.messageId) ?? str(event.messageId);
  const key = messageKey(kit, event, ctx, { id, content, runId, channel, messageId });
  if (!key) return;
  const metadata = {
    hook: "message_received",
    channel,
    ...(runId ? { run_id: runId } : {}),
    ...(messageId ? { message_id: messageId } : {}),
    ...(str(ctx?.conversationId) ? { conversation_id: ctx.conversationId } : {}),
    ...(event.threadId !== undefined ? { thread_id: String(event.threadId) } : {}),
  };
  const ep = buildEpisode(id, "user", content, key, metadata, str(event.from));
  if (typeof event.timestamp === "number" && Number.isFinite(event.timestamp)) {
    ep.occurred_at = new Date(event.timestamp).toISOString();
  }
  kit.rt.capture.enqueue(ep);
  await kit.flushBounded();
}

interface ReceivedMessage {
  id: ResolvedIdentity;
  content: string;
  runId: string | undefined;
  channel: string;
  messageId: string | undefined;
}

/** The message's idempotency key; undefined when its run's user turn is already captured. */
function messageKey(kit: HookKit, event: HookEvent, ctx: HookContext, m: ReceivedMessage): string | undefined {
  if (m.runId) {
    // The same key llm_input uses for this run: the service keeps one copy.
    const state = kit.rt.runState(m.runId);
    if (state.user) return undefined;
    state.user = true;
    return turnKey(m.id, m.runId, "user", m.content);
  }
  if (m.messageId) return `openclaw:msg:${m.channel}:${str(ctx?.conversationId) ?? ""}:${m.messageId}`;
  return `openclaw:msg:${m.channel}:${sha(`${String(event.timestamp ?? "")}:${m.content}`)}`;
}
