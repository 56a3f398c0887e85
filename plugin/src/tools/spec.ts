/**
 * What the tool groups share: the tool names, the value sets of their parameters, the
 * spec shape each tool is written as, and the helpers that format a tool's answer.
 */
import type { MemoryHit, Provenance, WorkingHit } from "../client.js";
import type { ResolvedIdentity } from "../identity.js";
import type { Runtime } from "../runtime.js";
import type { ToolResult } from "../types.js";
import type { Params } from "./params.js";

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
  "memory_review",
] as const;

export type ToolName = (typeof TOOL_NAMES)[number];

export const VISIBILITIES = ["open", "scoped", "private", "user-only"] as const;
export const KINDS = ["stable", "preference", "episodic", "ephemeral", "decision", "knowledge"] as const;
export const TTLS = ["session", "short", "permanent"] as const;
export const LINK_KINDS = ["related", "derived_from", "supersedes", "contradicts"] as const;

export const MAX_WRITE_CHARS = 8_000;
export const MAX_QUERY_CHARS = 2_000;
const MAX_SNIPPET_CHARS = 500;

export const ID_PARAM = { type: "string", description: "Memory id, as shown in [brackets] by memory_query" };

export interface ToolSpec {
  name: ToolName;
  label: string;
  description: string;
  parameters: Record<string, unknown>;
  run: (rt: Runtime, id: ResolvedIdentity, p: Params, signal: AbortSignal | undefined) => Promise<ToolResult>;
}

/** JSON schema of a tool's parameters (no other properties allowed). */
export function schema(properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> {
  return { type: "object", additionalProperties: false, properties, ...(required.length ? { required } : {}) };
}

/** Options of a tool's request: the tool budget and the run's abort signal. */
export function callOpts(rt: Runtime, signal: AbortSignal | undefined): { timeoutMs: number; signal: AbortSignal | undefined } {
  return { timeoutMs: rt.config.toolTimeoutMs, signal };
}

export function snippet(text: unknown, max = MAX_SNIPPET_CHARS): string {
  const s = typeof text === "string" ? text : JSON.stringify(text);
  const oneLine = (s ?? "").replace(/\s+/g, " ").trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

export function text(message: string, details: unknown): ToolResult {
  return { content: [{ type: "text", text: message }], details };
}

/** Working items have no id (they are not notes yet), so they are listed without one. */
export function formatWorking(items: WorkingHit[]): string {
  return items.map((item) => `- ${snippet(item.content)}`).join("\n");
}

/** Who said it: `web https://…` (the origin, with its URL, path or name when known). */
export function originOf(p: Provenance): string | undefined {
  if (typeof p.origin !== "string" || !p.origin) return undefined;
  const ref = typeof p.origin_ref === "string" && p.origin_ref.trim() ? ` ${snippet(p.origin_ref, 120)}` : "";
  return `${p.origin}${ref}`;
}

/** `from web https://…, trust low` (trust only when it is not high). */
function provenanceOf(p: Provenance): string | undefined {
  const origin = originOf(p);
  const trust = typeof p.trust === "string" && p.trust && p.trust !== "high" ? `trust ${p.trust}` : undefined;
  return [origin ? `from ${origin}` : undefined, trust].filter(Boolean).join(", ") || undefined;
}

/** One line per hit in the service's order. No score is shown: the service orders its top
 * results for variety too (MMR), so a shown score would seem out of order; it stays in
 * the tool's details. */
export function formatHits(hits: MemoryHit[]): string {
  return hits
    .map((hit, i) => {
      const meta = [hit.kind, hit.domain ?? undefined].filter(Boolean).join(", ");
      const when = typeof hit.occurred_at === "string" && hit.occurred_at ? `@${hit.occurred_at.slice(0, 10)}` : "";
      const what = [meta, when].filter(Boolean).join(" ");
      const info = [what, provenanceOf(hit)].filter(Boolean).join("; ");
      return `${i + 1}. [${hit.id}] ${snippet(hit.content)}${info ? ` (${info})` : ""}`;
    })
    .join("\n");
}
