// Conflicts: pairs of memories that may disagree; operators keep one, both, or merge.

import { get, post } from "./api.js";
import { needUser } from "./page-memories.js";
import { badge, clear, errorBox, fmtTime, h, notice, num, select, toast,
  unavailable } from "./dom.js";

function side(label, note) {
  return h("div", { class: "conflict-side" },
    h("div", { class: "side-label" }, label, h("span", { class: "muted small" },
      ` · ${note.agent_id} · ${note.kind}`), note.valid_to ? badge("closed") : badge(note.status)),
    h("a", { href: `#/note/${note.id}`, class: "note-link" }, note.content));
}

function resolver(ctx, conflict, refresh) {
  if (conflict.status !== "open") {
    const keep = conflict.resolution && conflict.resolution.keep;
    return h("p", { class: "muted small" }, `Resolved ${fmtTime(conflict.resolved_at)}`,
      keep ? ` · kept ${keep}` : "");
  }
  if (!ctx.can.resolve || !ctx.features.resolve_conflicts) {
    return h("p", { class: "muted small" }, "Resolving needs an operator or admin token.");
  }
  const merged = h("textarea", { rows: 2, placeholder: "Merged wording (optional): becomes " +
    "a new version of the kept memory" });
  const resolve = async (keep) => {
    const body = { user_id: ctx.user, keep };
    if (merged.value.trim()) body.merged_content = merged.value.trim();
    try {
      await post(`/v1/conflicts/${conflict.id}/resolve`, body);
      toast("Conflict resolved", "ok");
      refresh();
    } catch (error) { toast(error.detail || String(error), "error"); }
  };
  return h("div", { class: "resolver" }, merged, h("div", { class: "actions" },
    h("button", { onclick: () => resolve("a"), dataset: { keep: "a" } }, "Keep A"),
    h("button", { onclick: () => resolve("b"), dataset: { keep: "b" } }, "Keep B"),
    h("button", { class: "ghost", onclick: () => resolve("both"), dataset: { keep: "both" } },
      "Keep both")));
}

function conflictCard(ctx, conflict, refresh) {
  return h("article", { class: "card conflict", dataset: { conflictId: conflict.id } },
    h("div", { class: "conflict-head" }, badge(conflict.classification),
      h("span", { class: "pill" }, `similarity ${num(conflict.similarity, 2)}`),
      conflict.cross_agent ? h("span", { class: "pill" }, "across agents") : null,
      h("span", { class: "muted small" }, fmtTime(conflict.created_at))),
    conflict.reason ? h("p", { class: "muted small" }, conflict.reason) : null,
    h("div", { class: "conflict-pair" }, side("A", conflict.a), side("B", conflict.b)),
    resolver(ctx, conflict, refresh));
}

export async function renderConflicts(ctx, root) {
  root.append(h("h1", {}, "Conflicts"), h("p", { class: "lead" }, "Memories about the same ",
    "subject that may disagree, found by the nightly sleep cycle. Resolving closes the ",
    "losing version (bi-temporal history keeps it)."));
  if (!ctx.features.conflicts) { root.append(unavailable("Conflict review")); return; }
  if (needUser(ctx, root, "conflicts")) return;
  const status = ctx.params.get("status") || "open";
  const chooser = select("conflict-status", [["open", "open"], ["resolved", "resolved"]], status);
  chooser.addEventListener("change", () => ctx.go(`#/conflicts?status=${chooser.value}`));
  const list = h("div", { id: "conflict-list" });
  root.append(h("div", { class: "page-actions" }, h("label", { class: "inline" }, "Show ",
    chooser)), list);
  const refresh = async () => {
    try {
      const conflicts = await get("/v1/conflicts", { user_id: ctx.user, status });
      clear(list).append(...(conflicts.length
        ? conflicts.map((c) => conflictCard(ctx, c, refresh))
        : [notice(`No ${status} conflicts for ${ctx.user}.`, "muted")]));
    } catch (error) { clear(list).append(errorBox(error)); }
  };
  await refresh();
}
