/** Tools about the user's memory as a whole: memory_stats, memory_search_agents, memory_consolidate. */
import { reqString } from "./params.js";
import { MAX_QUERY_CHARS, type ToolSpec, callOpts, schema, snippet, text } from "./spec.js";

export const memoryStats: ToolSpec = {
  name: "memory_stats",
  label: "Memory stats",
  description: "Show how many memories are stored about the user (by kind, status, etc.).",
  parameters: schema({}),
  async run(rt, id, _p, signal) {
    const res = await rt.client.stats(id.userId, id.agentId, callOpts(rt, signal));
    const parts: string[] = [];
    for (const [key, value] of Object.entries(res ?? {})) {
      if (typeof value === "number" || typeof value === "string" || typeof value === "boolean") parts.push(`${key}: ${value}`);
      else if (value && typeof value === "object") parts.push(`${key}: ${snippet(value, 200)}`);
    }
    return text(parts.length ? `Memory stats\n${parts.join("\n")}` : "No memory stats available.", res);
  },
};

type AgentHit = { agent_id: string; score?: number; note_count?: number; topics?: unknown };

/** One line per agent: `1. agent (score, notes; topics: ...)`. */
function formatAgent(a: AgentHit, i: number): string {
  const topics = Array.isArray(a.topics) ? a.topics.slice(0, 5).map((t) => (typeof t === "string" ? t : snippet(t, 40))).join(", ") : "";
  const meta = [
    typeof a.score === "number" ? `score ${a.score.toFixed(2)}` : undefined,
    typeof a.note_count === "number" ? `${a.note_count} notes` : undefined,
    topics ? `topics: ${topics}` : undefined,
  ]
    .filter(Boolean)
    .join("; ");
  return `${i + 1}. ${a.agent_id}${meta ? ` (${meta})` : ""}`;
}

export const memorySearchAgents: ToolSpec = {
  name: "memory_search_agents",
  label: "Find expert agents",
  description: "Find which other agents know most about a topic for this user (the transactive memory index).",
  parameters: schema({ query: { type: "string", description: "Topic" } }, ["query"]),
  async run(rt, id, p, signal) {
    const query = reqString(p, "query", MAX_QUERY_CHARS);
    const res = await rt.client.searchAgents(id, query, callOpts(rt, signal));
    const agents = Array.isArray(res.agents) ? res.agents : [];
    if (agents.length === 0) return text(`No agent knows about "${snippet(query, 100)}" yet.`, res);
    return text(`Agents that know about "${snippet(query, 100)}":\n${agents.map(formatAgent).join("\n")}`, res);
  },
};

export const memoryConsolidate: ToolSpec = {
  name: "memory_consolidate",
  label: "Consolidate memory",
  description: "Ask the memory service to consolidate the user's memories now (normally done nightly).",
  parameters: schema({}),
  async run(rt, id, _p, signal) {
    const res = await rt.client.consolidate(id.userId, callOpts(rt, signal));
    return text("Consolidation queued; results appear in memory within minutes.", res ?? {});
  },
};
