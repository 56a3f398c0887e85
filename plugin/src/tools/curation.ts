/** Tools that curate one memory: memory_forget, memory_pin, memory_set_visibility, memory_link. */
import { ParamError, optBool, optEnum, reqString } from "./params.js";
import { ID_PARAM, LINK_KINDS, type ToolSpec, VISIBILITIES, callOpts, schema, text } from "./spec.js";

export const memoryForget: ToolSpec = {
  name: "memory_forget",
  label: "Forget",
  description: "Forget (delete) one memory by id, e.g. when the user asks you to forget something or it is wrong.",
  parameters: schema({ id: ID_PARAM }, ["id"]),
  async run(rt, id, p, signal) {
    const memoryId = reqString(p, "id", 200);
    const res = await rt.client.forget(id, memoryId, callOpts(rt, signal));
    return text(`Forgot memory ${memoryId}.`, res ?? {});
  },
};

export const memoryPin: ToolSpec = {
  name: "memory_pin",
  label: "Pin memory",
  description: "Pin a memory so it never decays (or unpin it with pinned=false).",
  parameters: schema({ id: ID_PARAM, pinned: { type: "boolean", description: "true to pin (default), false to unpin" } }, ["id"]),
  async run(rt, id, p, signal) {
    const memoryId = reqString(p, "id", 200);
    const pinned = optBool(p, "pinned") ?? true;
    const res = await rt.client.patchMemory(id, memoryId, { pinned }, callOpts(rt, signal));
    return text(`${pinned ? "Pinned" : "Unpinned"} memory ${memoryId}.`, res);
  },
};

export const memorySetVisibility: ToolSpec = {
  name: "memory_set_visibility",
  label: "Set memory visibility",
  description:
    "Change who may see a memory: open (every agent), scoped (agents working in its domain), private (only this agent), user-only (no agent).",
  parameters: schema({ id: ID_PARAM, visibility: { type: "string", enum: [...VISIBILITIES] } }, ["id", "visibility"]),
  async run(rt, id, p, signal) {
    const memoryId = reqString(p, "id", 200);
    const visibility = optEnum(p, "visibility", VISIBILITIES);
    if (!visibility) throw new ParamError(`parameter "visibility" is required (one of: ${VISIBILITIES.join(", ")})`);
    const res = await rt.client.patchMemory(id, memoryId, { visibility }, callOpts(rt, signal));
    return text(`Memory ${memoryId} is now ${visibility}.`, res);
  },
};

export const memoryLink: ToolSpec = {
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
    const res = await rt.client.link(id, { source_id: source, target_id: target, kind }, callOpts(rt, signal));
    return text(`Linked ${source} → ${target} (${kind}).`, res ?? {});
  },
};
