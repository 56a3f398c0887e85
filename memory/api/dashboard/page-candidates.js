// Candidates: memories captured from low-trust origins (tool output, web pages, files,
// other chat participants) that wait for review and are not injected until approved.
// Operators and admins approve (as is or edited) or reject (erased everywhere); viewers
// may only look. Content is shown as text only (dom.js), never as markup.

import { get, post } from "./api.js";
import { needUser } from "./page-memories.js";
import { badge, clear, errorBox, fmtTime, h, loading, notice, pageHead,
  unavailable } from "./dom.js";

const TRUST_TONES = { high: "green", medium: "blue", low: "amber" };

function meta(note) {
  return h("div", { class: "conflict-head" },
    badge(note.origin, "violet"),
    note.origin_ref ? h("code", { class: "small" }, note.origin_ref) : null,
    badge(`${note.trust} trust`, TRUST_TONES[note.trust]),
    note.instruction_like ? badge("looks like an instruction", "red") : null,
    h("span", { class: "pill" }, note.kind),
    h("span", { class: "muted small" }, `${note.agent_id} · ${fmtTime(note.created_at)}`));
}

function reviewer(ctx, note, act) {
  if (!ctx.can.review) {
    return h("p", { class: "muted small" }, "Approving or rejecting needs an operator or " +
      "admin token.");
  }
  const edited = h("textarea", { name: "content", rows: 3 });
  edited.value = note.content;
  const editor = h("div", { hidden: true, style: "margin-top: 8px" }, edited,
    h("div", { class: "actions" }, h("button", { class: "primary",
      dataset: { action: "approve-edited" },
      onclick: () => act(note, "approve", { content: edited.value.trim() }) },
    "Approve edited")));
  const reason = h("input", { name: "reason", placeholder: "reason (optional)",
    autocomplete: "off", maxlength: 500 });
  return h("div", { class: "resolver" },
    h("div", { class: "actions" },
      h("button", { class: "primary", dataset: { action: "approve" },
        onclick: () => act(note, "approve", {}) }, "Approve"),
      h("button", { dataset: { action: "edit" },
        onclick: () => { editor.hidden = !editor.hidden; } }, "Edit"),
      reason,
      h("button", { class: "warn", dataset: { action: "reject" },
        onclick: () => act(note, "reject", reason.value.trim()
          ? { reason: reason.value.trim() } : {}) }, "Reject")),
    editor);
}

function candidateCard(ctx, note, act) {
  return h("article", { class: "card", dataset: { candidateId: note.id } },
    meta(note),
    h("blockquote", { style: "margin: 8px 0 12px" }, note.content),
    reviewer(ctx, note, act));
}

export async function renderCandidates(ctx, root) {
  root.append(pageHead("Candidates", "Memories from low-trust origins (tool output, web " +
    "pages, files, other chat participants) wait here for review: they are not injected " +
    "until approved. Rejecting erases a candidate everywhere it went."));
  if (!ctx.features.candidates) { root.append(unavailable("Candidate review")); return; }
  if (needUser(ctx, root, "candidates")) return;
  const status = h("div", { id: "candidates-status", role: "status" });
  const list = h("div", { id: "candidate-list" }, loading());
  root.append(status, list);
  const refresh = async () => {
    try {
      const notes = await get("/v1/candidates", { user_id: ctx.user });
      clear(list).append(...(notes.length
        ? notes.map((n) => candidateCard(ctx, n, act))
        : [notice(`No memory of ${ctx.user} waits for review.`, "muted")]));
    } catch (error) { clear(list).append(errorBox(error)); }
  };
  const act = async (note, action, extra) => {
    try {
      await post(`/v1/candidates/${note.id}/${action}`, { user_id: ctx.user, ...extra });
      const done = action === "reject" ? "Rejected and erased"
        : extra.content ? "Approved (edited)" : "Approved";
      clear(status).append(notice(`${done}: ${note.content.slice(0, 80)}`, "ok"));
    } catch (error) {
      clear(status).append(errorBox(error));
    }
    await refresh();
  };
  await refresh();
}
