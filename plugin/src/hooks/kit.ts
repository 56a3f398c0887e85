/**
 * What every hook handler shares: identifying the user, building episodes and keys,
 * and waiting on MUMA for at most the hook budget (`config.timeoutMs`).
 */
import { type EpisodeIn, type Identity, type MumaClient, describeError, withDeadline } from "../client.js";
import type { MumaConfig } from "../config.js";
import { hookIdentityInput, type ResolvedIdentity } from "../identity.js";
import { type Runtime, trimMap } from "../runtime.js";
import type { HookContext, HookHandler, HookOptions, PluginLogger } from "../types.js";
import { sha, str } from "./text.js";

export type HookEvent = Record<string, unknown>;

/** Sessions already warned about: one warning per conversation, not one per hook. */
const WARNED = new Map<string, true>();

/** Say once per session that it has no memory and why (silence looked like a working set-up). */
function warnUnidentified(logger: PluginLogger, hook: string, session: string): void {
  if (WARNED.has(session)) {
    logger.debug?.(`[muma] ${hook}: user not identified (session ${session}); skipped`);
    return;
  }
  WARNED.set(session, true);
  trimMap(WARNED);
  logger.warn(
    `[muma] no memory for session ${session}: the user is not identified (no channel sender, ` +
      "no user:<id> session key, no defaultUserId in the plugin config); " +
      "set defaultUserId for a single-user install",
  );
}

/** One hook's handler and the options it is registered with. */
export interface HookEntry {
  handler: HookHandler;
  opts?: HookOptions;
}

export type SessionIdentity = Identity & { sessionId: string };

export class HookKit {
  readonly rt: Runtime;
  readonly config: MumaConfig;
  readonly client: MumaClient;
  readonly logger: PluginLogger;
  /** The longest a handler waits on MUMA (ms). */
  readonly budget: number;

  constructor(rt: Runtime) {
    this.rt = rt;
    this.config = rt.config;
    this.client = rt.client;
    this.logger = rt.logger;
    this.budget = rt.config.timeoutMs;
  }

  /** The work's value, or `fallback` once the hook budget is spent (the work goes on). */
  bounded<T>(work: Promise<T>, fallback: T): Promise<T> {
    return withDeadline(work, this.budget, fallback);
  }

  /** Kick off a flush; wait at most the hook budget. */
  flushBounded(): Promise<void> {
    return this.bounded(this.rt.capture.flush(), undefined);
  }

  /** Wait at most the hook budget for `work`; a failure, even a late one, is logged as `failure: why`. */
  background(work: Promise<unknown>, failure: string): Promise<void> {
    const logged = work.then(
      () => undefined,
      (err: unknown) => this.logger.warn(`${failure}: ${describeError(err)}`),
    );
    return this.bounded(logged, undefined);
  }

  /** The user behind a hook call (undefined, logged at debug, when there is none). */
  identify(hook: string, ctx: HookContext | undefined, event?: HookEvent): ResolvedIdentity | undefined {
    this.noteSession(ctx, event);
    const input = hookIdentityInput(ctx as Record<string, unknown> | undefined, event);
    if (!input.sessionId && input.sessionKey) input.sessionId = this.rt.sessionIdByKey.get(input.sessionKey);
    const id = this.rt.identity.resolve(input);
    if (!id) warnUnidentified(this.logger, hook, input.sessionKey ?? input.sessionId ?? "?");
    return id;
  }

  /** The context block injected for this run or session, to strip it from what we capture. */
  injectionFor(id: ResolvedIdentity, runId?: string): string | undefined {
    const { injected } = this.rt;
    return (
      (runId ? injected.get(`run:${runId}`) : undefined) ??
      (id.sessionKey ? injected.get(`key:${id.sessionKey}`) : undefined) ??
      (id.sessionId ? injected.get(`sid:${id.sessionId}`) : undefined)
    );
  }

  /** Remember the sessionId of a session key (message hooks only carry the key). */
  private noteSession(ctx: HookContext | undefined, event?: HookEvent): void {
    const key = str(ctx?.sessionKey) ?? str(event?.sessionKey);
    const id = str(ctx?.sessionId) ?? str(event?.sessionId);
    if (key && id) {
      this.rt.sessionIdByKey.delete(key);
      this.rt.sessionIdByKey.set(key, id);
      trimMap(this.rt.sessionIdByKey);
      this.rt.identity.link(key, id);
    }
  }
}

/** The identity with a session (its id, else its key), or undefined when it has neither. */
export function requireSession(id: ResolvedIdentity): SessionIdentity | undefined {
  const sessionId = id.sessionId ?? id.sessionKey;
  return sessionId ? { userId: id.userId, agentId: id.agentId, sessionId } : undefined;
}

/** The run id of a model-run hook (the event's, else the context's). */
export function runIdOf(event: HookEvent, ctx: HookContext | undefined): string | undefined {
  return str(event.runId) ?? str(ctx?.runId);
}

/**
 * Idempotency key of a turn. Every hook that captures the turn of a run uses the same
 * run key, so the service keeps one copy; without a run the key hashes the content.
 */
export function turnKey(id: ResolvedIdentity, runId: string | undefined, role: "user" | "assistant", content: string): string {
  return runId ? `openclaw:run:${runId}:${role}` : `openclaw:session:${id.sessionId ?? id.sessionKey}:${role}:${sha(content)}`;
}

/** An episode of this identity's session; a key too long for the service is hashed. */
export function buildEpisode(
  id: ResolvedIdentity,
  role: EpisodeIn["role"],
  content: string,
  key: string,
  metadata: Record<string, unknown>,
  speaker?: string,
): EpisodeIn {
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
}
