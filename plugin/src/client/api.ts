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
