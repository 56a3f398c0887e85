// DOM helpers. Invariant: data is only ever inserted as text (textContent, attributes),
// never parsed as HTML, so memory content cannot inject markup or script.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "class") {
      el.className = value;
    } else if (key === "style") {
      el.style.cssText = value; // CSSOM: allowed by the CSP, unlike a style attribute
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (key === "value") {
      el.value = value;
    } else if (key === "checked" || key === "disabled" || key === "selected") {
      el[key] = Boolean(value);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function fmtTime(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function ago(iso) {
  if (!iso) return "—";
  const seconds = (Date.now() - new Date(iso).getTime()) / 1000;
  const steps = [[86400 * 365, "y"], [86400 * 30, "mo"], [86400, "d"], [3600, "h"], [60, "min"]];
  for (const [size, unit] of steps) {
    if (Math.abs(seconds) >= size) return `${Math.round(seconds / size)} ${unit} ago`;
  }
  return "just now";
}

export function num(value, digits = 3) {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  if (typeof value !== "number") return String(value);
  return Number.isInteger(value) ? String(value) : value.toFixed(digits);
}

export function shortId(id) {
  return id ? String(id).slice(0, 8) : "—";
}

const BADGE_TONES = {
  active: "green", archived: "amber", deleted: "red", closed: "grey", pending: "grey",
  open: "blue", scoped: "violet", private: "amber", "user-only": "red",
  resolved: "green", contradictory: "red", ambiguous: "amber", compatible: "green",
  subsumes: "violet", done: "green", failed: "red", queued: "blue", processing: "violet",
};

export function badge(text, tone) {
  return h("span", { class: `badge tone-${tone || BADGE_TONES[text] || "grey"}` }, text);
}

const TRUST_TONES = { high: "green", medium: "blue", low: "amber" };

// Where a memory came from, as every page shows it: origin (with its page, file, tool or
// person), trust below high, and the review and instruction flags (README "Where a memory
// came from"). The reference is text, never a link: it may be an attacker's URL.
export function provenanceBadges(note) {
  if (!note.origin) return [];
  const ref = note.origin_ref ? ` ${note.origin_ref.slice(0, 60)}` : "";
  return [
    h("span", { class: "badge tone-violet", title: note.origin_ref || note.origin },
      `from ${note.origin}${ref}`),
    note.trust && note.trust !== "high" ? badge(`${note.trust} trust`, TRUST_TONES[note.trust])
      : null,
    note.candidate || note.review === "candidate" ? badge("candidate", "amber") : null,
    note.instruction_like ? badge("looks like an instruction", "red") : null,
  ];
}

export function table(columns, rows, { empty = "Nothing to show.", rowAttrs } = {}) {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  const head = h("tr", {}, columns.map((c) => h("th", { class: c.className }, c.label)));
  const body = rows.map((row) =>
    h("tr", rowAttrs ? rowAttrs(row) : {},
      columns.map((c) => h("td", { class: c.className }, c.render(row)))));
  return h("table", { class: "grid" }, h("thead", {}, head), h("tbody", {}, body));
}

export function card(title, ...children) {
  return h("section", { class: "card" }, title ? h("h2", {}, title) : null, ...children);
}

export function stat(label, value, hint) {
  return h("div", { class: "stat" },
    h("div", { class: "stat-value" }, value),
    h("div", { class: "stat-label" }, label),
    hint ? h("div", { class: "stat-hint" }, hint) : null);
}

export function errorBox(error) {
  const status = error && error.status ? `${error.status} ` : "";
  const detail = (error && (error.detail || error.message)) || String(error);
  return h("div", { class: "notice error", role: "alert" }, `${status}${detail}`);
}

export function notice(text, tone = "info") {
  return h("div", { class: `notice ${tone}` }, text);
}

export function unavailable(what) {
  return notice(`${what} is not available on this server (its API is not deployed).`, "muted");
}

export function field(label, control, hint) {
  return h("label", { class: "field" }, h("span", {}, label), control,
    hint ? h("small", {}, hint) : null);
}

export function select(id, options, value, name = id) {
  return h("select", { id, name },
    options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
}

let toastTimer = null;
export function toast(text, tone = "info") {
  const el = document.getElementById("toast");
  if (!el) return;
  el.textContent = text;
  el.className = `toast show ${tone}`;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = "toast"; }, 3500);
}

export function loading() {
  return h("p", { class: "loading" }, "Loading…");
}

export function pageHead(title, lead, ...actions) {
  return h("div", { class: "page-head" },
    h("div", {}, h("h1", {}, title), lead ? h("p", { class: "lead" }, lead) : null),
    actions.length ? h("div", { class: "actions" }, actions) : null);
}

// The note's context line, unless it only repeats the content ("Mira: <content>").
export function contextLine(note) {
  const context = (note.context || "").trim();
  if (!context || context.endsWith(note.content.trim())) return null;
  return context;
}
