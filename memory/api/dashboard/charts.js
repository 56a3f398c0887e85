// Small SVG charts built with createElementNS (no library, nothing parsed as markup).

import { h } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// Horizontal bars: [[label, value], …], longest first.
export function barList(entries, { tone = "blue", empty = "No data." } = {}) {
  if (!entries.length) return h("p", { class: "empty" }, empty);
  const max = Math.max(...entries.map(([, v]) => v), 1);
  return h("div", { class: "bars" }, entries.map(([label, value]) =>
    h("div", { class: "bar-row" },
      h("span", { class: "bar-label", title: label }, label),
      h("span", { class: "bar-track" },
        h("span", { class: `bar-fill tone-${tone}`,
          style: `width:${Math.max((value / max) * 100, value ? 2 : 0)}%` })),
      h("span", { class: "bar-value" }, String(value)))));
}

// Vertical histogram of {low, high, count} buckets.
export function histogram(buckets, { width = 560, height = 200 } = {}) {
  const pad = { left: 36, right: 8, top: 12, bottom: 38 };
  const max = Math.max(...buckets.map((b) => b.count), 1);
  const innerW = width - pad.left - pad.right;
  const innerH = height - pad.top - pad.bottom;
  const slot = innerW / Math.max(buckets.length, 1);
  const label = (b) => (b.low === null ? `< ${b.high}` : b.high === null ? `≥ ${b.low}`
    : `${b.low} … ${b.high}`);
  const bars = buckets.map((b, i) => {
    const barH = (b.count / max) * innerH;
    const x = pad.left + i * slot + slot * 0.15;
    const y = pad.top + innerH - barH;
    return svg("g", {},
      svg("rect", { x, y, width: slot * 0.7, height: Math.max(barH, 0), rx: 3,
        class: b.high !== null && b.high <= 0 ? "bar low" : "bar" }),
      svg("text", { x: x + slot * 0.35, y: y - 4, class: "chart-value",
        "text-anchor": "middle" }, String(b.count)),
      svg("text", { x: x + slot * 0.35, y: height - pad.bottom + 16, class: "chart-axis",
        "text-anchor": "middle" }, label(b)));
  });
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart",
    role: "img", "aria-label": "activation histogram" },
  svg("line", { x1: pad.left, x2: width - pad.right, y1: pad.top + innerH,
    y2: pad.top + innerH, class: "axis" }),
  svg("text", { x: pad.left, y: height - 6, class: "chart-axis" },
    "base-level activation B"), bars);
}

function scale(domain, range) {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  return (v) => r0 + ((v - d0) / (d1 - d0 || 1)) * (r1 - r0);
}

// B over time with horizontal threshold lines: points [{at, base_level}], thresholds {name: v}.
export function lineChart(points, thresholds, { width = 640, height = 220 } = {}) {
  const pad = { left: 44, right: 96, top: 14, bottom: 28 };
  const valid = points.filter((p) => p.base_level !== null);
  if (!valid.length) return h("p", { class: "empty" }, "No access history yet.");
  const times = points.map((p) => new Date(p.at).getTime());
  const values = [...valid.map((p) => p.base_level), ...Object.values(thresholds)];
  const lo = Math.floor(Math.min(...values) - 0.5);
  const hi = Math.ceil(Math.max(...values) + 0.5);
  const x = scale([Math.min(...times), Math.max(...times)], [pad.left, width - pad.right]);
  const y = scale([lo, hi], [height - pad.bottom, pad.top]);
  const path = valid.map((p, i) =>
    `${i ? "L" : "M"}${x(new Date(p.at).getTime()).toFixed(1)},${y(p.base_level).toFixed(1)}`);
  const ticks = [lo, (lo + hi) / 2, hi].map((v) => svg("g", {},
    svg("line", { x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v), class: "grid" }),
    svg("text", { x: pad.left - 6, y: y(v) + 4, class: "chart-axis", "text-anchor": "end" },
      v.toFixed(1))));
  const lines = Object.entries(thresholds).map(([name, v]) => svg("g", {},
    svg("line", { x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v),
      class: `threshold t-${name}` }),
    svg("text", { x: width - pad.right + 6, y: y(v) + 4, class: "chart-axis" },
      `${name} ${v}`)));
  const last = valid[valid.length - 1];
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img",
    "aria-label": "base-level activation over time" },
  ticks, lines,
  svg("path", { d: path.join(" "), class: "line" }),
  svg("circle", { cx: x(new Date(last.at).getTime()), cy: y(last.base_level), r: 4,
    class: "dot" }),
  svg("text", { x: pad.left, y: height - 8, class: "chart-axis" },
    new Date(Math.min(...times)).toLocaleDateString()),
  svg("text", { x: width - pad.right, y: height - 8, class: "chart-axis",
    "text-anchor": "end" }, "now"));
}
