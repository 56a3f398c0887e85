/**
 * Hook handlers. Rules every handler follows:
 *
 * - It never throws into OpenClaw: all work goes through `safely()`.
 * - It never waits on MUMA longer than `timeoutMs` (default 150 ms): the recall request
 *   itself is aborted at `timeoutMs`; capture/promotion requests may continue in the
 *   background (bounded) after the handler has returned.
 * - It does nothing when the user cannot be identified (see identity.ts).
 */
import { createHash } from "node:crypto";
import { type EpisodeIn, type Identity, MumaError, type WorkingItem, describeError, safely, withDeadline } from "./client.js";
import { hookIdentityInput, type ResolvedIdentity } from "./identity.js";
import { CAPTURE_REQUEST_TIMEOUT_MS, LIFECYCLE_TIMEOUT_MS, MAX_WORKING_ITEM_CHARS, type Runtime, trimMap } from "./runtime.js";
import { TOOL_NAMES } from "./tools.js";
import type { HookContext, HookHandler, HookOptions } from "./types.js";

export const HOOK_NAMES = [
  "gateway_start",
  "session_start",
  "before_prompt_build",
  "llm_input",
  "llm_output",
  "agent_end",
  "message_received",
  "after_tool_call",
  "before_compaction",
  "before_reset",
  "session_end",
  "gateway_stop",
] as const;

export type HookName = (typeof HOOK_NAMES)[number];

/** The block /v1/context returns; removed from anything we capture. */
const MEMORY_BLOCK_RE = /<relevant-memories\b[^>]*>[\s\S]*?<\/relevant-memories>/gi;
/** OpenClaw's own internal-context user message (not something the user said). */
const OPENCLAW_INTERNAL_RE = /<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>[\s\S]*?(?:<<<END_OPENCLAW_INTERNAL_CONTEXT>>>|$)/g;

/** Remove our injected memory block (the exact one, then any) and OpenClaw's internal block. */
export function stripInjected(text: string, exact?: string): string {
  let out = text;
  if (exact && exact.trim()) out = out.split(exact).join("");
  out = out.replace(MEMORY_BLOCK_RE, "").replace(OPENCLAW_INTERNAL_RE, "");
  return out.replace(/\n{3,}/g, "\n\n").trim();
}

/** OpenClaw's timestamp envelope in front of a prompt: `[Mon 2026-11-30 07:52 UTC] `. */
const TIMESTAMP_ENVELOPE_RE = /^\[[A-Z][a-z]{2} \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?(?: [A-Za-z0-9+:\/_-]+)?\]\s*/;

/** The user's words from llm_input's prompt: our block and OpenClaw's envelope removed. */
export function userTextFromPrompt(prompt: string, exact?: string): string {
  return stripInjected(stripInjected(prompt, exact).replace(TIMESTAMP_ENVELOPE_RE, ""));
}

/** Plain text of an agent message content (string or content parts). */
export function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        if (typeof part === "string") return part;
        if (part && typeof part === "object" && (part as { type?: unknown }).type === "text") {
          const t = (part as { text?: unknown }).text;
          return typeof t === "string" ? t : "";
        }
        return "";
      })
      .filter(Boolean)
      .join("\n");
  }
  if (content && typeof content === "object") {
    const c = content as { content?: unknown; text?: unknown };
    if (typeof c.text === "string") return c.text;
    if (c.content !== undefined) return messageText(c.content);
  }
  return "";
}

function sha(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 24);
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

/**
 * Runs started by OpenClaw itself rather than by the user: their prompt is an instruction
 * from the host (heartbeat, cron job), not something the user said, so it is not captured.
 * (Recall still runs for them.)
 */
const SYSTEM_TRIGGERS = new Set(["heartbeat", "cron"]);
const isSystemRun = (ctx: HookContext | undefined): boolean =>
  (typeof ctx?.trigger === "string" && SYSTEM_TRIGGERS.has(ctx.trigger)) || typeof ctx?.jobId === "string";

type Register = (name: HookName, handler: HookHandler, opts?: HookOptions) => void;

export function registerHooks(rt: Runtime, on: Register): void {
  const { config, client, logger, sessionIdByKey, userMessageByKey } = rt;
  const hookBudget = config.timeoutMs;

  const bounded = <T>(work: Promise<T>, fallback: T, ms = hookBudget): Promise<T> => withDeadline(work, ms, fallback);

  const noteSession = (ctx: HookContext | undefined, event?: Record<string, unknown>) => {
    const key = str(ctx?.sessionKey) ?? str(event?.sessionKey);
    const id = str(ctx?.sessionId) ?? str(event?.sessionId);
    if (key && id) {
      sessionIdByKey.delete(key);
      sessionIdByKey.set(key, id);
      trimMap(sessionIdByKey);
      rt.identity.link(key, id);
    }
  };

  const identify = (hook: string, ctx: HookContext | undefined, event?: Record<string, unknown>): ResolvedIdentity | undefined => {
    noteSession(ctx, event);
    const input = hookIdentityInput(ctx as Record<string, unknown> | undefined, event);
    if (!input.sessionId && input.sessionKey) input.sessionId = sessionIdByKey.get(input.sessionKey);
    const id = rt.identity.resolve(input);
    if (!id) logger.debug?.(`[muma] ${hook}: user not identified (session ${input.sessionKey ?? input.sessionId ?? "?"}); skipped`);
    return id;
  };

  const injectionFor = (id: ResolvedIdentity, runId?: string): string | undefined =>
    (runId ? rt.injected.get(`run:${runId}`) : undefined) ??
    (id.sessionKey ? rt.injected.get(`key:${id.sessionKey}`) : undefined) ??
    (id.sessionId ? rt.injected.get(`sid:${id.sessionId}`) : undefined);

  const episode = (
    id: ResolvedIdentity,
    role: EpisodeIn["role"],
    content: string,
    key: string,
    metadata: Record<string, unknown>,
    speaker?: string,
  ): EpisodeIn => {
    const ep: EpisodeIn = {
      user_id: id.userId,
      agent_id: id.agentId,
      session_id: id.sessionId ?? id.sessionKey ?? "unknown",
      role,
      content,
      occurred_at: new Date().toISOString(),
      metadata: { source: "openclaw", ...(id.sessionKey ? { session_key: id.sessionKey } : {}), ...metadata },
      // The service accepts keys up to 256 characters.
      idempotency_key: key.length <= 200 ? key : `openclaw:h:${sha(key)}`,
    };
    if (speaker) ep.speaker = speaker.slice(0, 128);
    return ep;
  };

  /** Kick off a flush; wait at most the hook budget. */
  const flushBounded = (): Promise<void> => bounded(rt.capture.flush(), undefined);

  const requireSession = (id: ResolvedIdentity): (Identity & { sessionId: string }) | undefined => {
    const sessionId = id.sessionId ?? id.sessionKey;
    return sessionId ? { userId: id.userId, agentId: id.agentId, sessionId } : undefined;
  };

  const promote = (hook: string, ctx: HookContext, event: Record<string, unknown>, reason: "compaction" | "reset" | "end") =>
    safely(
      logger,
      `${hook} (promote L1)`,
      async () => {
        const id = identify(hook, ctx, event);
        if (!id) return;
        const session = requireSession(id);
        if (!session) return;
        const work = (async () => {
          await rt.capture.flush();
          await client.promote(session, reason, { timeoutMs: CAPTURE_REQUEST_TIMEOUT_MS });
          logger.debug?.(`[muma] ${hook}: promoted working memory of session ${session.sessionId} (${reason})`);
        })().catch((err: unknown) => logger.warn(`[muma] ${hook}: promote failed: ${describeError(err)}`));
        await bounded(work, undefined);
      },
      undefined,
    );

  // --- gateway_start: check the service, log clearly ----------------------------------
  on("gateway_start", () =>
    safely(
      logger,
      "gateway_start",
      async () => {
        if (!config.token) {
          logger.warn(
            `[muma] no token configured (plugins.entries.muma.config.token): memory calls to ${config.serviceUrl} will fail until one is set`,
          );
        }
        try {
          const health = await client.health(LIFECYCLE_TIMEOUT_MS);
          logger.info(`[muma] MUMA service reachable at ${config.serviceUrl} (status ${String(health?.status ?? "ok")})`);
        } catch (err) {
          const unhealthy = err instanceof MumaError && err.kind === "http";
          logger.warn(
            unhealthy
              ? `[muma] MUMA service at ${config.serviceUrl} is UNHEALTHY: ${describeError(err)}. Turns continue; memory may be degraded.`
              : `[muma] MUMA service UNREACHABLE at ${config.serviceUrl}: ${describeError(err)}. Turns continue without memory until it is back.`,
          );
        }
      },
      undefined,
    ),
  );

  // --- session_start: remember who owns the session ------------------------------------
  on("session_start", (event: Record<string, unknown>, ctx: HookContext) => {
    try {
      const id = identify("session_start", ctx, event);
      if (id) logger.debug?.(`[muma] session ${id.sessionId ?? id.sessionKey} started for user ${id.userId} (${id.userSource})`);
    } catch (err) {
      logger.warn(`[muma] session_start: ${describeError(err)}`);
    }
  });

  // --- before_prompt_build: auto-recall ------------------------------------------------
  on(
    "before_prompt_build",
    (event: Record<string, unknown>, ctx: HookContext) =>
      safely(
        logger,
        "auto-recall skipped",
        async () => {
          const id = identify("before_prompt_build", ctx, event);
          if (!id) return undefined;
          const current = typeof event.currentUserMessage === "string" ? event.currentUserMessage : undefined;
          const prompt = stripInjected(current ?? (typeof event.prompt === "string" ? event.prompt : ""));
          const runId = str(ctx?.runId);
          const keys = [runId ? `run:${runId}` : undefined, id.sessionKey ? `key:${id.sessionKey}` : undefined];
          // Remember the clean request for capture (llm_input's prompt carries envelopes).
          if (prompt) for (const k of keys) if (k) userMessageByKey.set(k, prompt);
          trimMap(userMessageByKey);
          if (!config.autoRecall || !prompt) return undefined;
          const started = Date.now();
          const res = await client.context(id, prompt, {
            timeoutMs: hookBudget,
            serverTimeoutMs: Math.max(10, Math.floor(hookBudget * 0.8)),
          });
          const block = typeof res?.context === "string" ? res.context.trim() : "";
          if (res?.timed_out) logger.info(`[muma] auto-recall: service hit its ${hookBudget} ms budget; nothing injected`);
          if (!block) return undefined;
          rt.rememberInjection(
            [...keys, id.sessionId ? `sid:${id.sessionId}` : undefined],
            block,
          );
          logger.debug?.(`[muma] auto-recall: injected ${block.length} chars in ${Date.now() - started} ms for ${id.userId}`);
          return { prependContext: block };
        },
        undefined,
      ),
    { timeoutMs: hookBudget + 1000 },
  );

  // --- llm_input: capture the user turn (once per run) ---------------------------------
  on("llm_input", (event: Record<string, unknown>, ctx: HookContext) =>
    safely(
      logger,
      "capture (llm_input)",
      async () => {
        if (!config.autoCapture || isSystemRun(ctx)) return;
        const id = identify("llm_input", ctx, event);
        if (!id) return;
        const runId = str(event.runId) ?? str(ctx?.runId);
        if (!runId) return;
        const state = rt.runState(runId);
        if (state.user) return;
        const stashed = userMessageByKey.get(`run:${runId}`) ?? (id.sessionKey ? userMessageByKey.get(`key:${id.sessionKey}`) : undefined);
        const content = stashed ?? userTextFromPrompt(typeof event.prompt === "string" ? event.prompt : "", injectionFor(id, runId));
        if (!content) return;
        state.user = true;
        rt.capture.enqueue(
          episode(id, "user", content, `openclaw:run:${runId}:user`, {
            hook: "llm_input",
            run_id: runId,
            ...(str(event.provider) ? { provider: event.provider } : {}),
            ...(str(event.model) ? { model: event.model } : {}),
          }),
        );
        await flushBounded();
      },
      undefined,
    ),
  );

  const captureAssistant = async (hook: string, id: ResolvedIdentity, runId: string | undefined, content: string, meta: Record<string, unknown>) => {
    const clean = stripInjected(content, injectionFor(id, runId));
    if (!clean) return;
    const key = runId ? `openclaw:run:${runId}:assistant` : `openclaw:session:${id.sessionId ?? id.sessionKey}:assistant:${sha(clean)}`;
    rt.capture.enqueue(episode(id, "assistant", clean, key, { hook, ...(runId ? { run_id: runId } : {}), ...meta }, id.agentId));
    await flushBounded();
  };

  // --- llm_output: capture the assistant turn ------------------------------------------
  on("llm_output", (event: Record<string, unknown>, ctx: HookContext) =>
    safely(
      logger,
      "capture (llm_output)",
      async () => {
        if (!config.autoCapture || isSystemRun(ctx)) return;
        const id = identify("llm_output", ctx, event);
        if (!id) return;
        const runId = str(event.runId) ?? str(ctx?.runId);
        if (runId) {
          const state = rt.runState(runId);
          if (state.assistant) return;
          const texts = Array.isArray(event.assistantTexts) ? event.assistantTexts.filter((t): t is string => typeof t === "string") : [];
          const content = texts.join("\n\n").trim() || messageText(event.lastAssistant).trim();
          if (!content) return;
          state.assistant = true;
          await captureAssistant("llm_output", id, runId, content, {
            ...(str(event.provider) ? { provider: event.provider } : {}),
            ...(str(event.model) ? { model: event.model } : {}),
          });
        }
      },
      undefined,
    ),
  );

  // --- agent_end: fallback capture for runtimes without llm_input/llm_output -------------
  on("agent_end", (event: Record<string, unknown>, ctx: HookContext) =>
    safely(
      logger,
      "capture (agent_end)",
      async () => {
        if (!config.autoCapture || isSystemRun(ctx)) return;
        const id = identify("agent_end", ctx, event);
        if (!id) return;
        const runId = str(event.runId) ?? str(ctx?.runId);
        const state = runId ? rt.runState(runId) : { user: false, assistant: false };
        const messages = Array.isArray(event.messages) ? (event.messages as Array<Record<string, unknown>>) : [];
        const lastOf = (role: string) => {
          for (let i = messages.length - 1; i >= 0; i--) {
            const m = messages[i];
            if (m && m.role === role) {
              const t = userTextFromPrompt(messageText(m.content), injectionFor(id, runId));
              if (t) return t;
            }
          }
          return "";
        };
        if (!state.user) {
          const stashed = runId ? userMessageByKey.get(`run:${runId}`) : undefined;
          const user = stashed ?? lastOf("user");
          if (user) {
            state.user = true;
            const key = runId ? `openclaw:run:${runId}:user` : `openclaw:session:${id.sessionId ?? id.sessionKey}:user:${sha(user)}`;
            rt.capture.enqueue(episode(id, "user", user, key, { hook: "agent_end", ...(runId ? { run_id: runId } : {}) }));
          }
        }
        if (!state.assistant && event.success !== false) {
          const assistant = lastOf("assistant");
          if (assistant) {
            state.assistant = true;
            await captureAssistant("agent_end", id, runId, assistant, {});
            return;
          }
        }
        await flushBounded();
      },
      undefined,
    ),
  );

  // --- message_received: channel messages as episodes ----------------------------------
  on("message_received", (event: Record<string, unknown>, ctx: HookContext) =>
    safely(
      logger,
      "capture (message_received)",
      async () => {
        if (!config.autoCapture) return;
        const content = typeof event.content === "string" ? stripInjected(event.content) : "";
        if (!content) return;
        const id = identify("message_received", ctx, event);
        if (!id) return;
        const runId = str(ctx?.runId) ?? str(event.runId);
        const channel = str(ctx?.channelId) ?? "channel";
        const messageId = str(ctx?.messageId) ?? str(event.messageId);
        let key: string;
        if (runId) {
          // The same key llm_input uses for this run: the service keeps one copy.
          key = `openclaw:run:${runId}:user`;
          const state = rt.runState(runId);
          if (state.user) return;
          state.user = true;
        } else if (messageId) {
          key = `openclaw:msg:${channel}:${str(ctx?.conversationId) ?? ""}:${messageId}`;
        } else {
          key = `openclaw:msg:${channel}:${sha(`${String(event.timestamp ?? "")}:${content}`)}`;
        }
        const speaker = str(event.from);
        const ep = episode(
          id,
          "user",
          content,
          key,
          {
            hook: "message_received",
            channel,
            ...(runId ? { run_id: runId } : {}),
            ...(messageId ? { message_id: messageId } : {}),
            ...(str(ctx?.conversationId) ? { conversation_id: ctx.conversationId } : {}),
            ...(event.threadId !== undefined ? { thread_id: String(event.threadId) } : {}),
          },
          speaker,
        );
        if (typeof event.timestamp === "number" && Number.isFinite(event.timestamp)) {
          ep.occurred_at = new Date(event.timestamp).toISOString();
        }
        rt.capture.enqueue(ep);
        await flushBounded();
      },
      undefined,
    ),
  );

  // --- after_tool_call: tool results into L1 working memory ----------------------------
  const ownTools = new Set<string>(TOOL_NAMES);
  on("after_tool_call", (event: Record<string, unknown>, ctx: HookContext) =>
    safely(
      logger,
      "working memory (after_tool_call)",
      async () => {
        if (!config.captureToolResults) return;
        const toolName = str(event.toolName) ?? str(ctx?.toolName) ?? "tool";
        if (ownTools.has(toolName)) return; // our own results would echo memory into memory
        const id = identify("after_tool_call", ctx, event);
        if (!id) return;
        const session = requireSession(id);
        if (!session) return;
        const error = str(event.error);
        const resultText = error ? `error: ${error}` : messageText(event.result) || safeJson(event.result);
        if (!resultText.trim()) return;
        const params = safeJson(event.params);
        let content = `${toolName}(${params.length > 300 ? `${params.slice(0, 299)}…` : params}) → ${resultText.trim()}`;
        if (content.length > MAX_WORKING_ITEM_CHARS) content = `${content.slice(0, MAX_WORKING_ITEM_CHARS - 1)}…`;
        const item: WorkingItem = {
          content,
          role: "tool",
          speaker: toolName.slice(0, 128),
          activation: error ? 0.5 : 1.0,
          metadata: {
            source: "openclaw",
            tool: toolName,
            ...(str(event.toolCallId) ?? str(ctx?.toolCallId) ? { tool_call_id: str(event.toolCallId) ?? str(ctx?.toolCallId) } : {}),
            ...(str(event.runId) ?? str(ctx?.runId) ? { run_id: str(event.runId) ?? str(ctx?.runId) } : {}),
            ...(typeof event.durationMs === "number" ? { duration_ms: event.durationMs } : {}),
            ...(error ? { error: true } : {}),
          },
        };
        const work = client
          .putWorking(session, [item], { timeoutMs: CAPTURE_REQUEST_TIMEOUT_MS })
          .catch((err: unknown) => logger.warn(`[muma] working memory (after_tool_call): ${describeError(err)}`));
        await bounded(work, undefined);
      },
      undefined,
    ),
  );

  // --- promotion of L1 ----------------------------------------------------------------
  on("before_compaction", (event: Record<string, unknown>, ctx: HookContext) => promote("before_compaction", ctx, event, "compaction"));
  on("before_reset", (event: Record<string, unknown>, ctx: HookContext) => promote("before_reset", ctx, event, "reset"));
  on("session_end", (event: Record<string, unknown>, ctx: HookContext) => promote("session_end", ctx, event, "end"));

  // --- gateway_stop: flush ------------------------------------------------------------
  on("gateway_stop", () =>
    safely(
      logger,
      "gateway_stop (flush)",
      async () => {
        const before = rt.capture.size;
        if (before === 0) return;
        await withDeadline(rt.capture.flush(LIFECYCLE_TIMEOUT_MS), LIFECYCLE_TIMEOUT_MS + 100, undefined);
        const left = rt.capture.size;
        if (left > 0) logger.warn(`[muma] gateway_stop: ${left} captured episode(s) could not be delivered and are dropped`);
        else logger.info(`[muma] gateway_stop: flushed ${before} captured episode(s)`);
      },
      undefined,
    ),
  );
}

function safeJson(value: unknown): string {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return String(value);
  }
}
