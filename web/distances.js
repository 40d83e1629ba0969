// Tool 2: each head's learned distance scores, a layer at a time.
import { headColor, modelEntry, state } from "./state.js";
import { $, api, fmt, fromModel, headName, modelViews, showError, svg } from "./util.js";

// ---------- Tool 2: distance scores ----------

// The distance scores of the layer picked (distances --layer); a failure clears the old
// model's curves rather than leave them under the message.
export async function refreshDistances() {
  state.distances = null;
  $("dist-chart").replaceChildren();
  showError("dist", null);
  fromModel("dist-card", null);
  schemeNote();
  if (!modelViews().heads) return;
  const layer = Number($("dist-layer").value) || 1;
  try {
    const d = await api("/api/distances", { model: state.model, layer });
    if (d.model && d.model.file !== state.model) return;   // another model was picked meanwhile
    state.distances = d;
    drawDistances();
    fromModel("dist-card", state.model);
  } catch (e) {
    if (!e.stale) showError("dist", new Error(`${e.message}. Pick another model, or reload the page if the server was restarted.`));
  }
}

export function drawDistances() {
  const d = state.distances;
  if (!d) return;
  const n = Number($("dist-range").value);
  const rows = d.scores.slice(0, n);
  const layer = (Number($("dist-layer").value) || 1) - 1, H = state.heads;
  const series = [...Array(H).keys()].map((h) => rows.map((r) => [r.distance, r["head_" + h]]));
  const bold = state.head >= 0 && Math.floor(state.head / H) === layer ? state.head % H : -1;
  const chart = lineChart(series, {
    W: chartWidth($("dist-chart")), H: 300,
    xLabel: "distance back", yLabel: "distance score", colors: series.map((_, h) => headColor(h)),
    names: series.map((_, h) => `head ${headName(layer * H + h)}`), bold, xMax: n - 1,
  });
  $("dist-chart").replaceChildren(chart);
  $("dist-chart").dataset.layer = layer + 1;                // what is drawn, for scripts and the browser test:
  $("dist-chart").dataset.scores = JSON.stringify(rows[1]); // the scores at distance 1
}

// Tool 2's note for a model whose scores per distance are not learned: ALiBi's fixed
// penalties, or a scheme that adds none (its distance scores are all 0).
function schemeNote() {
  const m = modelEntry(), note = $("dist-scheme");
  const pos = m.pos || "distance";
  note.hidden = !m.heads || pos === "distance" || pos === "t5";
  note.textContent = pos === "alibi" ?
    "This model's scores per distance are fixed, not learned: ALiBi's penalty, a slope times the distance back, a different slope for each head (1/2, 1/4, ... 1/256), set before training and never changed by it." :
    `This model marks order another way (${pos}): it adds no score per distance back, so its curves are flat at 0.`;
}

// The width a chart is drawn at: its box's, so that its text is drawn at its own size
// (a 900-wide picture shrunk to a phone's screen made 15 px labels 6 px high).
export function chartWidth(box, most = 900) {
  return Math.max(300, Math.min(most, Math.round(box.clientWidth || most)));
}

// A line chart: series = [[[x, y], ...], ...]. The head in view is drawn bold.
export function lineChart(series, o) {
  const W = o.W || 900, H = o.H || 300, L = 56, R = W < 560 ? 96 : 130, T = 12, B = 42;
  const pts = series.flat().filter((p) => p[1] !== null && p[1] !== undefined && isFinite(p[1]));
  const xMax = o.xMax !== undefined ? o.xMax : Math.max(1, ...pts.map((p) => p[0]));
  const xMin = o.xMin !== undefined ? o.xMin : 0;
  let yMin = Math.min(...pts.map((p) => p[1])), yMax = Math.max(...pts.map((p) => p[1]));
  if (!pts.length) { yMin = 0; yMax = 1; }
  if (yMax - yMin < 1e-9) { yMin -= 0.5; yMax += 0.5; }
  const pad = 0.05 * (yMax - yMin); yMin -= pad; yMax += pad;
  const X = (x) => L + (W - L - R) * (x - xMin) / Math.max(1e-9, xMax - xMin);
  const Y = (y) => T + (H - T - B) * (1 - (y - yMin) / (yMax - yMin));
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": o.aria || `${o.yLabel} by ${o.xLabel}` });
  for (const t of ticks(yMin, yMax, 5)) {
    g.append(svg("line", { x1: L, x2: W - R, y1: Y(t), y2: Y(t), stroke: "#eee" }),
      svg("text", { x: L - 6, y: Y(t) + 4, "text-anchor": "end" }, fmt(t, 2)));
  }
  for (const t of ticks(xMin, xMax, 8)) {
    g.append(svg("line", { x1: X(t), x2: X(t), y1: H - B, y2: H - B + 5, stroke: "#999" }),
      svg("text", { x: X(t), y: H - B + 19, "text-anchor": "middle" }, String(Math.round(t))));
  }
  g.append(svg("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: "#999" }),
    svg("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" }, o.xLabel),
    svg("text", { x: 14, y: (T + H - B) / 2, transform: `rotate(-90 14 ${(T + H - B) / 2})`, "text-anchor": "middle" }, o.yLabel));
  const legend = svg("g", { class: "legend" });
  series.forEach((s, i) => {
    const bold = o.bold === undefined || o.bold < 0 || o.bold === i;
    const p = s.filter((q) => q[1] !== null && q[1] !== undefined && isFinite(q[1]));
    if (p.length) {
      g.append(svg("polyline", {
        points: p.map((q) => `${X(q[0]).toFixed(1)},${Y(q[1]).toFixed(1)}`).join(" "), fill: "none",
        stroke: o.colors[i], "stroke-width": o.bold === i ? 3.5 : 1.8, opacity: bold ? 1 : 0.35,
        "data-testid": "series", "data-points": p.length,
      }));
      if (p.length === 1) g.append(svg("circle", { cx: X(p[0][0]), cy: Y(p[0][1]), r: 4, fill: o.colors[i] }));
    }
    legend.append(svg("rect", { x: W - R + 14, y: T + 6 + 20 * i, width: 14, height: 10, fill: o.colors[i] }),
      svg("text", { x: W - R + 34, y: T + 15 + 20 * i }, o.names[i]));
  });
  g.append(legend);
  return g;
}

export function ticks(lo, hi, count) {
  const step0 = (hi - lo) / count;
  const mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0) || step0;
  const out = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) out.push(Math.abs(t) < 1e-12 ? 0 : t);
  return out;
}
