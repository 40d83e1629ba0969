// Secret 1: where each head's weight goes on the test stories, at several moments of the same
// training run side by side (its snapshots, then the model picked): /api/heads for each.
import { DIST_BINS, headColor, state } from "./state.js";
import { $, cached, el, fmt, fromModel, pct, showError, svg } from "./util.js";

export const massOf = (report) => report.heads.map((r) => [r.d0, r.d1, r.d2, r.d3_7, r.d8_31, r.d32_255]);
const step = (p) => Number((p.match(/\.step(\d+)\.safetensors$/) || [0, Infinity])[1]);
let drawn = null;   // {moments: [{model, label, mass}], reads}: what the chart shows, drawn again at another width

// Secret 1 compares a model with snapshots of its own training run only ("X.stepN.safetensors"
// beside "X.safetensors", or the other snapshots of the run a snapshot is of): another run
// starts from other random weights, so its heads are no earlier stage of these.
export function runSnapshots() {
  const run = (p) => p.split("/").pop().replace(/\.safetensors$/, "").replace(/\.step\d+$/, "");
  const mine = run(state.model), me = state.models.find((m) => m.path === state.model) || {};
  // the run's id, when both files record it, must agree too (a model trained again under the same name is another run)
  const sameRun = (m) => run(m.path) === mine && !(m.run && me.run && m.run !== me.run);
  return state.models.filter((m) => m.arch === me.arch && m.path !== state.model && sameRun(m) && step(m.path) < step(state.model))
    .sort((a, b) => step(a.path) - step(b.path));
}

export function fillCompare() {
  const sel = $("jobs-compare"), others = runSnapshots();
  sel.replaceChildren(el("option", { value: "", text: others.length ? "(this model only)" : "(no earlier snapshot of this run is listed)" }),
    ...others.map((m) => el("option", { value: m.path, text: m.name })));
  if (others.length) sel.value = others[0].path;
  drawn = null;
}

export async function runJobs() {
  const model = state.model, epoch = state.epoch, from = $("jobs-compare").value;
  const snaps = from ? runSnapshots().filter((m) => step(m.path) >= step(from)).map((m) => m.path) : [];
  const paths = snaps.concat([model]);
  $("jobs-go").disabled = true;
  $("jobs-status").textContent = `measuring ${paths.length} moment${paths.length > 1 ? "s" : ""} on the test stories...`;
  try {
    const got = await Promise.all(paths.map((p) => cached("/api/heads", { model: p })));
    if (epoch !== state.epoch) return;
    drawn = { moments: got.map((d, i) => ({ model: paths[i], label: label(paths[i]), mass: massOf(d) })), reads: got[got.length - 1] };
    drawJobs();
    $("jobs-status").textContent = `${paths.length} moment${paths.length > 1 ? "s" : ""} of the run: ${drawn.moments.map((m) => m.label).join(", ")}`;
    fromModel("jobs-card", model, snaps.length ? `and its snapshots ${snaps.map((p) => p.split("/").pop()).join(", ")}` : "");
    showError("jobs", null);
  } catch (e) {
    if (epoch !== state.epoch) return;
    $("jobs-status").textContent = "";
    $("jobs-chart").replaceChildren(); $("jobs-reads").replaceChildren();
    showError("jobs", e);
  } finally { $("jobs-go").disabled = false; }
}

function label(p) {
  const m = state.models.find((x) => x.path === p) || {};
  const s = step(p);
  return Number.isFinite(s) ? `step ${s.toLocaleString("en")}` : m.step ? `step ${m.step.toLocaleString("en")} (the model)` : "the model";
}

// A grid: a column a moment, a row a head; each cell the head's share of weight in each
// distance bin (0, 1, 2, 3-7, 8-31, 32+), full height the largest share drawn.
export function drawJobs() {
  if (!drawn) return;
  const box = $("jobs-chart"), M = drawn.moments, H = M[0].mass.length;
  const W = Math.max(300, Math.min(1100, Math.round(box.clientWidth || 900))), L = 64, T = 34, CH = 58, G = 8;
  const cw = (W - L) / M.length;
  const top = Math.max(0.05, ...M.flatMap((m) => m.mass.flat()));
  const g = svg("svg", { viewBox: `0 0 ${W} ${T + H * (CH + G) + 26}`, role: "img", "data-testid": "jobs-grid", "data-moments": M.length,
    "aria-label": `each head's weight by distance back at ${M.length} moments of training` });
  M.forEach((m, c) => g.append(svg("text", { x: L + c * cw + cw / 2, y: 16, "text-anchor": "middle", "font-size": 14, fill: "#1d1d1f" }, m.label)));
  for (let h = 0; h < H; h++) {
    const y0 = T + h * (CH + G), name = M[0].mass.length > state.heads && state.heads ? `${Math.floor(h / state.heads) + 1}:${h % state.heads}` : String(h);
    g.append(svg("text", { x: 4, y: y0 + CH / 2 + 5, "font-size": 14, fill: headColor(h % (state.heads || 8)), "font-weight": 600 }, `head ${name}`));
    M.forEach((m, c) => {
      const x0 = L + c * cw + 4, bw = (cw - 8) / 6;
      m.mass[h].forEach((v, b) => {
        const hgt = (CH - 14) * v / top;
        g.append(svg("rect", { x: x0 + b * bw + 1, y: y0 + CH - 14 - hgt, width: Math.max(1, bw - 2), height: hgt, fill: headColor(h % (state.heads || 8)) },
          svg("title", {}, `head ${name} at ${m.label}, distance ${DIST_BINS[b]}: ${pct(v)}`)));
      });
      g.append(svg("line", { x1: x0, x2: x0 + cw - 8, y1: y0 + CH - 14, y2: y0 + CH - 14, stroke: "#bbb" }));
    });
  }
  g.append(svg("text", { x: 4, y: T + H * (CH + G) + 16, "font-size": 13, fill: "#4a4a55" },
    `bars: distance back ${DIST_BINS.join(", ")}; full height = ${pct(top)} of a head's weight`));
  box.replaceChildren(g);
  $("jobs-reads").replaceChildren(...drawn.reads.heads.map((r, i) => el("li", {},
    el("span", { class: "swatch", style: `background:${headColor(i % (state.heads || 8))}` }),
    `head ${r.head}: mean distance back ${fmt(r.mean_distance, 1)}; reads most ${r.reads_most}`)));
}
