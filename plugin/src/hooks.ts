/**
 * Hook handlers. Rules every handler follows:
 *
 * - It never throws into OpenClaw: all work goes through `safely()`.
 * - It never waits on MUMA longer than `timeoutMs` (default 150 ms): the recall request
 *   itself is aborted at `timeoutMs`; capture/promotion requests may continue in the
 *   background (bounded) after the handler has returned.
 * - It does nothing when the user cannot be identified (see identity.ts).
 *
 * The handlers live in hooks/: capture.ts (turns and messages as episodes), recall.ts
 * (auto-recall, tool results into working memory), lifecycle.ts (gateway, session,
 * promotion of L1) and the shared kit.ts and text.ts.
 */
import { captureHooks } from "./hooks/capture.js";
import { type HookEntry, HookKit } from "./hooks/kit.js";
import { lifecycleHooks } from "./hooks/lifecycle.js";
import { recallHooks } from "./hooks/recall.js";
import type { Runtime } from "./runtime.js";
import type { HookHandler, HookOptions } from "./types.js";

export { messageText, stripInjected, userTextFromPrompt } from "./hooks/text.js";

/** Every hook the plugin registers, in registration order. */
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

type Register = (name: HookName, handler: HookHandler, opts?: HookOptions) => void;

/** Register every hook once, in HOOK_NAMES order, with its options (if it has any). */
export function registerHooks(rt: Runtime, on: Register): void {
  const kit = new HookKit(rt);
  const hooks: Record<HookName, HookEntry> = { ...lifecycleHooks(kit), ...recallHooks(kit), ...captureHooks(kit) };
  for (const name of HOOK_NAMES) {
    const { handler, opts } = hooks[name];
    if (opts) on(name, handler, opts);
    else on(name, handler);
  }
}
