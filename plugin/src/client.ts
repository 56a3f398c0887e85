/**
 * Thin HTTP client for the MUMA API.
 *
 * - Every request has a hard timeout enforced with an AbortController (the body read is
 *   covered too), so nothing waits on MUMA longer than its budget.
 * - Methods throw `MumaError` with a `kind` (unreachable | timeout | http | invalid_response
 *   | not_configured | aborted). Hooks never call them directly: they go through
 *   `safely()`, which never throws.
 * - No connection is opened until the first request (never in `register`).
 */
import type { MumaConfig } from "./config.js";
import type { PluginLogger } from "./types.js";

export type MumaErrorKind = "unreachable" | "timeout" | "http" | "invalid_response" | "not_configured" | "aborted";

export class MumaError extends Error {
  readonly kind: MumaErrorKind;
  readonly status: number | undefined;
  readonly errorClass: string | undefined;
  readonly detail: string | undefined;

  constructor(
    kind: MumaErrorKind,
    message: string,
    extra: { status?: number; errorClass?: string; detail?: string; cause?: unknown } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = "MumaError";
    this.kind = kind;
    this.status = extra.status;
    this.errorClass = extra.errorClass;
    this.detail = extra.detail;
  }
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** Return the raw response text instead of parsing JSON. */
  text?: boolean;
  /** Send no Authorization header (only /healthz). */
  noAuth?: boolean;
}

// ---- API shapes (only the fields the plugin reads) -------------------------------------

export type Role = "user" | "assistant" | "tool" | "system";

export interface EpisodeIn {
  user_id: string;
  agent_id: string;
  session_id: string;
  role: Role;
  content: string;
  speaker?: string;
  occurred_at?: string;
  metadata?: Record<string, unknown>;
  idempotency_key?: string;
}

export interface MemoryHit {
  id: string;
  content: string;
  kind?: string;
  domain?: string | null;
  visibility?: string;
  occurred_at?: string | null;
  score?: number;
  sources?: unknown[];
  explanation?: unknown;
  [key: string]: unknown;
}

export interface SearchResponse {
  results: MemoryHit[];
  took_ms?: number;
}

export interface ContextResponse {
  context: string;
  memories?: MemoryHit[];
  tokens?: number;
  took_ms?: number;
  timed_out?: boolean;
}

export interface WorkingItem {
  content: string;
  activation?: number;
  metadata?: Record<string, unknown>;
  role?: Role;
  speaker?: string;
}

export interface Identity {
  userId: string;
  agentId: string;
  sessionId: string | undefined;
}

const enc = encodeURIComponent;

/** The service accepts prompts up to 16,000 characters; the end of a long prompt matters most. */
export const MAX_CONTEXT_PROMPT_CHARS = 8_000;

export class MumaClient {
  readonly config: MumaConfig;

  constructor(config: MumaConfig) {
    this.config = config;
  }

  async request<T = unknown>(method: string, path: string, opts: RequestOptions): Promise<T> {
    const url = new URL(this.config.serviceUrl + path);
    for (const [key, value] of Object.entries(opts.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = { accept: "application/json" };
    if (!opts.noAuth) {
      if (!this.config.token) {
        throw new MumaError("not_configured", "MUMA token is not configured (plugins.entries.muma.config.token)");
      }
      headers.authorization = `Bearer ${this.config.token}`;
      if (this.config.tenantId) headers["x-muma-tenant"] = this.config.tenantId;
    }
    let payload: string | undefined;
    if (opts.body !== undefined) {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(opts.body);
    }

    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, Math.max(1, opts.timeoutMs));
    timer.unref?.();
    const outer = opts.signal;
    const onOuterAbort = () => controller.abort();
    if (outer) {
      if (outer.aborted) controller.abort();
      else outer.addEventListener("abort", onOuterAbort, { once: true });
    }

    const where = `${method} ${url.pathname}`;
    try {
      let response: Response;
      try {
        const init: RequestInit = { method, headers, signal: controller.signal };
        if (payload !== undefined) init.body = payload;
        response = await fetch(url, init);
      } catch (err) {
        throw this.transportError(err, where, timedOut, opts.timeoutMs);
      }
      let text: string;
      try {
        text = await response.text();
      } catch (err) {
        throw this.transportError(err, where, timedOut, opts.timeoutMs);
      }
      if (!response.ok) {
        let errorClass: string | undefined;
        let detail: string | undefined;
        try {
          const parsed = JSON.parse(text) as { error?: unknown; detail?: unknown };
          if (typeof parsed.error === "string") errorClass = parsed.error;
          if (parsed.detail !== undefined) detail = typeof parsed.detail === "string" ? parsed.detail : JSON.stringify(parsed.detail);
        } catch {
          detail = text.slice(0, 200) || undefined;
        }
        const extra: { status: number; errorClass?: string; detail?: string } = { status: response.status };
        if (errorClass !== undefined) extra.errorClass = errorClass;
        if (detail !== undefined) extra.detail = detail;
        throw new MumaError(
          "http",
          `${where} failed: HTTP ${response.status}${errorClass ? ` ${errorClass}` : ""}${detail ? `: ${detail}` : ""}`,
          extra,
        );
      }
      if (opts.text) return text as T;
      if (text.trim() === "") return {} as T;
      try {
        return JSON.parse(text) as T;
      } catch (err) {
        throw new MumaError("invalid_response", `${where}: response is not JSON`, { cause: err });
      }
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onOuterAbort);
    }
  }

  private transportError(err: unknown, where: string, timedOut: boolean, timeoutMs: number): MumaError {
    if (err instanceof MumaError) return err;
    if (timedOut) return new MumaError("timeout", `${where} timed out after ${timeoutMs} ms`, { cause: err });
    const name = (err as { name?: unknown })?.name;
    if (name === "AbortError") return new MumaError("aborted", `${where} aborted`, { cause: err });
    const cause = (err as { cause?: { code?: unknown; message?: unknown } })?.cause;
    const code = typeof cause?.code === "string" ? cause.code : undefined;
    const msg = code ?? (typeof cause?.message === "string" ? cause.message : String((err as Error)?.message ?? err));
    return new MumaError("unreachable", `${where}: MUMA service unreachable at ${this.config.serviceUrl} (${msg})`, {
      cause: err,
    });
  }

  // ---- endpoints -----------------------------------------------------------------------

  health(timeoutMs: number): Promise<{ status?: string; [key: string]: unknown }> {
    return this.request("GET", "/healthz", { timeoutMs, noAuth: true });
  }

  context(
    id: Identity,
    prompt: string,
    opts: { timeoutMs: number; maxTokens?: number; serverTimeoutMs?: number; signal?: AbortSignal },
  ): Promise<ContextResponse> {
    return this.request("POST", "/v1/context", {
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      body: {
        user_id: id.userId,
        agent_id: id.agentId,
        ...(id.sessionId ? { session_id: id.sessionId } : {}),
        prompt: prompt.length > MAX_CONTEXT_PROMPT_CHARS ? prompt.slice(-MAX_CONTEXT_PROMPT_CHARS) : prompt,
        ...(opts.maxTokens !== undefined ? { max_tokens: opts.maxTokens } : {}),
        ...(opts.serverTimeoutMs !== undefined ? { timeout_ms: opts.serverTimeoutMs } : {}),
      },
    });
  }

  search(
    id: Identity,
    body: { query: string; top_k?: number; kinds?: string[]; domains?: string[] },
    opts: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<SearchResponse> {
    return this.request("POST", "/v1/search", {
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      body: {
        user_id: id.userId,
        agent_id: id.agentId,
        ...(id.sessionId ? { session_id: id.sessionId } : {}),
        ...body,
      },
    });
  }

  postEpisodes(episodes: EpisodeIn[], opts: { timeoutMs: number }): Promise<{ episode_ids?: string[] }> {
    return this.request("POST", "/v1/episodes", { timeoutMs: opts.timeoutMs, body: { episodes } });
  }

  writeMemory(
    id: Identity,
    body: Record<string, unknown>,
    opts: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<{ episode_id?: string; note_ids?: string[]; decision?: unknown }> {
    return this.request("POST", "/v1/memories", {
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      body: {
        user_id: id.userId,
        agent_id: id.agentId,
        ...(id.sessionId ? { session_id: id.sessionId } : {}),
        ...body,
      },
    });
  }

  getMemory(id: Identity, memoryId: string, opts: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<MemoryHit> {
    return this.request("GET", `/v1/memories/${enc(memoryId)}`, {
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      query: { user_id: id.userId, agent_id: id.agentId },
    });
  }

  forget(id: Identity, memoryId: string, opts: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<unknown> {
    return this.request("DELETE", `/v1/memories/${enc(memoryId)}`, {
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      query: { user_id: id.userId, agent_id: id.agentId },
    });
  }

  patchMemory(
    id: Identity,
    memoryId: string,
    patch: Record<string, unknown>,
    opts: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<MemoryHit> {
    return this.request("PATCH", `/v1/memories/${enc(memoryId)}`, {
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      body: { user_id: id.userId, agent_id: id.agentId, ...patch },
    });
  }

  link(
    id: Identity,
    body: { source_id: string; target_id: string; kind?: string },
    opts: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<unknown> {
    return this.request("POST", "/v1/links", {
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      body: { user_id: id.userId, agent_id: id.agentId, ...body },
    });
  }

  stats(
    userId: string,
    agentId: string | undefined,
    opts: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<Record<string, unknown>> {
    return this.request("GET", "/v1/stats", {
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      query: { user_id: userId, agent_id: agentId },
    });
  }

  searchAgents(
    id: Identity,
    query: string,
    opts: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<{ agents?: Array<{ agent_id: string; score?: number; note_count?: number; topics?: unknown }> }> {
    return this.request("POST", "/v1/agents/search", {
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      body: { user_id: id.userId, agent_id: id.agentId, query },
    });
  }

  consolidate(userId: string, opts: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<Record<string, unknown>> {
    return this.request("POST", "/v1/consolidate", { timeoutMs: opts.timeoutMs, signal: opts.signal, body: { user_id: userId } });
  }

  conflicts(userId: string, opts: { timeoutMs: number }): Promise<unknown> {
    return this.request("GET", "/v1/conflicts", { timeoutMs: opts.timeoutMs, query: { user_id: userId } });
  }

  exportUser(userId: string, format: string, opts: { timeoutMs: number }): Promise<string> {
    return this.request("GET", "/v1/export", { timeoutMs: opts.timeoutMs, query: { user_id: userId, format }, text: true });
  }

  putWorking(id: Identity & { sessionId: string }, items: WorkingItem[], opts: { timeoutMs: number }): Promise<unknown> {
    return this.request("PUT", `/v1/sessions/${enc(id.sessionId)}/working`, {
      timeoutMs: opts.timeoutMs,
      body: { user_id: id.userId, agent_id: id.agentId, items },
    });
  }

  promote(
    id: Identity & { sessionId: string },
    reason: "compaction" | "reset" | "end",
    opts: { timeoutMs: number },
  ): Promise<unknown> {
    return this.request("POST", `/v1/sessions/${enc(id.sessionId)}/promote`, {
      timeoutMs: opts.timeoutMs,
      body: { user_id: id.userId, agent_id: id.agentId, reason },
    });
  }
}

/** Short human description of any error (for log lines and tool text). */
export function describeError(err: unknown): string {
  if (err instanceof MumaError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * Run `fn` and never throw: on any error, log one line and return `fallback`.
 * Used by every hook so a MUMA problem can never surface inside OpenClaw.
 */
export async function safely<T>(
  logger: PluginLogger,
  label: string,
  fn: () => Promise<T>,
  fallback: T,
  level: "warn" | "debug" = "warn",
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const line = `[muma] ${label}: ${describeError(err)}`;
    try {
      if (level === "debug") (logger.debug ?? logger.info)(line);
      else logger.warn(line);
    } catch {
      /* a broken logger must not break a turn either */
    }
    return fallback;
  }
}

/**
 * Resolve with the promise's value, or with `onTimeout` after `ms` if it has not settled.
 * The underlying work is not cancelled (callers pass their own AbortSignal for that).
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, onTimeout: T): Promise<T> {
  return new Promise<T>((resolve) => {
    const timer = setTimeout(() => resolve(onTimeout), Math.max(0, ms));
    timer.unref?.();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      () => {
        clearTimeout(timer);
        resolve(onTimeout);
      },
    );
  });
}
