/**
 * Lifecycle hooks: the service check at gateway_start, the session owner at session_start,
 * promotion of L1 working memory before compaction/reset and at session end, and the
 * final flush of the capture queue at gateway_stop.
 */
import { MumaError, describeError, safely, withDeadline } from "../client.js";
import { tokenProblem } from "../config.js";
import { CAPTURE_REQUEST_TIMEOUT_MS, LIFECYCLE_TIMEOUT_MS } from "../runtime.js";
import type { HookContext } from "../types.js";
import { type HookEntry, type HookEvent, type HookKit, requireSession } from "./kit.js";

export type LifecycleHookName = "gateway_start" | "session_start" | "before_compaction" | "before_reset" | "session_end" | "gateway_stop";

type PromoteReason = "compaction" | "reset" | "end";

export function lifecycleHooks(kit: HookKit): Record<LifecycleHookName, HookEntry> {
  const promotion = (hook: LifecycleHookName, reason: PromoteReason): HookEntry => ({
    handler: (event: HookEvent, ctx: HookContext) => promote(kit, hook, ctx, event, reason),
  });
  return {
    gateway_start: { handler: () => safely(kit.logger, "gateway_start", () => checkService(kit), undefined) },
    session_start: { handler: (event: HookEvent, ctx: HookContext) => noteSessionStart(kit, event, ctx) },
    before_compaction: promotion("before_compaction", "compaction"),
    before_reset: promotion("before_reset", "reset"),
    session_end: promotion("session_end", "end"),
    gateway_stop: { handler: () => safely(kit.logger, "gateway_stop (flush)", () => flushOnStop(kit), undefined) },
  };
}

/** gateway_start: check the service, log clearly. */
async function checkService(kit: HookKit): Promise<void> {
  const { config, logger } = kit;
  const problem = tokenProblem(config.token);
  if (problem) logger.warn(`[muma] ${problem}: memory calls to ${config.serviceUrl} will fail until one is set`);
  try {
    const health = await kit.client.health(LIFECYCLE_TIMEOUT_MS);
    logger.info(`[muma] MUMA service reachable at ${config.serviceUrl} (status ${String(health?.status ?? "ok")})`);
  } catch (err) {
    const unhealthy = err instanceof MumaError && err.kind === "http";
    logger.warn(
      unhealthy
        ? `[muma] MUMA service at ${config.serviceUrl} is UNHEALTHY: ${describeError(err)}. Turns continue; memory may be degraded.`
        : `[muma] MUMA service UNREACHABLE at ${config.serviceUrl}: ${describeError(err)}. Turns continue without memory until it is back.`,
    );
  }
}

/** session_start: remember who owns the session (synchronous; never throws). */
function noteSessionStart(kit: HookKit, event: HookEvent, ctx: HookContext): void {
  try {
    const id = kit.identify("session_start", ctx, event);
    if (id) kit.logger.debug?.(`[muma] session ${id.sessionId ?? id.sessionKey} started for user ${id.userId} (${id.userSource})`);
  } catch (err) {
    kit.logger.warn(`[muma] session_start: ${describeError(err)}`);
  }
}

/** Flush pending capture, then promote the session's L1 working memory (within the hook budget). */
function promote(kit: HookKit, hook: string, ctx: HookContext, event: HookEvent, reason: PromoteReason): Promise<void> {
  return safely(
    kit.logger,
    `${hook} (promote L1)`,
    async () => {
      const id = kit.identify(hook, ctx, event);
      if (!id) return;
      const session = requireSession(id);
      if (!session) return;
      const work = (async () => {
        await kit.rt.capture.flush();
        const answer = (await kit.client.promote(session, reason, { timeoutMs: CAPTURE_REQUEST_TIMEOUT_MS })) as { promoted?: number } | undefined;
        // One line per reset, compaction or session end: what left working memory for good.
        kit.logger.info(`[muma] ${hook}: promoted ${answer?.promoted ?? 0} working item(s) of session ${session.sessionId} (${reason})`);
      })();
      await kit.background(work, `[muma] ${hook}: promote failed`);
    },
    undefined,
  );
}

/** gateway_stop: deliver what is still queued (bounded by LIFECYCLE_TIMEOUT_MS). */
async function flushOnStop(kit: HookKit): Promise<void> {
  const { capture } = kit.rt;
  const before = capture.size;
  if (before === 0) return;
  await withDeadline(capture.flush(LIFECYCLE_TIMEOUT_MS), LIFECYCLE_TIMEOUT_MS + 100, undefined);
  const left = capture.size;
  if (left > 0) kit.logger.warn(`[muma] gateway_stop: ${left} captured episode(s) could not be delivered and are dropped`);
  else kit.logger.info(`[muma] gateway_stop: flushed ${before} captured episode(s)`);
}
