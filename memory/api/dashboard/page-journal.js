// Journal: what each captured turn of the chosen user became (stored, merged, revised, a
// candidate, skipped as chatter, dropped, failed) and why, and what each context answer
// injected, with scores and why. The server leaves out every memory the viewer may not
// read and returns no text of a turn or a memory: this page shows ids, links and reasons.

import { get } from "./api.js";
import { agentOptions, needUser } from "./page-memories.js";
import { badge, card, clear, errorBox, field, fmtTime, h, loading, notice, num, pageHead,
  select, shortId, table, unavailable } from "./dom.js";

const OUTCOME_TONES = {
  stored: "green", merged: "violet", revised: "blue", candidate: "amber", chatter: "grey",
  dropped: "red", failed: "red", waiting: "blue", pending: "blue", invalidated: "amber",
  hidden: "grey", forgotten: "grey", gone: "grey", several: "violet", command: "grey",
  acknowledgement: "grey", echo: "grey",
};

const outcome = (code) => badge(code, OUTCOME_TONES[code] || "grey");
const noteLink = (id) => h("a", { href: `#/note/${id}`, class: "note-link" },
  h("code", {}, shortId(id)));

function turnWhy(turn) {
  if (!turn.notes.length) return h("span", { class: "muted" }, turn.why);
  return h("div", {}, turn.notes.map((n) => h("div", { dataset: { noteId: n.note_id } },
    noteLink(n.note_id), " ", outcome(n.outcome), " ", n.why)));
}

function turnsTable(turns) {
  const columns = [
    { label: "#", className: "num", render: (t) => t.seq },
    { label: "Captured", className: "nowrap", render: (t) => fmtTime(t.captured_at) },
    { label: "Session", render: (t) => h("code", {}, t.session_id) },
    { label: "Agent", render: (t) => t.agent_id },
    { label: "Role · origin", render: (t) => `${t.role} · ${t.origin}` +
      (t.origin_ref ? ` ${t.origin_ref}` : "") },
    { label: "Status", render: (t) => h("span", {}, badge(t.status),
      t.decision ? ` ${t.decision}` : "", t.error ? ` (${t.error})` : "") },
    { label: "Outcome", render: (t) => outcome(t.outcome) },
    { label: "Why", className: "content-cell", render: turnWhy },
  ];
  return table(columns, turns, { empty: "No captured turns.",
    rowAttrs: (t) => ({ dataset: { turnId: t.episode_id } }) });
}

function injectionCard(entry) {
  const columns = [
    { label: "Line", className: "num", render: (m) => m.rank },
    { label: "Memory", render: (m) => noteLink(m.note_id) },
    { label: "Score", className: "num", render: (m) => num(m.score, 3) },
    { label: "Origin · trust", render: (m) => h("span", {}, `${m.origin} · `,
      badge(m.trust, m.trust === "high" ? "green" : "amber"),
      m.candidate ? badge("candidate", "amber") : null) },
    { label: "Why", className: "content-cell", render: (m) => m.why },
  ];
  return h("article", { class: "card", dataset: { injectionId: entry.injection_id } },
    h("div", { class: "context-meta" },
      h("span", { class: "pill" }, fmtTime(entry.at)),
      h("span", { class: "pill" }, entry.agent_id ? `agent ${entry.agent_id}` : "user level"),
      h("span", { class: "pill" }, entry.session_id ? `session ${entry.session_id}` : "no session"),
      h("span", { class: "pill" }, `${entry.memories.length} memories`)),
    entry.hidden ? notice("Some memories of this block are not visible to you.", "muted") : null,
    table(columns, entry.memories, { empty: "No memory of this block is visible to you." }));
}

function filters(ctx, agents) {
  const p = ctx.params;
  const form = h("form", { class: "filters", id: "journal-filters", onsubmit: (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const name of ["session_id", "agent_id", "limit"]) {
      const value = form.elements[name].value.trim();
      if (value) query.set(name, value);
    }
    ctx.go(`#/journal?${query}`);
  } },
  field("Session", h("input", { id: "journal-session", name: "session_id",
    value: p.get("session_id") || "", placeholder: "all sessions", autocomplete: "off" })),
  field("As agent", select("journal-agent", [["", "— user level (sees all) —"],
    ...agents.map((a) => [a, a])], p.get("agent_id") || "", "agent_id")),
  field("Newest", h("input", { id: "journal-limit", name: "limit", type: "number", min: 1,
    max: 500, value: p.get("limit") || 50 })),
  h("button", { id: "journal-submit", type: "submit", class: "primary" }, "Show"));
  return form;
}

export async function renderJournal(ctx, root) {
  root.append(pageHead("Journal", "Why each captured turn was or was not remembered, and " +
    "why each memory was injected into a prompt. Ids and reasons only: open a memory to " +
    "read it."));
  if (!ctx.features.journal) { root.append(unavailable("The turn journal")); return; }
  if (needUser(ctx, root, "the journal")) return;
  const agents = await agentOptions(ctx);
  const out = h("div", { id: "journal-output" }, loading());
  root.append(card(null, filters(ctx, agents)), out);
  const query = { user_id: ctx.user, session_id: ctx.params.get("session_id") || undefined,
    agent_id: ctx.params.get("agent_id") || undefined,
    limit: ctx.params.get("limit") || undefined };
  try {
    const data = await get("/v1/journal", query);
    clear(out).append(
      card(`Turns (${data.turns.length})`, h("div", { id: "journal-turns" },
        turnsTable(data.turns))),
      card(`Injections (${data.injections.length})`, h("div", { id: "journal-injections" },
        data.injections.length ? data.injections.map(injectionCard)
          : h("p", { class: "empty" }, "No context answer injected memories (dry runs are " +
            "not recorded; entries are pruned after the retention period)."))));
  } catch (error) {
    clear(out).append(errorBox(error));
  }
}
