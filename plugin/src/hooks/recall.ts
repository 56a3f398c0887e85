/**
 * Recall and working-memory hooks: auto-recall before each prompt (before_prompt_build)
 * and tool results into the session's L1 working memory (after_tool_call).
 */
import { type WorkingItem, safely } from "../client.js";
import { CAPTURE_REQUEST_TIMEOUT_MS, MAX_WORKING_ITEM_CHARS, trimMap } from "../runtime.js";
import { TOOL_NAMES } from "../tools.js";
import type { HookContext } from "../types.js";
import { type HookEntry, type HookEvent, type HookKit, requireSession, runIdOf } from "./kit.js";
import { messageText, safeJson, str, stripInjected } from "./text.js";

export type RecallHookName = "before_prompt_build" | "after_tool_call";

export function recallHooks(kit: HookKit): Record<RecallHookName, HookEntry> {
  const ownTools = new Set<string>(TOOL_NAMES);
  return {
    before_prompt_build: {
      handler: (event: HookEvent, ctx: HookContext) => safely(kit.logger, "auto-recall skipped", () => autoRecall(kit, event, ctx), undefined),
      opts: { timeoutMs: kit.budget + 1000 },
    },
    after_tool_call: {
      handler: (event: HookEvent, ctx: HookContext) =>
        safely(kit.logger, "working memory (after_tool_call)", () => captureToolResult(kit, ownTools, event, ctx), undefined),
    },
  };
}

/** Stash the clean user request for capture, then prepend the /v1/context block (within the hook budget). */
async function autoRecall(kit: HookKit, event: HookEvent, ctx: HookContext): Promise<{ prependContext: string } | undefined> {
  const id = kit.identify("before_prompt_build", ctx, event);
  if (!id) return undefined;
  const current = typeof event.currentUserMessage === "string" ? event.currentUserMessage : undefined;
  const prompt = stripInjected(current ?? (typeof event.prompt === "string" ? event.prompt : ""));
  const runId = str(ctx?.runId);
  const keys = [runId ? `run:${runId}` : undefined, id.sessionKey ? `key:${id.sessionKey}` : undefined];
  // Remember the clean request for capture (llm_input's prompt carries envelopes).
  if (prompt) for (const k of keys) if (k) kit.rt.userMessageByKey.set(k, prompt);
  trimMap(kit.rt.userMessageByKey);
  if (!kit.config.autoRecall || !prompt) return undefined;
  const started = Date.now();
  const res = await kit.client.context(id, prompt, {
    timeoutMs: kit.budget,
    serverTimeoutMs: Math.max(10, Math.floor(kit.budget * 0.8)),
  });
  const block = typeof res?.context === "string" ? res.context.trim() : "";
  if (res?.timed_out) {
    // A read cut short still answers what it found in time: say which of the two it was.
    const took = `${Date.now() - started} ms`;
    kit.logger.info(
      block
        ? `[muma] auto-recall: the service's ${kit.budget} ms budget cut its search short (${took}); injected what it found in time`
        : `[muma] auto-recall: the service's ${kit.budget} ms budget ran out (${took}); nothing injected`,
    );
  }
  if (!block) return undefined;
  kit.rt.rememberInjection([...keys, id.sessionId ? `sid:${id.sessionId}` : undefined], block);
  kit.logger.debug?.(`[muma] auto-recall: injected ${block.length} chars in ${Date.now() - started} ms for ${id.userId}`);
  return { prependContext: block };
}

/** Put another tool's result into the session's working memory. */
async function captureToolResult(kit: HookKit, ownTools: Set<string>, event: HookEvent, ctx: HookContext): Promise<void> {
  if (!kit.config.captureToolResults) return;
  const toolName = str(event.toolName) ?? str(ctx?.toolName) ?? "tool";
  if (ownTools.has(toolName)) return; // our own results would echo memory into memory
  const id = kit.identify("after_tool_call", ctx, event);
  if (!id) return;
  const session = requireSession(id);
  if (!session) return;
  const item = toolResultItem(toolName, event, ctx);
  if (!item) return;
  const work = kit.client.putWorking(session, [item], { timeoutMs: CAPTURE_REQUEST_TIMEOUT_MS });
  await kit.background(work, "[muma] working memory (after_tool_call)");
}

/** The working item for a tool call (`tool(params) → result`, capped); undefined when the result is empty. */
function toolResultItem(toolName: string, event: HookEvent, ctx: HookContext): WorkingItem | undefined {
  const error = str(event.error);
  const resultText = error ? `error: ${error}` : messageText(event.result) || safeJson(event.result);
  if (!resultText.trim()) return undefined;
  const params = safeJson(event.params);
  let content = `${toolName}(${params.length > 300 ? `${params.slice(0, 299)}…` : params}) → ${resultText.trim()}`;
  if (content.length > MAX_WORKING_ITEM_CHARS) content = `${content.slice(0, MAX_WORKING_ITEM_CHARS - 1)}…`;
  const toolCallId = str(event.toolCallId) ?? str(ctx?.toolCallId);
  const runId = runIdOf(event, ctx);
  const source = sourceOf(event.params);
  return {
    content,
    role: "tool",
    speaker: toolName.slice(0, 128),
    activation: error ? 0.5 : 1.0,
    metadata: {
      source: "openclaw",
      tool: toolName,
      ...source,
      ...(toolCallId ? { tool_call_id: toolCallId } : {}),
      ...(runId ? { run_id: runId } : {}),
      ...(typeof event.durationMs === "number" ? { duration_ms: event.durationMs } : {}),
      ...(error ? { error: true } : {}),
    },
  };
}

/**
 * The page or file a tool read, from its parameters: the service records it as the memory's
 * origin (`web` with its URL, `file` with its path), so a recalled line names its source.
 */
function sourceOf(params: unknown): { url?: string; file_path?: string } {
  if (!params || typeof params !== "object") return {};
  const record = params as Record<string, unknown>;
  const url = str(record.url) ?? str(record.href);
  if (url && /^https?:\/\//i.test(url)) return { url: url.slice(0, 512) };
  const path = str(record.file_path) ?? str(record.filePath) ?? str(record.path);
  return path ? { file_path: path.slice(0, 512) } : {};
}
