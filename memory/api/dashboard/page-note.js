// One memory: attributes, activation over time, versions, links, provenance, audit trail,
// and archive/restore for operators (the server checks the role again).

import { ApiError, get, post } from "./api.js";
import { lineChart } from "./charts.js";
import { ago, append, badge, card, clear, contextLine, fmtTime, h, num, provenanceBadges,
  shortId, table, toast } from "./dom.js";

function noteQuery(ctx) {
  const agent = ctx.params.get("agent_id");
  return agent ? { user_id: ctx.user, agent_id: agent } : { user_id: ctx.user };
}

function meta(note) {
  const rows = [
    ["Author", note.agent_id], ["Session", note.session_id || "—"],
    ["Occurred", fmtTime(note.occurred_at)], ["Stored", fmtTime(note.created_at)],
    ["Valid from", fmtTime(note.valid_from)], ["Valid to", fmtTime(note.valid_to)],
    ["Version", `${note.version} (lineage ${shortId(note.lineage_id)})`],
    ["Importance", num(note.importance, 2)], ["Half-life", `${num(note.half_life_hours, 1)} h`],
    ["Uses", `${note.access_count} (last ${ago(note.last_access_at)})`],
    ["Expires", fmtTime(note.expires_at)],
    ["Keywords", (note.keywords || []).join(", ") || "—"],
    ["Tags", (note.tags || []).join(", ") || "—"],
  ];
  return h("dl", { class: "meta" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function actions(ctx, note, rerender) {
  if (!ctx.can.archive) return null;
  const call = async (verb) => {
    try {
      await post(`/v1/memories/${note.id}/${verb}`, undefined, noteQuery(ctx));
      toast(verb === "archive" ? "Memory archived" : "Memory restored", "ok");
      rerender();
    } catch (error) { toast(error.detail || String(error), "error"); }
  };
  const current = !note.valid_to;
  return h("div", { class: "actions" },
    note.status === "active" && current ? h("button", { id: "archive-button", class: "warn",
      onclick: () => call("archive") }, "Archive") : null,
    note.status === "archived" && current ? h("button", { id: "restore-button",
      class: "primary", onclick: () => call("restore") }, "Restore") : null);
}

function versions(ctx, history) {
  return table([
    { label: "v", render: (v) => v.version },
    { label: "Content", className: "content-cell", render: (v) =>
      h("a", { href: `#/note/${v.id}`, class: "note-link" }, v.content) },
    { label: "Valid from", className: "nowrap", render: (v) => fmtTime(v.valid_from) },
    { label: "Valid to", className: "nowrap", render: (v) => fmtTime(v.valid_to) },
    { label: "Status", render: (v) => badge(v.valid_to && v.status !== "deleted"
      ? "closed" : v.status) },
  ], history, { empty: "Only one version." });
}

// One row per linked memory and kind; a pair of opposite links shows as ↔.
function linkRows(graph) {
  const nodes = new Map(graph.nodes.map((n) => [n.id, n]));
  const rows = new Map();
  for (const e of graph.edges) {
    const out = e.source === graph.centre;
    const other = nodes.get(out ? e.target : e.source);
    if (!other || other.id === graph.centre) continue;
    const key = `${other.id}:${e.kind}`;
    const row = rows.get(key) || { ...e, other, dirs: new Set() };
    row.dirs.add(out ? "out" : "in");
    row.weight = Math.max(row.weight, e.weight);
    rows.set(key, row);
  }
  return [...rows.values()].sort((a, b) => b.weight - a.weight);
}

function links(graph) {
  const arrow = (r) => (r.dirs.size === 2 ? "↔" : r.dirs.has("out") ? "→" : "←");
  return table([
    { label: "Link", render: (r) => badge(r.kind, "violet") },
    { label: "Dir.", render: arrow },
    { label: "Weight", className: "num", render: (r) => num(r.weight, 2) },
    { label: "Memory", className: "content-cell", render: (r) =>
      h("a", { href: `#/note/${r.other.id}`, class: "note-link" }, r.other.content) },
    { label: "Status", render: (r) => badge(r.other.status) },
    { label: "By", render: (r) => r.created_by },
  ], linkRows(graph), { empty: "No links to memories you may see." });
}

function provenance(data) {
  return h("div", {},
    data.episodes.length ? data.episodes.map((e) => h("div", { class: "episode" },
      h("div", { class: "episode-head" }, badge(e.role, "grey"),
        h("strong", {}, e.speaker || e.agent_id), h("span", { class: "muted" },
          ` · ${e.agent_id} · session ${e.session_id} · ${fmtTime(e.occurred_at)}`),
        badge(e.status), e.decision ? badge(e.decision, "violet") : null),
      h("blockquote", {}, e.content))) : h("p", { class: "empty" }, "No source episodes."));
}

function events(data) {
  return table([
    { label: "When", className: "nowrap", render: (e) => fmtTime(e.at) },
    { label: "Action", render: (e) => h("code", {}, e.action) },
    { label: "Actor", render: (e) => e.actor },
    { label: "Reason", render: (e) => e.reason || "—" },
    { label: "Version", render: (e) => shortId(e.note_id) },
  ], data.events, { empty: "No recorded changes." });
}

async function optional(promise) {
  try { return await promise; } catch (error) {
    if (error instanceof ApiError && (error.status === 403 || error.status === 404)) {
      return { unavailable: error.detail };
    }
    throw error;
  }
}

export async function renderNote(ctx, root) {
  const id = ctx.args[0];
  const q = noteQuery(ctx);
  const [note, history, activation, graph, prov] = await Promise.all([
    get(`/v1/memories/${id}`, q), get(`/v1/memories/${id}/history`, q),
    get(`/v1/memories/${id}/activation`, q), get(`/v1/memories/${id}/graph`, q),
    optional(get(`/v1/memories/${id}/provenance`, q)),
  ]);
  const rerender = () => renderNote(ctx, clear(root));
  append(root, [
    h("div", { class: "crumbs" }, h("a", { href: "#/memories" }, "Memories"), " / ",
      shortId(note.id)),
    h("div", { class: "note-head" },
      h("div", {},
        h("h1", { class: "note-title" }, note.content),
        contextLine(note) ? h("p", { class: "muted" }, contextLine(note)) : null,
        h("div", { class: "badges" }, h("span", { id: "note-status" }, badge(note.valid_to
          && note.status !== "deleted" ? "closed" : note.status)), badge(note.kind, "grey"),
        badge(note.domain, "blue"), badge(note.visibility),
        note.pinned ? badge("pinned", "blue") : null, ...provenanceBadges(note))),
      h("div", { class: "head-actions" }, actions(ctx, note, rerender),
        h("a", { class: "button ghost", href: `#/graph/${note.id}` }, "Link graph"))),
    h("div", { class: "two-col" },
      card("Attributes", meta(note)),
      card("Activation", h("p", { class: "muted small" },
        `B now ${num(activation.base_level, 2)} · retention ${num(activation.retention, 2)} · `,
        `${activation.access_count} uses, half-life ${num(activation.half_life_hours, 0)} h`),
      lineChart(activation.curve, activation.thresholds),
      h("details", {}, h("summary", {}, `Access times (${activation.access_times.length} stored)`),
        h("ul", { class: "plain" }, activation.access_times.slice().reverse()
          .map((t) => h("li", {}, `${fmtTime(t)} · ${ago(t)}`)))))),
    card(`Versions (${history.length})`, h("p", { class: "muted small" },
      "Bi-temporal history: an update closes a version (valid to) and never overwrites it."),
    versions(ctx, history)),
    card(`Links (${linkRows(graph).length})`, links(graph)),
    card("Provenance", prov.unavailable ? h("p", { class: "empty" },
      "Raw episodes are shown at user level only.") : provenance(prov)),
    prov.unavailable ? null : card("Audit trail", events(prov))]);
}
