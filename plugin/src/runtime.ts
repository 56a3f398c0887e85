/**
 * Per-registration runtime: config, HTTP client, identity resolver, capture queue.
 *
 * Creating it opens no connection and starts no timer, so `register` stays side-effect
 * free (OpenClaw calls it several times per process, in different modes).
 */
import { MumaClient, describeError, type EpisodeIn } from "./client.js";
import { type MumaConfig, resolveConfig } from "./config.js";
import { IdentityResolver } from "./identity.js";
import { Spool, defaultSpoolDir } from "./spool.js";
import type { PluginLogger } from "./types.js";

/** Longest content the plugin sends for one episode / working item (characters). */
export const MAX_EPISODE_CHARS = 16_000;
export const MAX_WORKING_ITEM_CHARS = 2_000;
/** Pending capture episodes kept across failures before the oldest are dropped. */
export const MAX_PENDING_EPISODES = 500;
/** Budget for a background capture request (it never blocks a hook beyond timeoutMs). */
export const CAPTURE_REQUEST_TIMEOUT_MS = 3_000;
/** Budget for the health check at gateway start and the flush at gateway stop. */
export const LIFECYCLE_TIMEOUT_MS = 3_000;

/**
 * Process-wide state, shared by every registration with the same config.
 *
 * OpenClaw calls `register` several times per process (seen: 4× in a gateway) and the
 * hooks of one turn, the tools, and `gateway_stop` may come from different registrations.
 * The capture queue, identity cache and per-run bookkeeping must therefore live per
 * process, not per registration. Nothing here opens a connection.
 *
 * The shared state holds plain data and a client built from the same config; when a newer
 * plugin build is loaded in the same process (hot reload) the version suffix of the key
 * keeps old and new shapes apart.
 */
interface SharedState {
  client: MumaClient;
  identity: IdentityResolver;
  capture: CaptureQueue;
  injected: Map<string, string>;
  capturedRuns: Map<string, { user: boolean; assistant: boolean }>;
  sessionIdByKey: Map<string, string>;
  userMessageByKey: Map<string, string>;
}

/**
 * Kept on globalThis, not in module scope: OpenClaw may load this module more than once
 * per process (one module instance per plugin registry load), and all of them must see
 * the same queue.
 */
const SHARED_KEY = Symbol.for("muma.openclaw-plugin.shared-state.v1");
const SHARED: Map<string, SharedState> = ((globalThis as Record<symbol, unknown>)[SHARED_KEY] as Map<string, SharedState> | undefined) ??
  ((globalThis as Record<symbol, unknown>)[SHARED_KEY] = new Map<string, SharedState>());

/** Forget all process-wide state (tests only). */
export function resetSharedState(): void {
  SHARED.clear();
}

export class Runtime {
  readonly config: MumaConfig;
  readonly client: MumaClient;
  readonly identity: IdentityResolver;
  readonly logger: PluginLogger;
  readonly capture: CaptureQueue;
  /** Injected context blocks by run/session, so capture can strip exactly what we added. */
  readonly injected: Map<string, string>;
  /** Runs whose user / assistant turn was already captured (dedupe across hooks). */
  readonly capturedRuns: Map<string, { user: boolean; assistant: boolean }>;
  /** Latest OpenClaw sessionId seen for a session key (message hooks only carry the key). */
  readonly sessionIdByKey: Map<string, string>;
  /** The user's clean request per run/session key, from before_prompt_build. */
  readonly userMessageByKey: Map<string, string>;

  constructor(rawConfig: unknown, logger: PluginLogger) {
    const { config, problems } = resolveConfig(rawConfig);
    this.config = config;
    this.logger = logger;
    const key = JSON.stringify(config);
    let shared = SHARED.get(key);
    if (!shared) {
      const client = new MumaClient(config);
      shared = {
        client,
        identity: new IdentityResolver(config.defaultUserId),
        capture: new CaptureQueue(client, logger, config.timeoutMs, new Spool(config.spoolDir ?? defaultSpoolDir(), config, logger)),
        injected: new Map(),
        capturedRuns: new Map(),
        sessionIdByKey: new Map(),
        userMessageByKey: new Map(),
      };
      SHARED.set(key, shared);
      if (SHARED.size > 16) {
        const oldest = SHARED.keys().next().value;
        if (oldest !== undefined && oldest !== key) SHARED.delete(oldest);
      }
    }
    this.client = shared.client;
    this.identity = shared.identity;
    this.capture = shared.capture;
    this.injected = shared.injected;
    this.capturedRuns = shared.capturedRuns;
    this.sessionIdByKey = shared.sessionIdByKey;
    this.userMessageByKey = shared.userMessageByKey;
    for (const problem of problems) logger.warn(`[muma] config: ${problem} (using the default)`);
  }

  runState(runId: string): { user: boolean; assistant: boolean } {
    let state = this.capturedRuns.get(runId);
    if (!state) {
      state = { user: false, assistant: false };
      this.capturedRuns.set(runId, state);
      trimMap(this.capturedRuns);
    }
    return state;
  }

  rememberInjection(keys: Array<string | undefined>, block: string): void {
    for (const key of keys) {
      if (!key) continue;
      this.injected.delete(key);
      this.injected.set(key, block);
    }
    trimMap(this.injected);
  }
}

/** Drop the oldest entries of an insertion-ordered map beyond `limit`. */
export function trimMap(map: Map<string, unknown>, limit = 1000): void {
  while (map.size > limit) {
    const oldest = map.keys().next().value;
    if (oldest === undefined) break;
    map.delete(oldest);
  }
}

/**
 * Buffers capture episodes and sends them in batches to POST /v1/episodes.
 *
 * Every episode carries an idempotency key, so a batch whose response was lost (timeout)
 * can be resent safely; failed batches stay queued (bounded) and go out with the next
 * flush, and are written to the spool so they outlive the process; the first flush also
 * sends what earlier processes spooled. `flush()` never throws.
 */
export class CaptureQueue {
  private pending: EpisodeIn[] = [];
  private inFlight: Promise<void> | undefined;
  private readonly client: MumaClient;
  private readonly logger: PluginLogger;
  private readonly hookTimeoutMs: number;
  private readonly spool: Spool | undefined;
  private claimed = false;
  private spooled = false;
  private lastFailureLogged = 0;

  constructor(client: MumaClient, logger: PluginLogger, hookTimeoutMs: number, spool?: Spool) {
    this.client = client;
    this.logger = logger;
    this.hookTimeoutMs = hookTimeoutMs;
    this.spool = spool;
  }

  get size(): number {
    return this.pending.length;
  }

  enqueue(episode: EpisodeIn): void {
    if (episode.content.length > MAX_EPISODE_CHARS) {
      episode = { ...episode, content: `${episode.content.slice(0, MAX_EPISODE_CHARS)}…` };
    }
    this.pending.push(episode);
    if (this.pending.length > MAX_PENDING_EPISODES) {
      const dropped = this.pending.length - MAX_PENDING_EPISODES;
      this.pending.splice(0, dropped);
      this.logger.warn(`[muma] capture queue full: dropped ${dropped} oldest episode(s)`);
    }
  }

  /** Send everything pending (one batch at a time). Resolves when done; never rejects. */
  flush(requestTimeoutMs = Math.max(CAPTURE_REQUEST_TIMEOUT_MS, this.hookTimeoutMs)): Promise<void> {
    if (this.inFlight) {
      // Chain: after the current batch, send what arrived meanwhile.
      return this.inFlight.then(() => (this.pending.length ? this.flush(requestTimeoutMs) : undefined));
    }
    if (!this.claimed && this.spool) {
      this.claimed = true;
      this.pending = this.spool.claim().concat(this.pending).slice(-MAX_PENDING_EPISODES);
      this.spooled = this.pending.length > 0;
    }
    if (this.pending.length === 0) return Promise.resolve();
    const batch = this.pending;
    this.pending = [];
    this.inFlight = (async () => {
      try {
        await this.client.postEpisodes(batch, { timeoutMs: requestTimeoutMs });
        this.logger.debug?.(`[muma] captured ${batch.length} episode(s)`);
        if (this.spooled) this.keepInSpool();
      } catch (err) {
        // Keep them (in order, ahead of newer ones) for the next flush, and on disk.
        this.pending = batch.concat(this.pending).slice(-MAX_PENDING_EPISODES);
        this.keepInSpool();
        const now = Date.now();
        if (now - this.lastFailureLogged > 10_000) {
          this.lastFailureLogged = now;
          this.logger.warn(`[muma] capture failed, ${this.pending.length} episode(s) kept for retry: ${describeError(err)}`);
        }
      } finally {
        this.inFlight = undefined;
      }
    })();
    return this.inFlight;
  }

  /** The spool holds exactly what is still pending (nothing: no file). */
  private keepInSpool(): void {
    if (!this.spool) return;
    this.spool.save(this.pending);
    this.spooled = this.pending.length > 0;
  }
}
