/** Tools that store and recall memories: memory_write, memory_query, memory_get_context. */
import { optBool, optEnum, optInt, optString, optStringList, reqString } from "./params.js";
import { KINDS, MAX_QUERY_CHARS, MAX_WRITE_CHARS, TTLS, type ToolSpec, VISIBILITIES, callOpts, formatHits, formatWorking, schema, snippet, text } from "./spec.js";

export const memoryWrite: ToolSpec = {
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
    const res = await rt.client.writeMemory(id, body, callOpts(rt, signal));
    // The service answers with the id the memory is stored under (pin or forget it by it).
    const noteIds = res.note_ids?.length ? res.note_ids : res.note_id ? [res.note_id] : [];
    const ids = noteIds.length ? ` as ${noteIds.join(", ")}` : "";
    return text(`Stored${ids}. It will be available to recall shortly (episode ${res.episode_id ?? "queued"}).`, res);
  },
};

export const memoryQuery: ToolSpec = {
  name: "memory_query",
  label: "Recall",
  description:
    "Search the user's long-term memory (facts, preferences, past conversations) and return the most relevant memories with their ids; matching items of this session's working memory (e.g. earlier tool results) are listed after them.",
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
    const res = await rt.client.search(id, body, callOpts(rt, signal));
    const hits = (Array.isArray(res.results) ? res.results : []).slice(0, topK);
    const working = Array.isArray(res.working) ? res.working : [];
    const details = { ...res, results: hits, working };
    const found = hits.length
      ? `Found ${hits.length} ${hits.length === 1 ? "memory" : "memories"}:\n${formatHits(hits)}`
      : `No ${working.length ? "long-term " : ""}memories found for "${snippet(query, 100)}".`;
    if (working.length === 0) return text(found, details);
    return text(`${found}\nFrom this session (not yet in long-term memory):\n${formatWorking(working)}`, details);
  },
};

export const memoryGetContext: ToolSpec = {
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
};
