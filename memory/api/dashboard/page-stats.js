// Stats: counts by status, kind, domain, visibility and agent, and the activation histogram.

import { get } from "./api.js";
import { barList, histogram } from "./charts.js";
import { agentOptions, needUser } from "./page-memories.js";
import { card, h, num, select, stat, unavailable } from "./dom.js";

const sorted = (counts) => Object.entries(counts || {}).sort((a, b) => b[1] - a[1]);

export async function renderStats(ctx, root) {
  root.append(h("h1", {}, "Stats"), h("p", { class: "lead" }, "What the chosen user's memory ",
    "holds, as a person or as one agent sees it."));
  if (!ctx.features.stats) { root.append(unavailable("Stats")); return; }
  if (needUser(ctx, root, "stats")) return;
  const agent = ctx.params.get("agent_id") || "";
  const agents = await agentOptions(ctx);
  const chooser = select("stats-agent", [["", "— user level (all) —"],
    ...agents.map((a) => [a, a])], agent);
  chooser.addEventListener("change", () =>
    ctx.go(chooser.value ? `#/stats?agent_id=${encodeURIComponent(chooser.value)}` : "#/stats"));
  root.append(h("div", { class: "page-actions" }, h("label", { class: "inline" }, "As ",
    chooser)));
  const data = await get("/v1/stats", { user_id: ctx.user, agent_id: agent || undefined });
  const notes = data.notes;
  const act = data.activation;
  root.append(
    h("div", { class: "stats-row top" },
      stat("current memories", String(notes.current)),
      stat("pinned", String(notes.pinned)),
      stat("links", String(data.links)),
      stat("open conflicts", String(data.conflicts.open)),
      stat("mean B", num(act.mean, 2), `min ${num(act.min, 2)} · max ${num(act.max, 2)}`),
      stat("below prune threshold", String(act.below_prune_threshold))),
    card("Activation histogram", h("p", { class: "muted small" }, "Base-level activation of ",
      "current memories, bucketed at the retrieval and decay thresholds. ",
      `${act.below_retrieval_threshold} are below the retrieval threshold.`),
    histogram(act.histogram)),
    h("div", { class: "grid-3" },
      card("By kind", barList(sorted(notes.by_kind), { tone: "blue" })),
      card("By domain", barList(sorted(notes.by_domain), { tone: "violet" })),
      card("By author agent", barList(sorted(notes.by_agent), { tone: "green" })),
      card("By visibility", barList(sorted(notes.by_visibility), { tone: "amber" })),
      card("By status", barList(sorted(notes.by_status), { tone: "grey" })),
      card("Episodes", barList(sorted(data.pipeline.episodes), { tone: "blue" }))));
}
