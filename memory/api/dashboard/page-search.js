// Search preview: a query as a chosen agent, each result with its explanation, and the
// exact <relevant-memories> block /v1/context would inject. Previews are dry runs: they
// do not count as uses (no access is recorded, activation is not changed).

import { post } from "./api.js";
import { agentOptions, needUser } from "./page-memories.js";
import { badge, card, clear, errorBox, field, h, loading, notice, num, pageHead,
  provenanceBadges, select, unavailable } from "./dom.js";

const PREVIEW_TIMEOUT_MS = 5000;

function metric(label, value, cls) {
  return h("div", { class: `metric${cls ? ` ${cls}` : ""}` },
    h("span", { class: "metric-label" }, label), h("span", { class: "metric-value" }, value));
}

const fixed = (v) => (v === null || v === undefined ? "—" : Number(v).toFixed(3));

function explanation(result) {
  const e = result.explanation || {};
  const routes = Object.entries(e.routes || {}).sort((a, b) => a[1] - b[1]);
  const passed = e.threshold_passed !== false;
  return h("div", { class: "explanation" },
    h("div", { class: "route-line" }, h("span", {}, "Route ranks"),
      h("span", { class: "routes" }, routes.length ? routes.map(([name, rank]) =>
        h("span", { class: "route" }, `${name} #${rank}`)) : "—")),
    h("div", { class: "metrics" },
      metric("Relevance", fixed(e.relevance)), metric("Base level B", fixed(e.base_level)),
      metric("Spreading S", fixed(e.spreading)), metric("Noise ε", fixed(e.noise)),
      metric("Retention R", fixed(e.retention)), metric("Link spread", fixed(e.link_spread)),
      metric("Speaker boost", fixed(e.speaker_boost)), metric("Length prior", fixed(e.length_prior)),
      metric("Threshold", passed ? "passed" : "not passed", passed ? "" : "no")));
}

function resultCard(result, index) {
  return h("article", { class: "result", dataset: { noteId: result.id } },
    h("div", { class: "result-head" },
      h("span", { class: "rank" }, `#${index + 1}`),
      h("a", { href: `#/note/${result.id}`, class: "note-link result-content" }, result.content),
      h("span", { class: "score", title: "final score" }, num(result.score, 3))),
    h("div", { class: "badges" }, badge(result.kind, "grey"), badge(result.domain, "blue"),
      badge(result.visibility), ...provenanceBadges(result), h("span", { class: "muted small" },
        `by ${result.agent_id} · ${new Date(result.occurred_at).toLocaleDateString()}`)),
    explanation(result));
}

function contextPanel(ctx, data, budget) {
  const flag = data.timed_out ? notice("Timed out: the agent would get an empty block.", "warn")
    : null;
  return h("section", { class: "card sticky" }, h("h2", {}, "Injection preview"),
    h("p", { class: "muted small" }, "Exactly what ",
      h("code", {}, "POST /v1/context"), " returns for this prompt, viewer and budget."),
    h("div", { class: "context-meta" },
      h("span", { id: "context-tokens", class: "pill" }, `${data.tokens} tokens`),
      h("span", { class: "pill" }, `budget ${budget}`),
      h("span", { class: "pill" }, `${data.memories.length} memories`),
      h("span", { class: "pill" }, `${num(data.took_ms, 1)} ms`)),
    flag,
    h("pre", { id: "context-block", class: "context-block" },
      data.context || "(empty: nothing fits or nothing passed the threshold)"),
    h("p", { class: "muted small" }, "Agents get this within their ",
      `${ctx.session.settings.context_timeout_ms} ms budget; the preview waits up to `,
      `${PREVIEW_TIMEOUT_MS} ms.`));
}

async function runSearch(ctx, form, out) {
  const agent = form.elements.agent.value || undefined;
  const query = form.elements.query.value.trim();
  if (!query) return;
  const topK = Number(form.elements.top_k.value) || 10;
  const budget = Number(form.elements.max_tokens.value) || 1000;
  clear(out).append(loading());
  const base = { user_id: ctx.user, agent_id: agent, dry_run: true };
  try {
    const [search, context] = await Promise.all([
      post("/v1/search", { ...base, query, top_k: topK }),
      ctx.features.context ? post("/v1/context", { ...base, prompt: query, max_tokens: budget,
        timeout_ms: PREVIEW_TIMEOUT_MS }) : null,
    ]);
    clear(out).append(h("div", { class: "search-grid" },
      card(`${search.results.length} results · ${num(search.took_ms, 1)} ms`,
        h("div", { id: "search-results" }, search.results.length
          ? search.results.map(resultCard)
          : h("p", { class: "empty" }, "No memory passed the filters and the threshold."))),
      context ? contextPanel(ctx, context, budget) : unavailable("The context preview")));
  } catch (error) {
    clear(out).append(errorBox(error));
  }
}

export async function renderSearch(ctx, root) {
  root.append(pageHead("Search preview", "Ask as a chosen agent: see which memories it " +
    "would get, why (route ranks, relevance, base level, spreading, noise, retention), and " +
    "the block injected into its prompt. Previews record no access."));
  if (!ctx.features.search) { root.append(unavailable("Search")); return; }
  if (needUser(ctx, root, "a search preview")) return;
  const agents = await agentOptions(ctx);
  const out = h("div", { id: "search-output" });
  const form = h("form", { class: "search-form", id: "search-form", onsubmit: (event) => {
    event.preventDefault();
    runSearch(ctx, form, out);
  } },
  h("textarea", { id: "search-query", name: "query", rows: 2, required: true,
    placeholder: "What does the agent ask? e.g. Where does Mira like to travel?" }),
  h("div", { class: "search-options" },
    field("As agent", select("search-agent", [["", "— user level (sees all) —"],
      ...agents.map((a) => [a, a])], ctx.params.get("agent_id") || "", "agent")),
    field("Top k", h("input", { id: "top_k", name: "top_k", type: "number", min: 1, max: 50,
      value: 10 })),
    field("Token budget", h("input", { id: "max_tokens", name: "max_tokens", type: "number",
      min: 1, max: 32000, value: ctx.session.settings.context_max_tokens })),
    h("button", { id: "search-submit", type: "submit", class: "primary" }, "Search")));
  root.append(card(null, form), out);
}
