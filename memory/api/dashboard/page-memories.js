// Memory browser: filters in the URL (#/memories?kind=…), one page of results, paging.

import { get } from "./api.js";
import { ago, badge, card, clear, contextLine, errorBox, field, fmtTime, h, loading, notice,
  num, pageHead, provenanceBadges, select, table } from "./dom.js";

const KINDS = ["stable", "preference", "episodic", "ephemeral", "decision", "knowledge"];
const VISIBILITIES = ["open", "scoped", "private", "user-only"];
const STATUSES = [["active", "active (current)"], ["archived", "archived"],
  ["closed", "closed (superseded)"], ["deleted", "deleted"], ["all", "all"]];
const PAGE_SIZE = 25;
const FILTERS = ["agent_id", "author", "kind", "domain", "visibility", "status", "since",
  "until", "q"];

export async function agentOptions(ctx) {
  if (!ctx.features.agents) return [];
  try {
    const data = await get("/v1/agents");
    return data.agents.map((a) => a.agent_id);
  } catch { return []; }
}

export function needUser(ctx, root, what) {
  if (ctx.user) return false;
  root.append(notice(`Choose a user in the box above to see ${what}.`, "info"));
  return true;
}

function filterForm(ctx, agents) {
  const p = ctx.params;
  const opt = (values) => [["", "any"], ...values.map((v) => (Array.isArray(v) ? v : [v, v]))];
  const form = h("form", { class: "filters", id: "memory-filters", onsubmit: (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const name of FILTERS) {
      const value = form.elements[name].value.trim();
      if (value) query.set(name, value);
    }
    ctx.go(`#/memories?${query}`);
  } },
  field("Search text", h("input", { name: "q", id: "q", value: p.get("q") || "",
    placeholder: "contains…" })),
  field("Author", select("author", opt(agents), p.get("author") || "")),
  field("Kind", select("kind", opt(KINDS), p.get("kind") || "")),
  field("Domain", h("input", { name: "domain", id: "domain", value: p.get("domain") || "",
    placeholder: "any" })),
  field("Visibility", select("visibility", opt(VISIBILITIES), p.get("visibility") || "")),
  field("Status", select("status", STATUSES, p.get("status") || "active")),
  field("From", h("input", { type: "date", name: "since", id: "since",
    value: p.get("since") || "" })),
  field("To", h("input", { type: "date", name: "until", id: "until",
    value: p.get("until") || "" })),
  field("Visible to agent", select("agent_id", [["", "— user level (all) —"],
    ...agents.map((a) => [a, a])], p.get("agent_id") || "")),
  h("div", { class: "filter-actions" },
    h("button", { type: "submit", class: "primary", id: "apply-filters" }, "Apply"),
    h("a", { href: "#/memories", class: "button ghost" }, "Reset")));
  return form;
}

function queryFor(ctx, offset) {
  const q = { user_id: ctx.user, limit: PAGE_SIZE, offset };
  for (const name of FILTERS) {
    const value = ctx.params.get(name);
    if (!value) continue;
    if (name === "since") q.since = `${value}T00:00:00Z`;
    else if (name === "until") q.until = `${value}T23:59:59Z`;
    else q[name] = value;
  }
  return q;
}

const COLUMNS = (ctx) => [
  { label: "Occurred", className: "nowrap", render: (n) =>
    h("span", { title: fmtTime(n.occurred_at) }, ago(n.occurred_at)) },
  { label: "Memory", className: "content-cell", render: (n) => h("div", {},
    h("a", { href: `#/note/${n.id}${ctx.params.get("agent_id")
      ? `?agent_id=${encodeURIComponent(ctx.params.get("agent_id"))}` : ""}`,
    class: "note-link" }, n.content),
    contextLine(n) ? h("div", { class: "muted small" }, contextLine(n)) : null,
    n.pinned ? badge("pinned", "blue") : null) },
  { label: "Kind", render: (n) => badge(n.kind, "grey") },
  { label: "Domain", render: (n) => n.domain },
  { label: "Visibility", render: (n) => badge(n.visibility) },
  { label: "Author", render: (n) => n.agent_id },
  { label: "From", render: (n) => h("div", { class: "badges" }, provenanceBadges(n)) },
  { label: "Status", render: (n) => badge(n.status) },
  { label: "B", className: "num", render: (n) => num(n.base_level, 2) },
  { label: "R", className: "num", render: (n) => num(n.retention, 2) },
  { label: "Uses", className: "num", render: (n) => n.access_count },
];

export async function renderMemories(ctx, root) {
  root.append(pageHead("Memories", "Every memory of the chosen user that you may see, newest " +
    "first. B is the ACT-R base-level activation now, R the Ebbinghaus retention."));
  if (needUser(ctx, root, "memories")) return;
  const agents = await agentOptions(ctx);
  root.append(card(null, filterForm(ctx, agents)));
  const results = h("div", { id: "memory-results" }, loading());
  root.append(results);
  const offset = Number(ctx.params.get("offset") || 0);
  try {
    const data = await get("/v1/memories", queryFor(ctx, offset));
    clear(results).append(card(`${data.total} memories`,
      table(COLUMNS(ctx), data.items, { empty: "No memory matches these filters.",
        rowAttrs: (n) => ({ dataset: { noteId: n.id } }) }),
      pager(ctx, offset, data.total)));
  } catch (error) {
    clear(results).append(errorBox(error));
  }
}

function pager(ctx, offset, total) {
  const link = (to, label) => {
    const query = new URLSearchParams(ctx.params);
    query.set("offset", String(to));
    return h("a", { href: `#/memories?${query}`, class: "button ghost" }, label);
  };
  const last = Math.min(offset + PAGE_SIZE, total);
  return h("div", { class: "pager" },
    offset > 0 ? link(Math.max(offset - PAGE_SIZE, 0), "← Newer") : null,
    h("span", { class: "muted" }, total ? `${offset + 1}–${last} of ${total}` : ""),
    last < total ? link(offset + PAGE_SIZE, "Older →") : null);
}
