/**
 * The ten memory tools (names from the MUMA seed).
 *
 * Identity (user, agent, session) comes from the tool factory context (OpenClaw's trusted
 * sender and session), resolved by identity.ts; no tool has a user/agent/session parameter
 * and any such field the model sends is ignored. Each tool returns a short text for the
 * model plus `details` (the service's JSON). Failures throw an Error with a one-line
 * message, which OpenClaw reports to the model as a tool error; a tool never hangs longer
 * than `toolTimeoutMs`.
 */
import { MumaError, type MemoryHit } from "./client.js";
import { toolIdentityInput, type ResolvedIdentity } from "./identity.js";
import type { Runtime } from "./runtime.js";
import type { AgentTool, ToolContext, ToolResult } from "./types.js";

export const TOOL_NAMES = [
  "memory_write",
  "memory_query",
  "memory_forget",
  "memory_pin",
  "memory_set_visibility",
  "memory_get_context",
  "memory_stats",
  "memory_link",
  "memory_search_agents",
  "memory_consolidate",
] as const;

export type ToolName = (typeof TOOL_NAMES)[number];

export const VISIBILITIES = ["open", "scoped", "private", "user-only"] as const;
export const KINDS = ["stable", "preference", "episodic", "ephemeral", "decision", "knowledge"] as const;
export const TTLS = ["session", "short", "permanent"] as const;
export const LINK_KINDS = ["related", "derived_from", "supersedes", "contradicts"] as const;

const MAX_WRITE_CHARS = 8_000;
const MAX_QUERY_CHARS = 2_000;
const MAX_SNIPPET_CHARS = 500;

class ParamError extends Error {}

type Params = Record<string, unknown>;

function asParams(raw: unknown): Params {
  if (raw && typeof raw === "object" && !Array.isArray(raw)) return raw as Params;
  if (typeof raw === "string") {
    try {
      const parsed = JSON.parse(raw) as unknown;
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as Params;
    } catch {
      /* fall through */
    }
  }
  return {};
}

function reqString(p: Params, key: string, max = 500): string {
  const value = p[key];
  if (typeof value !== "string" || value.trim() === "") throw new ParamError(`parameter "${key}" is required (a non-empty string)`);
  const trimmed = value.trim();
  if (trimmed.length > max) throw new ParamError(`parameter "${key}" is too long (max ${max} characters)`);
  return trimmed;
}

function optString(p: Params, key: string, max = 200): string | undefined {
  const value = p[key];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw new ParamError(`parameter "${key}" must be a string`);
  if (value.length > max) throw new ParamError(`parameter "${key}" is too long (max ${max} characters)`);
  return value.trim();
}

function optEnum<T extends string>(p: Params, key: string, allowed: readonly T[]): T | undefined {
  const value = optString(p, key);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ParamError(`parameter "${key}" must be one of: ${allowed.join(", ")}`);
  }
  return value as T;
}

function optBool(p: Params, key: string): boolean | undefined {
  const value = p[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value === "boolean") return value;
  if (value === "true") return true;
  if (value === "false") return false;
  throw new ParamError(`parameter "${key}" must be a boolean`);
}

function optInt(p: Params, key: string): number | undefined {
  const value = p[key];
  if (value === undefined || value === null || value === "") return undefined;
  const n = typeof value === "string" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isFinite(n)) throw new ParamError(`parameter "${key}" must be a number`);
  return Math.trunc(n);
}

function optStringList(p: Params, key: string, max = 20): string[] | undefined {
  const value = p[key];
  if (value === undefined || value === null) return undefined;
  const list = typeof value === "string" ? value.split(",") : value;
  if (!Array.isArray(list) || list.some((v) => typeof v !== "string")) {
    throw new ParamError(`parameter "${key}" must be a list of strings`);
  }
  const cleaned = (list as string[]).map((v) => v.trim()).filter(Boolean);
  if (cleaned.length > max) throw new ParamError(`parameter "${key}" has too many entries (max ${max})`);
  return cleaned.length ? cleaned : undefined;
}

function snippet(text: unknown, max = MAX_SNIPPET_CHARS): string {
  const s = typeof text === "string" ? text : JSON.stringify(text);
  const oneLine = (s ?? "").replace(/\s+/g, " ").trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

function text(message: string, details: unknown): ToolResult {
  return { content: [{ type: "text", text: message }], details };
}

function formatHits(hits: MemoryHit[]): string {
  return hits
    .map((hit, i) => {
      const meta = [hit.kind, hit.domain ?? undefined, typeof hit.score === "number" ? `score ${hit.score.toFixed(2)}` : undefined]
        .filter(Boolean)
        .join(", ");
      const when = typeof hit.occurred_at === "string" && hit.occurred_at ? ` @${hit.occurred_at.slice(0, 10)}` : "";
      return `${i + 1}. [${hit.id}] ${snippet(hit.content)}${meta ? ` (${meta}${when})` : when ? ` (${when.slice(1)})` : ""}`;
    })
    .join("\n");
}

const ID_PARAM = { type: "string", description: "Memory id, as shown in [brackets] by memory_query" };

interface ToolSpec {
  name: ToolName;
  label: string;
  description: string;
  parameters: Record<string, unknown>;
  run: (rt: Runtime, id: ResolvedIdentity, p: Params, signal: AbortSignal | undefined) => Promise<ToolResult>;
}

function schema(properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> {
  return { type: "object", additionalProperties: false, properties, ...(required.length ? { required } : {}) };
}

const SPECS: ToolSpec[] = [
  {
    name: "memory_write",
    label: "Remember",
    description:
      "Store a fact, preference or decision about the user in long-term memory so it can be recalled in later conversations. Use for things worth keeping; ordinary conversation is captured automatically.",
    parameters: schema(
      {
        content: { type: "string", description: "The memory, as a self-contained sentence" },
        kind: { type: "string", enum: [...KINDS], description: "What sort of memory this is" },
        domain: { type: "string", description: "Topic area, e.g. health, finance, travel" },
        visibility: {
          type: "string",
          enum: [...VISIBILITIES],
          description: "Who may see it: open (all agents), scoped (agents of its domain), private (this agent), user-only",
        },
        tags: { type: "array", items: { type: "string" } },
        pinned: { type: "boolean", description: "Pinned memories never decay" },
        ttl: { type: "string", enum: [...TTLS], description: "How long to keep it" },
      },
      ["content"],
    ),
    async run(rt, id, p, signal) {
      const body: Record<string, unknown> = { content: reqString(p, "content", MAX_WRITE_CHARS) };
      const kind = optEnum(p, "kind", KINDS);
      const domain = optString(p, "domain", 100);
      const visibility = optEnum(p, "visibility", VISIBILITIES);
      const tags = optStringList(p, "tags");
      const pinned = optBool(p, "pinned");
      const ttl = optEnum(p, "ttl", TTLS);
      if (kind) body.kind = kind;
      if (domain) body.domain = domain;
      if (visibility) body.visibility = visibility;
      if (tags) body.tags = tags;
      if (pinned !== undefined) body.pinned = pinned;
      if (ttl) body.ttl = ttl;
      const res = await rt.client.writeMemory(id, body, { timeoutMs: rt.config.toolTimeoutMs, signal });
      const ids = res.note_ids?.length ? ` as ${res.note_ids.join(", ")}` : "";
      return text(`Stored${ids}. It will be available to recall shortly (episode ${res.episode_id ?? "queued"}).`, res);
    },
  },
  {
    name: "memory_query",
    label: "Recall",
    description:
      "Search the user's long-term memory (facts, preferences, past conversations) and return the most relevant memories with their ids.",
    parameters: schema(
      {
        query: { type: "string", description: "What to look for, in natural language" },
        top_k: { type: "integer", minimum: 1, maximum: 50, description: "How many results (capped by the plugin's maxTopK)" },
        kinds: { type: "array", items: { type: "string", enum: [...KINDS] } },
        domains: { type: "array", items: { type: "string" } },
      },
      ["query"],
    ),
    async run(rt, id, p, signal) {
      const query = reqString(p, "query", MAX_QUERY_CHARS);
      const requested = optInt(p, "top_k");
      const topK = Math.max(1, Math.min(requested ?? rt.config.maxTopK, rt.config.maxTopK));
      const body: { query: string; top_k: number; kinds?: string[]; domains?: string[] } = { query, top_k: topK };
      const kinds = optStringList(p, "kinds");
      const domains = optStringList(p, "domains");
      if (kinds) body.kinds = kinds;
      if (domains) body.domains = domains;
      const res = await rt.client.search(id, body, { timeoutMs: rt.config.toolTimeoutMs, signal });
      const hits = (Array.isArray(res.results) ? res.results : []).slice(0, topK);
      if (hits.length === 0) return text(`No memories found for "${snippet(query, 100)}".`, { ...res, results: hits });
      return text(`Found ${hits.length} ${hits.length === 1 ? "memory" : "memories"}:\n${formatHits(hits)}`, { ...res, results: hits });
    },
  },
  {
    name: "memory_forget",
    label: "Forget",
    description: "Forget (delete) one memory by id, e.g. when the user asks you to forget something or it is wrong.",
    parameters: schema({ id: ID_PARAM }, ["id"]),
    async run(rt, id, p, signal) {
      const memoryId = reqString(p, "id", 200);
      const res = await rt.client.forget(id, memoryId, { timeoutMs: rt.config.toolTimeoutMs, signal });
      return text(`Forgot memory ${memoryId}.`, res ?? {});
    },
  },
  {
    name: "memory_pin",
    label: "Pin memory",
    description: "Pin a memory so it never decays (or unpin it with pinned=false).",
    parameters: schema({ id: ID_PARAM, pinned: { type: "boolean", description: "true to pin (default), false to unpin" } }, ["id"]),
    async run(rt, id, p, signal) {
      const memoryId = reqString(p, "id", 200);
      const pinned = optBool(p, "pinned") ?? true;
      const res = await rt.client.patchMemory(id, memoryId, { pinned }, { timeoutMs: rt.config.toolTimeoutMs, signal });
      return text(`${pinned ? "Pinned" : "Unpinned"} memory ${memoryId}.`, res);
    },
  },
  {
    name: "memory_set_visibility",
    label: "Set memory visibility",
    description:
      "Change who may see a memory: open (every agent), scoped (agents working in its domain), private (only this agent), user-only (no agent).",
    parameters: schema({ id: ID_PARAM, visibility: { type: "string", enum: [...VISIBILITIES] } }, ["id", "visibility"]),
    async run(rt, id, p, signal) {
      const memoryId = reqString(p, "id", 200);
      const visibility = optEnum(p, "visibility", VISIBILITIES);
      if (!visibility) throw new ParamError(`parameter "visibility" is required (one of: ${VISIBILITIES.join(", ")})`);
      const res = await rt.client.patchMemory(id, memoryId, { visibility }, { timeoutMs: rt.config.toolTimeoutMs, signal });
      return text(`Memory ${memoryId} is now ${visibility}.`, res);
    },
  },
  {
    name: "memory_get_context",
    label: "Memory context",
    description:
      "Get the compact block of memories most relevant to a topic or question (the same block that is injected automatically before each turn).",
    parameters: schema(
      {
        prompt: { type: "string", description: "Topic or question to build the context for" },
        max_tokens: { type: "integer", minimum: 50, maximum: 8000 },
      },
      ["prompt"],
    ),
    async run(rt, id, p, signal) {
      const prompt = reqString(p, "prompt", MAX_QUERY_CHARS);
      const maxTokens = optInt(p, "max_tokens");
      const opts: { timeoutMs: number; maxTokens?: number; serverTimeoutMs: number; signal?: AbortSignal } = {
        timeoutMs: rt.config.toolTimeoutMs,
        serverTimeoutMs: Math.max(50, rt.config.toolTimeoutMs - 100),
      };
      if (maxTokens !== undefined) opts.maxTokens = maxTokens;
      if (signal) opts.signal = signal;
      const res = await rt.client.context(id, prompt, opts);
      const block = typeof res.context === "string" ? res.context.trim() : "";
      return text(block || "No relevant memories.", res);
    },
  },
  {
    name: "memory_stats",
    label: "Memory stats",
    description: "Show how many memories are stored about the user (by kind, status, etc.).",
    parameters: schema({}),
    async run(rt, id, _p, signal) {
      const res = await rt.client.stats(id.userId, id.agentId, { timeoutMs: rt.config.toolTimeoutMs, signal });
      const parts: string[] = [];
      for (const [key, value] of Object.entries(res ?? {})) {
        if (typeof value === "number" || typeof value === "string" || typeof value === "boolean") parts.push(`${key}: ${value}`);
        else if (value && typeof value === "object") parts.push(`${key}: ${snippet(value, 200)}`);
      }
      return text(parts.length ? `Memory stats\n${parts.join("\n")}` : "No memory stats available.", res);
    },
  },
  {
    name: "memory_link",
    label: "Link memories",
    description: "Link two memories (related, derived_from, supersedes, contradicts).",
    parameters: schema(
      {
        source_id: { type: "string" },
        target_id: { type: "string" },
        kind: { type: "string", enum: [...LINK_KINDS], description: "Default: related" },
      },
      ["source_id", "target_id"],
    ),
    async run(rt, id, p, signal) {
      const source = reqString(p, "source_id", 200);
      const target = reqString(p, "target_id", 200);
      const kind = optEnum(p, "kind", LINK_KINDS) ?? "related";
      const res = await rt.client.link(id, { source_id: source, target_id: target, kind }, { timeoutMs: rt.config.toolTimeoutMs, signal });
      return text(`Linked ${source} → ${target} (${kind}).`, res ?? {});
    },
  },
  {
    name: "memory_search_agents",
    label: "Find expert agents",
    description: "Find which other agents know most about a topic for this user (the transactive memory index).",
    parameters: schema({ query: { type: "string", description: "Topic" } }, ["query"]),
    async run(rt, id, p, signal) {
      const query = reqString(p, "query", MAX_QUERY_CHARS);
      const res = await rt.client.searchAgents(id, query, { timeoutMs: rt.config.toolTimeoutMs, signal });
      const agents = Array.isArray(res.agents) ? res.agents : [];
      if (agents.length === 0) return text(`No agent knows about "${snippet(query, 100)}" yet.`, res);
      const lines = agents.map((a, i) => {
        const topics = Array.isArray(a.topics) ? a.topics.slice(0, 5).map((t) => (typeof t === "string" ? t : snippet(t, 40))).join(", ") : "";
        const meta = [
          typeof a.score === "number" ? `score ${a.score.toFixed(2)}` : undefined,
          typeof a.note_count === "number" ? `${a.note_count} notes` : undefined,
          topics ? `topics: ${topics}` : undefined,
        ]
          .filter(Boolean)
          .join("; ");
        return `${i + 1}. ${a.agent_id}${meta ? ` (${meta})` : ""}`;
      });
      return text(`Agents that know about "${snippet(query, 100)}":\n${lines.join("\n")}`, res);
    },
  },
  {
    name: "memory_consolidate",
    label: "Consolidate memory",
    description: "Ask the memory service to consolidate the user's memories now (normally done nightly).",
    parameters: schema({}),
    async run(rt, id, _p, signal) {
      const res = await rt.client.consolidate(id.userId, { timeoutMs: rt.config.toolTimeoutMs, signal });
      return text("Consolidation queued; results appear in memory within minutes.", res ?? {});
    },
  },
];

export const NO_IDENTITY_MESSAGE =
  "MUMA memory cannot identify the user of this conversation (no channel sender, no user:<id> session key, no defaultUserId configured), so memory is not available here.";

function toolError(name: string, err: unknown): Error {
  if (err instanceof ParamError) return new Error(`${name}: ${err.message}`);
  if (err instanceof MumaError) {
    switch (err.kind) {
      case "unreachable":
      case "timeout":
      case "aborted":
        return new Error(`${name}: the memory service is unavailable right now (${err.message}). Continue without it.`);
      case "http":
        if (err.status === 404) return new Error(`${name}: not found${err.detail ? ` (${err.detail})` : ""}.`);
        if (err.status === 403) return new Error(`${name}: not allowed${err.detail ? ` (${err.detail})` : ""}.`);
        return new Error(`${name}: ${err.message}`);
      default:
        return new Error(`${name}: ${err.message}`);
    }
  }
  return new Error(`${name}: ${err instanceof Error ? err.message : String(err)}`);
}

/** Build the ten tools bound to one tool context. */
export function buildTools(rt: Runtime, ctx: ToolContext | undefined): AgentTool[] {
  const input = toolIdentityInput(ctx as Record<string, unknown> | undefined);
  return SPECS.map((spec) => ({
    name: spec.name,
    label: spec.label,
    description: spec.description,
    parameters: spec.parameters,
    async execute(_toolCallId: string, rawParams: unknown, signal?: AbortSignal): Promise<ToolResult> {
      const id = rt.identity.resolve(input);
      if (!id) throw new Error(`${spec.name}: ${NO_IDENTITY_MESSAGE}`);
      try {
        return await spec.run(rt, id, asParams(rawParams), signal);
      } catch (err) {
        const error = toolError(spec.name, err);
        rt.logger.warn(`[muma] tool ${error.message}`);
        throw error;
      }
    },
  }));
}

/** Register the tools as one factory (identity comes from each run's tool context). */
export function registerTools(rt: Runtime, registerTool: (factory: (ctx: ToolContext) => AgentTool[], opts: { names: string[] }) => void): void {
  registerTool((ctx: ToolContext) => buildTools(rt, ctx), { names: [...TOOL_NAMES] });
}
