/** The MUMA API's request and response shapes (only the fields the plugin reads). */

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

/** Where a memory came from (search hits and notes carry it). */
export interface Provenance {
  /** user, assistant, agent, tool, web, file, participant, system, import, sync. */
  origin?: string;
  /** The URL, file path, tool or participant name, when known. */
  origin_ref?: string | null;
  /** high, medium or low. */
  trust?: string;
  /** The text reads like an instruction to an agent. */
  instruction_like?: boolean;
  /** It waits for review and is not injected until approved. */
  candidate?: boolean;
}

export interface MemoryHit extends Provenance {
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

/** A note as GET /v1/memories/{id} and the candidate endpoints return it (NoteOut). */
export interface MemoryNote extends MemoryHit {
  lineage_id?: string;
  version?: number;
  created_at?: string;
}

/** What forgetting (or rejecting) a memory removed: counts only (ForgetOut). */
export interface ForgetOut {
  id: string;
  forgotten?: boolean;
  versions?: number;
  [key: string]: unknown;
}

/** An item of the session's working memory that matched the query (not a note: no id). */
export interface WorkingHit {
  hash?: string;
  content: string;
  score?: number;
  [key: string]: unknown;
}

export interface SearchResponse {
  results: MemoryHit[];
  /** The session's matching working-memory items, when the search named a session. */
  working?: WorkingHit[];
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
