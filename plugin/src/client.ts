/**
 * Thin HTTP client for the MUMA API: one method per endpoint on top of the HTTP core
 * (client/http.ts).
 *
 * - Every request has a hard timeout enforced with an AbortController (the body read is
 *   covered too), so nothing waits on MUMA longer than its budget.
 * - Methods throw `MumaError` with a `kind` (unreachable | timeout | http | invalid_response
 *   | not_configured | aborted). Hooks never call them directly: they go through
 *   `safely()`, which never throws.
 * - No connection is opened until the first request (never in `register`).
 */
import type { ContextResponse, EpisodeIn, ForgetOut, Identity, MemoryHit, MemoryNote, SearchResponse, WorkingItem } from "./client/api.js";
import { MumaHttp, type RequestOptions } from "./client/http.js";

export type { ContextResponse, EpisodeIn, ForgetOut, Identity, MemoryHit, MemoryNote, Provenance, Role, SearchResponse, WorkingHit, WorkingItem } from "./client/api.js";
export { safely, withDeadline } from "./client/guard.js";
export { MumaError, type MumaErrorKind, type RequestOptions, describeError } from "./client/http.js";

const enc = encodeURIComponent;

/** The service accepts prompts up to 16,000 characters; the end of a long prompt matters most. */
export const MAX_CONTEXT_PROMPT_CHARS = 8_000;

/** Per-call budget, and the caller's signal where the endpoint can be cancelled. */
type CallOptions = { timeoutMs: number; signal?: AbortSignal | undefined };

type SessionIdentity = Identity & { sessionId: string };

/** The owner every scoped request names. */
function owner(id: Identity): { user_id: string; agent_id: string } {
  return { user_id: id.userId, agent_id: id.agentId };
}

/** The owner plus the session, when there is one. */
function ownerInSession(id: Identity): { user_id: string; agent_id: string; session_id?: string } {
  return { ...owner(id), ...(id.sessionId ? { session_id: id.sessionId } : {}) };
}

export class MumaClient extends MumaHttp {
  private call<T>(method: string, path: string, opts: CallOptions, rest: Omit<RequestOptions, "timeoutMs" | "signal">): Promise<T> {
    return this.request<T>(method, path, { timeoutMs: opts.timeoutMs, signal: opts.signal, ...rest });
  }

  health(timeoutMs: number): Promise<{ status?: string; [key: string]: unknown }> {
    return this.request("GET", "/healthz", { timeoutMs, noAuth: true });
  }

  context(
    id: Identity,
    prompt: string,
    opts: { timeoutMs: number; maxTokens?: number; serverTimeoutMs?: number; signal?: AbortSignal },
  ): Promise<ContextResponse> {
    return this.call("POST", "/v1/context", opts, {
      body: {
        ...ownerInSession(id),
        prompt: prompt.length > MAX_CONTEXT_PROMPT_CHARS ? prompt.slice(-MAX_CONTEXT_PROMPT_CHARS) : prompt,
        ...(opts.maxTokens !== undefined ? { max_tokens: opts.maxTokens } : {}),
        ...(opts.serverTimeoutMs !== undefined ? { timeout_ms: opts.serverTimeoutMs } : {}),
      },
    });
  }

  search(
    id: Identity,
    body: { query: string; top_k?: number; kinds?: string[]; domains?: string[] },
    opts: CallOptions,
  ): Promise<SearchResponse> {
    return this.call("POST", "/v1/search", opts, { body: { ...ownerInSession(id), ...body } });
  }

  postEpisodes(episodes: EpisodeIn[], opts: { timeoutMs: number }): Promise<{ episode_ids?: string[] }> {
    return this.call("POST", "/v1/episodes", opts, { body: { episodes } });
  }

  writeMemory(
    id: Identity,
    body: Record<string, unknown>,
    opts: CallOptions,
  ): Promise<{ episode_id?: string; note_id?: string; note_ids?: string[]; decision?: unknown }> {
    // Waits for the write path (at most half the call's budget, in whole seconds) so the
    // answer carries the memory's id: 201 with note_ids, or 202 when it is still queued.
    const wait = Math.max(0, Math.min(30, Math.floor(opts.timeoutMs / 2000)));
    return this.call("POST", "/v1/memories", opts, {
      body: { ...ownerInSession(id), ...body },
      ...(wait > 0 ? { query: { wait } } : {}),
    });
  }

  getMemory(id: Identity, memoryId: string, opts: CallOptions): Promise<MemoryHit> {
    return this.call("GET", `/v1/memories/${enc(memoryId)}`, opts, { query: owner(id) });
  }

  forget(id: Identity, memoryId: string, opts: CallOptions): Promise<unknown> {
    return this.call("DELETE", `/v1/memories/${enc(memoryId)}`, opts, { query: owner(id) });
  }

  patchMemory(id: Identity, memoryId: string, patch: Record<string, unknown>, opts: CallOptions): Promise<MemoryHit> {
    return this.call("PATCH", `/v1/memories/${enc(memoryId)}`, opts, { body: { ...owner(id), ...patch } });
  }

  /** The memory candidates waiting for review that this user/agent may see, newest first. */
  candidates(id: Identity, limit: number, opts: CallOptions): Promise<MemoryNote[]> {
    return this.call("GET", "/v1/candidates", opts, { query: { ...owner(id), limit } });
  }

  /** Approve a candidate, as it is or with corrected `content` (then the answer is a new version, new id). */
  approveCandidate(id: Identity, candidateId: string, content: string | undefined, opts: CallOptions): Promise<MemoryNote> {
    const body = { ...owner(id), ...(content !== undefined ? { content } : {}) };
    return this.call("POST", `/v1/candidates/${enc(candidateId)}/approve`, opts, { body });
  }

  /** Reject a candidate: the service forgets it. */
  rejectCandidate(id: Identity, candidateId: string, reason: string | undefined, opts: CallOptions): Promise<ForgetOut> {
    const body = { ...owner(id), ...(reason !== undefined ? { reason } : {}) };
    return this.call("POST", `/v1/candidates/${enc(candidateId)}/reject`, opts, { body });
  }

  link(id: Identity, body: { source_id: string; target_id: string; kind?: string }, opts: CallOptions): Promise<unknown> {
    return this.call("POST", "/v1/links", opts, { body: { ...owner(id), ...body } });
  }

  stats(userId: string, agentId: string | undefined, opts: CallOptions): Promise<Record<string, unknown>> {
    return this.call("GET", "/v1/stats", opts, { query: { user_id: userId, agent_id: agentId } });
  }

  searchAgents(
    id: Identity,
    query: string,
    opts: CallOptions,
  ): Promise<{ agents?: Array<{ agent_id: string; score?: number; note_count?: number; topics?: unknown }> }> {
    return this.call("POST", "/v1/agents/search", opts, { body: { ...owner(id), query } });
  }

  consolidate(userId: string, opts: CallOptions): Promise<Record<string, unknown>> {
    return this.call("POST", "/v1/consolidate", opts, { body: { user_id: userId } });
  }

  /** An agent token must name its agent: the service answers for what that agent reads. */
  conflicts(userId: string, agentId: string | undefined, opts: { timeoutMs: number }): Promise<unknown> {
    return this.call("GET", "/v1/conflicts", opts, { query: { user_id: userId, agent_id: agentId } });
  }

  exportUser(userId: string, agentId: string | undefined, format: string, opts: { timeoutMs: number }): Promise<string> {
    return this.call("GET", "/v1/export", opts, { query: { user_id: userId, agent_id: agentId, format }, text: true });
  }

  putWorking(id: SessionIdentity, items: WorkingItem[], opts: { timeoutMs: number }): Promise<unknown> {
    return this.call("PUT", `/v1/sessions/${enc(id.sessionId)}/working`, opts, { body: { ...owner(id), items } });
  }

  promote(id: SessionIdentity, reason: "compaction" | "reset" | "end", opts: { timeoutMs: number }): Promise<unknown> {
    return this.call("POST", `/v1/sessions/${enc(id.sessionId)}/promote`, opts, { body: { ...owner(id), reason } });
  }
}
