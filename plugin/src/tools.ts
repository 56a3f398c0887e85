/**
 * The eleven memory tools (the ten of the MUMA seed, and memory_review).
 *
 * Identity (user, agent, session) comes from the tool factory context (OpenClaw's trusted
 * sender and session), resolved by identity.ts; no tool has a user/agent/session parameter
 * and any such field the model sends is ignored. Each tool returns a short text for the
 * model plus `details` (the service's JSON). Failures throw an Error with a one-line
 * message, which OpenClaw reports to the model as a tool error; a tool never hangs longer
 * than `toolTimeoutMs`.
 *
 * The tools themselves live in tools/: memories.ts (write, query, context), curation.ts
 * (forget, pin, visibility, link, review) and service.ts (stats, agents, consolidate).
 */
import { MumaError } from "./client.js";
import { toolIdentityInput } from "./identity.js";
import type { Runtime } from "./runtime.js";
import { memoryForget, memoryLink, memoryPin, memoryReview, memorySetVisibility } from "./tools/curation.js";
import { memoryGetContext, memoryQuery, memoryWrite } from "./tools/memories.js";
import { ParamError, asParams } from "./tools/params.js";
import { memoryConsolidate, memorySearchAgents, memoryStats } from "./tools/service.js";
import { TOOL_NAMES, type ToolSpec } from "./tools/spec.js";
import type { AgentTool, ToolContext, ToolResult } from "./types.js";

export { KINDS, LINK_KINDS, TOOL_NAMES, TTLS, type ToolName, VISIBILITIES } from "./tools/spec.js";

/** In TOOL_NAMES order. */
const SPECS: ToolSpec[] = [
  memoryWrite,
  memoryQuery,
  memoryForget,
  memoryPin,
  memorySetVisibility,
  memoryGetContext,
  memoryStats,
  memoryLink,
  memorySearchAgents,
  memoryConsolidate,
  memoryReview,
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
        if (err.status === 409) return new Error(`${name}: conflict${err.detail ? ` (${err.detail})` : ""}.`);
        return new Error(`${name}: ${err.message}`);
      default:
        return new Error(`${name}: ${err.message}`);
    }
  }
  return new Error(`${name}: ${err instanceof Error ? err.message : String(err)}`);
}

/** Build the tools bound to one tool context. */
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
