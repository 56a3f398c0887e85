// Link graph: a memory's neighbourhood (1–3 hops) in a radial layout; click a node to
// inspect it, double-click to re-centre. Only memories the viewer may see are returned.

import { get } from "./api.js";
import { svg } from "./charts.js";
import { needUser } from "./page-memories.js";
import { badge, card, clear, h, notice, select } from "./dom.js";

const SIZE = 640;
const MARGIN = 170; // room for labels left and right of the outer ring
const KIND_TONES = { stable: "#2563eb", preference: "#7c3aed", episodic: "#0891b2",
  ephemeral: "#94a3b8", decision: "#d97706", knowledge: "#059669" };

function layout(graph) {
  const centre = SIZE / 2;
  const rings = new Map();
  for (const node of graph.nodes) {
    if (!rings.has(node.depth)) rings.set(node.depth, []);
    rings.get(node.depth).push(node);
  }
  const pos = new Map([[graph.centre, { x: centre, y: centre, angle: 0 }]]);
  const neighbours = (id) => graph.edges.filter((e) => e.source === id || e.target === id)
    .map((e) => (e.source === id ? e.target : e.source));
  const maxDepth = Math.max(...rings.keys());
  for (let depth = 1; depth <= maxDepth; depth += 1) {
    const ring = rings.get(depth) || [];
    const parentAngle = (n) => {
      const parent = neighbours(n.id).find((id) => pos.has(id));
      return parent ? pos.get(parent).angle : 0;
    };
    ring.sort((a, b) => parentAngle(a) - parentAngle(b));
    const radius = (depth / maxDepth) * (SIZE / 2 - 80);
    ring.forEach((node, i) => {
      const angle = (2 * Math.PI * i) / ring.length - Math.PI / 2 + depth * 0.3;
      pos.set(node.id, { x: centre + radius * Math.cos(angle),
        y: centre + radius * Math.sin(angle), angle });
    });
  }
  return pos;
}

function label(text) {
  return text.length > 34 ? `${text.slice(0, 32)}…` : text;
}

// Labels sit outside their node, away from the centre, so neighbours rarely overlap.
function labelPlace(p, isCentre) {
  if (isCentre) return { x: p.x, y: p.y + 34, "text-anchor": "middle" };
  const dx = p.x - SIZE / 2;
  const dy = p.y - SIZE / 2;
  const len = Math.hypot(dx, dy) || 1;
  const [ux, uy] = [dx / len, dy / len];
  const anchor = ux > 0.35 ? "start" : ux < -0.35 ? "end" : "middle";
  return { x: p.x + ux * 16, y: p.y + uy * 16 + (Math.abs(uy) > 0.6 ? uy * 6 : 0) + 4,
    "text-anchor": anchor };
}

function drawing(graph, onSelect, onCentre) {
  const pos = layout(graph);
  const edges = graph.edges.filter((e) => pos.has(e.source) && pos.has(e.target)).map((e) =>
    svg("line", { x1: pos.get(e.source).x, y1: pos.get(e.source).y, x2: pos.get(e.target).x,
      y2: pos.get(e.target).y, class: `edge e-${e.kind}`,
      "stroke-width": 1 + 3 * Math.max(0, Math.min(e.weight || 0, 1)) },
    svg("title", {}, `${e.kind} · weight ${e.weight} · by ${e.created_by}`)));
  const nodes = graph.nodes.map((n) => {
    const p = pos.get(n.id);
    const group = svg("g", { class: `node${n.id === graph.centre ? " centre" : ""}`,
      "data-note-id": n.id, tabindex: 0 },
    svg("circle", { cx: p.x, cy: p.y, r: n.id === graph.centre ? 19 : 13,
      fill: KIND_TONES[n.kind] || "#64748b", class: n.status === "active" ? "" : "inactive" }),
    svg("text", { ...labelPlace(p, n.id === graph.centre), class: "node-label" },
      label(n.content)),
    svg("title", {}, n.content));
    group.addEventListener("click", () => onSelect(n));
    group.addEventListener("dblclick", () => onCentre(n));
    return group;
  });
  return svg("svg", { viewBox: `${-MARGIN} -10 ${SIZE + 2 * MARGIN} ${SIZE + 20}`,
    class: "graph", id: "graph-svg",
    role: "img", "aria-label": "link graph" }, edges, nodes);
}

function detail(node) {
  return h("div", { class: "graph-detail" },
    h("div", { class: "badges" }, badge(node.kind, "grey"), badge(node.domain, "blue"),
      badge(node.visibility), badge(node.status)),
    h("p", {}, node.content),
    h("p", { class: "muted small" }, `by ${node.agent_id} · ${node.depth} hop(s) away`),
    h("div", { class: "actions" },
      h("a", { class: "button primary", href: `#/note/${node.id}` }, "Open memory"),
      h("a", { class: "button ghost", href: `#/graph/${node.id}` }, "Centre here")));
}

function legend() {
  return h("div", { class: "legend" }, Object.entries(KIND_TONES).map(([kind, colour]) =>
    h("span", {}, h("i", { class: "swatch", style: `background:${colour}` }), kind)));
}

async function chooser(ctx, root) {
  const data = await get("/v1/memories", { user_id: ctx.user, limit: 12 });
  root.append(card("Pick a memory to centre the graph on",
    data.items.length ? h("ul", { class: "plain pick" }, data.items.map((n) =>
      h("li", {}, h("a", { href: `#/graph/${n.id}`, class: "note-link" }, n.content))))
      : notice("This user has no memories yet.", "muted")));
}

export async function renderGraph(ctx, root) {
  root.append(h("h1", {}, "Link graph"), h("p", { class: "lead" }, "A memory's Zettelkasten ",
    "neighbourhood: related, derived, superseding, contradicting and consolidating links."));
  if (needUser(ctx, root, "the link graph")) return;
  const id = ctx.args[0];
  if (!id) { await chooser(ctx, root); return; }
  const depth = ctx.params.get("depth") || "1";
  const graph = await get(`/v1/memories/${id}/graph`, { user_id: ctx.user, depth });
  const depthSelect = select("graph-depth", [["1", "1 hop"], ["2", "2 hops"], ["3", "3 hops"]],
    depth);
  depthSelect.addEventListener("change", () => ctx.go(`#/graph/${id}?depth=${depthSelect.value}`));
  const side = h("div", { id: "graph-side" });
  const centreNode = graph.nodes.find((n) => n.id === graph.centre);
  const show = (node) => clear(side).append(detail(node));
  show(centreNode);
  root.append(h("div", { class: "page-actions" }, h("label", { class: "inline" }, "Depth ",
    depthSelect), h("span", { class: "muted small" }, `${graph.nodes.length} memories · `,
    `${graph.edges.length} links${graph.truncated ? " (truncated)" : ""}`)),
  h("div", { class: "graph-layout" },
    card(null, drawing(graph, show, (n) => ctx.go(`#/graph/${n.id}?depth=${depth}`)), legend()),
    card("Selected", side)));
}
