// The dashboard shell: sign-in, navigation, the user picker and the hash router.
// Pages are modules exporting `render(ctx, root)`; ctx says who is signed in and what the
// role may do. Hiding a control is a courtesy: the server refuses the call anyway.

import { ApiError, get, setUnauthorizedHandler, store } from "./api.js";
import { clear, errorBox, h, notice } from "./dom.js";
import { renderMemories } from "./page-memories.js";
import { renderNote } from "./page-note.js";
import { renderSearch } from "./page-search.js";
import { renderPipeline } from "./page-pipeline.js";
import { renderJournal } from "./page-journal.js";
import { renderCandidates } from "./page-candidates.js";
import { renderConflicts } from "./page-conflicts.js";
import { renderStats } from "./page-stats.js";
import { renderGraph } from "./page-graph.js";
import { renderAgents, renderTokens } from "./page-admin.js";

const RANK = { agent: 0, viewer: 1, operator: 2, admin: 3 };
const PAGES = [
  { id: "memories", label: "Memories", render: renderMemories },
  { id: "search", label: "Search preview", render: renderSearch },
  { id: "graph", label: "Link graph", render: renderGraph },
  { id: "pipeline", label: "Pipeline", render: renderPipeline },
  { id: "journal", label: "Journal", render: renderJournal },
  { id: "candidates", label: "Candidates", render: renderCandidates },
  { id: "conflicts", label: "Conflicts", render: renderConflicts },
  { id: "stats", label: "Stats", render: renderStats },
  { id: "agents", label: "Agents", render: renderAgents },
  { id: "tokens", label: "Tokens", render: renderTokens, minRole: "admin" },
  { id: "note", render: renderNote, hidden: true },
];

const app = document.getElementById("app");
let session = null;

function parseHash() {
  const raw = window.location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const [page, ...rest] = path.split("/").filter(Boolean);
  return { page: page || "memories", args: rest.map(decodeURIComponent),
    params: new URLSearchParams(query) };
}

export function go(hash) {
  if (window.location.hash === hash) route();
  else window.location.hash = hash;
}

function makeContext(parsed) {
  const role = session.role;
  const atLeast = (needed) => RANK[role] >= RANK[needed];
  return {
    session, role, features: session.features, user: store.user,
    args: parsed.args, params: parsed.params, go,
    can: {
      write: atLeast("operator"), archive: atLeast("operator"), retry: atLeast("operator"),
      resolve: atLeast("operator"), consolidate: atLeast("operator"), admin: atLeast("admin"),
      review: atLeast("operator"),
    },
  };
}

function signIn(message) {
  session = null;
  clear(app);
  const input = h("input", { id: "token-input", type: "password", autocomplete: "off",
    placeholder: "muma_…", required: true, "aria-label": "API token" });
  const status = h("div", { id: "sign-in-status" }, message ? notice(message, "warn") : null);
  const form = h("form", { class: "sign-in-card", onsubmit: async (event) => {
    event.preventDefault();
    clear(status);
    store.token = input.value.trim();
    try { await start(); } catch (error) { store.clear(); status.append(errorBox(error)); }
  } },
  h("div", { class: "brand big" }, h("span", { class: "logo" }, "M"), "MUMA"),
  h("p", { class: "muted" }, "Sign in with a viewer, operator or admin token. It is kept in",
    " this tab only (sessionStorage) and sent with each request."),
  input,
  h("button", { id: "sign-in", type: "submit", class: "primary" }, "Sign in"),
  status);
  app.append(h("div", { class: "sign-in" }, form));
  input.focus();
}

async function loadUsers(list) {
  if (!session.features.users) return;
  try {
    const data = await get("/v1/users", { limit: 500 });
    clear(list).append(...data.users.map((u) =>
      h("option", { value: u.user_id }, `${u.notes} notes · ${u.episodes} episodes`)));
  } catch { /* suggestions are optional */ }
}

function userPicker() {
  const bound = session.user_id;
  if (bound) store.user = bound;
  const list = h("datalist", { id: "user-options" });
  const input = h("input", { id: "user-input", list: "user-options", value: store.user,
    placeholder: "user id", disabled: Boolean(bound), autocomplete: "off",
    onchange: () => {
      const value = input.value.trim();
      if (value === store.user) return; // a blur after typing fires change again
      store.user = value;
      route();
    } });
  loadUsers(list);
  return h("label", { class: "user-picker" }, h("span", {}, "User"), input, list);
}

function shell() {
  clear(app);
  const nav = h("nav", { class: "nav" },
    PAGES.filter((p) => !p.hidden && (!p.minRole || RANK[session.role] >= RANK[p.minRole]))
      .map((p) => h("a", { href: `#/${p.id}`, id: `nav-${p.id}`, dataset: { page: p.id } },
        p.label)));
  const side = h("aside", { class: "sidebar" }, h("div", { class: "sidebar-inner" },
    h("div", { class: "brand" }, h("span", { class: "logo" }, "M"), "MUMA"), nav,
    h("div", { class: "side-foot" }, session.flower_url
      ? h("a", { href: session.flower_url, target: "_blank", rel: "noopener" }, "Flower ↗")
      : null, h("a", { href: "/docs", target: "_blank", rel: "noopener" }, "API docs ↗"))));
  const top = h("header", { class: "topbar" }, userPicker(),
    h("div", { class: "who" },
      h("span", { id: "role-badge", class: `badge tone-${session.role}` }, session.role),
      h("span", { class: "muted" }, `tenant ${session.tenant_id}`),
      h("button", { id: "sign-out", class: "ghost", onclick: () => { store.clear(); signIn(); } },
        "Sign out")));
  const main = h("main", { id: "page", class: "page" });
  app.append(h("div", { class: "layout" }, side, h("div", { class: "content" }, top, main)),
    h("div", { id: "toast", class: "toast", role: "status" }));
}

let renderSeq = 0;

// Each render draws into its own container; a newer route() detaches older ones, so two
// overlapping renders (hashchange while loading) never mix their content.
async function route() {
  if (!session) return;
  renderSeq += 1;
  const parsed = parseHash();
  const page = PAGES.find((p) => p.id === parsed.page) || PAGES[0];
  for (const link of document.querySelectorAll(".nav a")) {
    const active = link.dataset.page === page.id ||
      (page.id === "note" && link.dataset.page === "memories");
    link.classList.toggle("active", active);
  }
  const root = h("div", { class: "page-body", dataset: { render: String(renderSeq) } });
  clear(document.getElementById("page")).append(root);
  try {
    await page.render(makeContext(parsed), root);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) root.append(errorBox(error));
  }
}

async function start() {
  session = await get("/v1/dashboard/session");
  if (session.role === "agent") {
    session = null;
    throw new Error("Agent tokens belong to the gateway; sign in with a viewer, operator or " +
      "admin token.");
  }
  shell();
  await route();
}

setUnauthorizedHandler(() => { store.clear(); signIn("Your token was refused (revoked or " +
  "invalid). Sign in again."); });
window.addEventListener("hashchange", route);

if (store.token) start().catch(() => { store.clear(); signIn(); });
else signIn();
