// Pipeline: episodes by status, queue depths, dead letters with retry, a link to Flower,
// and an on-demand sleep cycle for the chosen user (operators).

import { get, post } from "./api.js";
import { append, card, clear, errorBox, fmtTime, h, notice, pageHead, stat, table, toast,
  unavailable } from "./dom.js";

const STATUS_ORDER = ["queued", "processing", "done", "failed"];

function overview(ctx, data) {
  const flower = ctx.session.flower_url
    ? h("a", { href: ctx.session.flower_url, target: "_blank", rel: "noopener",
      class: "button ghost", id: "flower-link" }, "Open Flower ↗")
    : h("span", { class: "muted small", id: "flower-link" },
      "Flower: not known for this deployment (muma up records its address).");
  return h("div", {},
    card("Episodes by status", h("div", { class: "stats-row" }, STATUS_ORDER.map((s) =>
      stat(s, String(data.episodes[s] ?? 0))), stat("dead letters", String(data.dead_letters)))),
    data.backlog ? backlog(data.backlog) : null,
    card("Queues", h("div", { class: "stats-row" }, Object.entries(data.queues).map(([q, n]) =>
      stat(q, n === null ? "?" : String(n), n === null ? "Redis unreachable" : "waiting"))),
    h("div", { class: "card-foot" }, flower)));
}

function drainTime(seconds) {
  if (seconds === null || seconds === undefined) return "?";
  if (seconds < 90) return `${Math.round(seconds)} s`;
  return `${Math.round(seconds / 60)} min`;
}

// Captures wait here for extraction; at the limit they are answered 429 (clients resend).
function backlog(data) {
  const limit = data.limit > 0 ? `of ${data.limit} before captures get 429` : "no limit";
  const pace = data.drain_seconds === null ? "nothing finished in the last minute"
    : "at the last minute's pace";
  return card("Capture backlog", h("div", { class: "stats-row", id: "backlog" },
    h("div", { id: "backlog-waiting" }, stat("waiting", String(data.queued), limit)),
    h("div", { id: "backlog-drain" }, stat("drains in", drainTime(data.drain_seconds), pace))),
  data.full ? notice("Full: captures are answered 429 with Retry-After until it drains.",
    "warn") : null);
}

function deadLetters(ctx, letters, refresh) {
  const retry = async (letter) => {
    try {
      await post(`/v1/dead-letters/${letter.id}/retry`);
      toast(`Requeued ${letter.task_name}`, "ok");
      refresh();
    } catch (error) { toast(error.detail || String(error), "error"); }
  };
  const columns = [
    { label: "Task", render: (d) => h("code", {}, d.task_name) },
    { label: "Error", className: "content-cell", render: (d) =>
      h("span", { class: "error-text", title: d.error }, d.error.split("\n")[0]) },
    { label: "Attempts", className: "num", render: (d) => d.attempts },
    { label: "Last failure", className: "nowrap", render: (d) => fmtTime(d.last_failed_at) },
    { label: "Episode", render: (d) => (d.episode_id ? h("code", {}, d.episode_id.slice(0, 8))
      : "—") },
  ];
  if (ctx.can.retry) {
    columns.push({ label: "", render: (d) => h("button", { class: "small",
      dataset: { retry: d.id }, onclick: () => retry(d) }, "Retry") });
  }
  return table(columns, letters, { empty: "No dead letters. Every task succeeded or is still " +
    "retrying." });
}

function sleepCycle(ctx) {
  if (!ctx.features.consolidate || !ctx.can.consolidate) return null;
  const out = h("span", { class: "muted small" });
  const run = async () => {
    if (!ctx.user) { out.textContent = "Choose a user first."; return; }
    try {
      const data = await post("/v1/consolidate", { user_id: ctx.user });
      out.textContent = `Sleep cycle queued (task ${data.task_id}).`;
    } catch (error) { out.textContent = error.detail || String(error); }
  };
  return card("Sleep cycle", h("p", { class: "muted small" }, "Decay, consolidation and ",
    "conflict detection run nightly per user; run them now for the chosen user."),
  h("div", { class: "actions" }, h("button", { id: "run-sleep", onclick: run },
    "Run sleep cycle now"), out));
}

export async function renderPipeline(ctx, root) {
  const body = h("div", {});
  const head = pageHead("Pipeline", "The write path of your tenant: captured episodes, " +
    "Celery queues and tasks that failed their last attempt.");
  root.append(head);
  if (!ctx.features.pipeline) { root.append(unavailable("Pipeline status")); return; }
  root.append(body);
  const refresh = async () => {
    try {
      const [status, letters] = await Promise.all([get("/v1/pipeline"),
        ctx.features.dead_letters ? get("/v1/dead-letters") : { dead_letters: [] }]);
      append(clear(body), [overview(ctx, status),
        card(`Dead letters (${letters.dead_letters.length})`,
          ctx.can.retry ? null : notice("Retrying needs an operator or admin token.", "muted"),
          deadLetters(ctx, letters.dead_letters, refresh)),
        sleepCycle(ctx)]);
    } catch (error) { clear(body).append(errorBox(error)); }
  };
  head.append(h("button", { class: "ghost", id: "refresh", onclick: refresh }, "Refresh"));
  await refresh();
}
