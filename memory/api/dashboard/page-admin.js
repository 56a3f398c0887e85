// Admin pages: agents (domains, private access) and API tokens (secret shown once).

import { del, get, post, put } from "./api.js";
import { badge, card, clear, errorBox, field, fmtTime, h, notice, select, table, toast,
  unavailable } from "./dom.js";

function agentForm(ctx, agent, refresh) {
  const domains = h("input", { name: "domains", value: (agent?.domains || []).join(", "),
    placeholder: "travel, finance" });
  const name = h("input", { name: "display_name", value: agent?.display_name || "" });
  const id = h("input", { name: "agent_id", value: agent?.agent_id || "", required: true,
    disabled: Boolean(agent), placeholder: "travel-agent" });
  const priv = h("input", { type: "checkbox", name: "can_see_private",
    checked: agent?.can_see_private });
  const form = h("form", { class: "inline-form", onsubmit: async (event) => {
    event.preventDefault();
    const body = { display_name: name.value.trim() || null, can_see_private: priv.checked,
      domains: domains.value.split(",").map((d) => d.trim()).filter(Boolean) };
    try {
      await put(`/v1/agents/${encodeURIComponent(id.value.trim())}`, body);
      toast("Agent saved", "ok");
      refresh();
    } catch (error) { toast(error.detail || String(error), "error"); }
  } },
  field("Agent id", id), field("Display name", name), field("Domains", domains),
  h("label", { class: "check" }, priv, "can see private"),
  h("button", { type: "submit", class: "primary" }, agent ? "Save" : "Add agent"));
  return form;
}

export async function renderAgents(ctx, root) {
  root.append(h("h1", {}, "Agents"), h("p", { class: "lead" }, "Which domains each agent ",
    "serves decides what it sees: scoped memories of its domains, open ones, its own, and ",
    "private ones only with private access. User-only memories reach no agent."));
  if (!ctx.features.agents) { root.append(unavailable("Agent management")); return; }
  const body = h("div", {});
  root.append(body);
  const refresh = async () => {
    try {
      const data = await get("/v1/agents");
      const columns = [
        { label: "Agent", render: (a) => h("strong", {}, a.agent_id) },
        { label: "Name", render: (a) => a.display_name || "—" },
        { label: "Domains", render: (a) => (a.domains.length ? a.domains.map((d) =>
          badge(d, "blue")) : "—") },
        { label: "Private", render: (a) => (a.can_see_private ? badge("yes", "amber") : "no") },
        { label: "Source", render: (a) => a.source },
      ];
      const canEdit = ctx.can.admin && ctx.features.put_agent;
      clear(body).append(card(`${data.agents.length} agents`, table(columns, data.agents,
        { empty: "No agents yet: they appear when they first write or when added here." })),
      canEdit ? card("Add or update an agent", agentForm(ctx, null, refresh))
        : notice("Changing agents needs an admin token.", "muted"));
    } catch (error) { clear(body).append(errorBox(error)); }
  };
  await refresh();
}

function secretBox(created) {
  const value = h("code", { id: "new-token-secret" }, created.secret);
  return h("div", { class: "notice ok secret" },
    h("strong", {}, `New ${created.role} token created. Copy the secret now: it is not `,
      "shown again."), h("div", { class: "secret-row" }, value,
      h("button", { class: "small", type: "button", onclick: () =>
        navigator.clipboard?.writeText(created.secret).then(() => toast("Copied", "ok")) },
      "Copy")));
}

function tokenForm(refresh, out) {
  const role = select("token-role", [["viewer", "viewer"], ["operator", "operator"],
    ["admin", "admin"], ["agent", "agent"]], "viewer", "role");
  const name = h("input", { name: "name", placeholder: "who or what uses it" });
  const user = h("input", { name: "user_id", placeholder: "optional: bind to one user" });
  return h("form", { class: "inline-form", id: "token-form", onsubmit: async (event) => {
    event.preventDefault();
    const body = { role: role.value, name: name.value.trim() || null,
      user_id: user.value.trim() || null };
    try {
      const created = await post("/v1/tokens", body);
      clear(out).append(secretBox(created));
      refresh();
    } catch (error) { clear(out).append(errorBox(error)); }
  } }, field("Role", role), field("Name", name), field("User", user),
  h("button", { type: "submit", class: "primary", id: "create-token" }, "Create token"));
}

export async function renderTokens(ctx, root) {
  root.append(h("h1", {}, "API tokens"), h("p", { class: "lead" }, "Only a token's sha256 is ",
    "stored; a secret is shown once, when it is created. Revoking takes effect at once."));
  if (!ctx.features.tokens) { root.append(unavailable("Token management")); return; }
  if (!ctx.can.admin) { root.append(notice("Managing tokens needs an admin token.", "muted"));
    return; }
  const list = h("div", {});
  const out = h("div", { id: "token-output" });
  const refresh = async () => {
    const data = await get("/v1/tokens");
    const revoke = async (t) => {
      try { await del(`/v1/tokens/${t.id}`); toast("Token revoked", "ok"); refresh(); } catch
      (error) { toast(error.detail || String(error), "error"); }
    };
    clear(list).append(table([
      { label: "Prefix", render: (t) => h("code", {}, `${t.prefix}…`) },
      { label: "Name", render: (t) => t.name || "—" },
      { label: "Role", render: (t) => h("span", { class: `badge tone-${t.role}` }, t.role) },
      { label: "User", render: (t) => t.user_id || "any" },
      { label: "Created", className: "nowrap", render: (t) => fmtTime(t.created_at) },
      { label: "State", render: (t) => (t.revoked_at ? badge("revoked", "red")
        : t.id === data.current ? badge("this session", "blue") : badge("active", "green")) },
      { label: "", render: (t) => (t.revoked_at || t.id === data.current ? null
        : h("button", { class: "small warn", onclick: () => revoke(t) }, "Revoke")) },
    ], data.tokens));
  };
  root.append(card("Create a token", tokenForm(refresh, out), out), card("Tokens", list));
  await refresh();
}
