// How attention works, step by step: the toy, computed in the page as the arrows move (it
// has made-up numbers, so no server): queries and keys of 2 numbers drawn as arrows, values
// of 3; compare (dot product, divided by sqrt(d) when asked), weigh (softmax), blend (the
// weighted average of the values). The worked example loads seed 000's section 3 exactly.
import { $, el, svg } from "./util.js";

const CHAPTER = {   // three tokens of a tiny story, picked by hand; the last reads
  words: ["Lily", "found", "she"], q: [[0.5, 1], [1, 0.2], [1.2, 0.9]], k: [[2, 0.4], [0.2, 1], [-0.6, 1.4]],
  v: [[1, 0, 2], [0, 1, 0], [0.5, 0.5, 1]], reader: 2, scale: false, causal: true,
};
const SEED = {      // the unit on attention, section 3: keys (1,0), (0,1), (1,1); values (2,0), (0,2), (1,1)
  words: ["word 1", "word 2", "word 3"], q: [[2, 0], [0, 2], [1, 1]], k: [[1, 0], [0, 1], [1, 1]],
  v: [[2, 0], [0, 2], [1, 1]], reader: 0, scale: true, causal: false,
};
const toy = structuredClone(CHAPTER);

const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
const r3 = (x) => (Math.abs(x) < 5e-4 ? 0 : x).toFixed(3);

// Row i of the weights: its scores against the keys it reads, and softmax of them.
export function toyRow(t, i) {
  const d = t.q[i].length, keys = t.k.map((_, j) => j).filter((j) => !t.causal || j <= i);
  const dots = keys.map((j) => dot(t.q[i], t.k[j]));
  const scores = dots.map((x) => (t.scale ? x / Math.sqrt(d) : x));
  const m = Math.max(...scores), ex = scores.map((s) => Math.exp(s - m)), sum = ex.reduce((a, b) => a + b, 0);
  const w = ex.map((x) => x / sum);
  const answer = t.v[0].map((_, c) => keys.reduce((s, j, n) => s + w[n] * t.v[j][c], 0));
  return { keys, dots, scores, weights: w, answer };
}

export function loadToy(preset) {
  Object.assign(toy, structuredClone(preset === "seed" ? SEED : CHAPTER));
  $("toy-scale").checked = toy.scale;
  $("toy-causal").checked = toy.causal;
  $("toy-reader").replaceChildren(...toy.words.map((w, i) => el("option", { value: i, text: `${i + 1}: ${w}` })));
  $("toy-reader").value = toy.reader;
  drawToy();
}

// The plane: -3..3 both ways, the keys in blue and the reading token's query in orange, each
// tip a handle to drag or move with the arrow keys.
const S = 260, U = S / 6, X = (x) => S / 2 + x * U, Y = (y) => S / 2 - y * U;
function drawPlane() {
  const g = svg("svg", { viewBox: `0 0 ${S} ${S}`, role: "group", "aria-label": "the query and the keys as arrows" });
  g.append(svg("line", { x1: 0, x2: S, y1: S / 2, y2: S / 2, stroke: "#bbb" }), svg("line", { y1: 0, y2: S, x1: S / 2, x2: S / 2, stroke: "#bbb" }));
  const arrows = toy.k.map((k, j) => ["k", j, k, "#1d4ed8", `key ${j + 1}`]).concat([["q", toy.reader, toy.q[toy.reader], "#c2410c", `query of token ${toy.reader + 1}`]]);
  for (const [kind, j, p, color, name] of arrows) {
    g.append(svg("line", { x1: X(0), y1: Y(0), x2: X(p[0]), y2: Y(p[1]), stroke: color, "stroke-width": 3 }),
      svg("text", { x: X(p[0]) + 8, y: Y(p[1]) - 8, fill: color, "font-size": 14 }, kind === "q" ? "q" : `k${j + 1}`));
    const tip = svg("circle", { cx: X(p[0]), cy: Y(p[1]), r: 12, fill: color, "fill-opacity": 0.35, stroke: color, tabindex: 0,
      role: "slider", "aria-label": `${name}: (${r3(p[0])}, ${r3(p[1])}); the arrow keys move it`, "aria-valuetext": `(${r3(p[0])}, ${r3(p[1])})`,
      "data-testid": `toy-tip-${kind}${j}`, class: "tip" });
    tip.addEventListener("pointerdown", (ev) => drag(ev, tip, p));
    tip.addEventListener("keydown", (ev) => nudge(ev, p, `toy-tip-${kind}${j}`));
    g.append(tip);
  }
  return g;
}

function drag(ev, tip, p) {
  ev.preventDefault();
  const plane = tip.ownerSVGElement;
  const move = (e) => {
    const b = plane.getBoundingClientRect(), s = S / b.width;
    p[0] = Math.round(((e.clientX - b.left) * s - S / 2) / U * 10) / 10;
    p[1] = Math.round((S / 2 - (e.clientY - b.top) * s) / U * 10) / 10;
    p[0] = Math.max(-3, Math.min(3, p[0])); p[1] = Math.max(-3, Math.min(3, p[1]));
    drawToy();
  };
  const up = () => { window.removeEventListener("pointermove", move); window.removeEventListener("pointerup", up); };
  window.addEventListener("pointermove", move);
  window.addEventListener("pointerup", up);
}

function nudge(ev, p, testid) {
  const step = { ArrowLeft: [-0.1, 0], ArrowRight: [0.1, 0], ArrowUp: [0, 0.1], ArrowDown: [0, -0.1] }[ev.key];
  if (!step) return;
  ev.preventDefault();
  p[0] = Math.round((p[0] + step[0]) * 10) / 10; p[1] = Math.round((p[1] + step[1]) * 10) / 10;
  drawToy();
  const again = document.querySelector(`[data-testid="${testid}"]`);
  if (again) again.focus();
}

// The numbers as inputs: each token's query, key and value.
function drawTable() {
  const num = (arr, i, what) => el("input", { type: "number", step: "0.1", value: arr[i], "aria-label": what, class: "toynum",
    oninput: (ev) => { const x = Number(ev.target.value); if (Number.isFinite(x)) { arr[i] = x; drawToy(true); } } });
  const head = el("tr", {}, ...["token", "query", "key", "value"].map((c) => el("th", { text: c })));
  const rows = toy.words.map((w, t) => el("tr", { class: t === toy.reader ? "reader" : null },
    el("td", { class: "text", text: `${t + 1}: ${w}` }),
    el("td", {}, ...toy.q[t].map((_, i) => num(toy.q[t], i, `token ${t + 1}'s query, number ${i + 1}`))),
    el("td", {}, ...toy.k[t].map((_, i) => num(toy.k[t], i, `token ${t + 1}'s key, number ${i + 1}`))),
    el("td", {}, ...toy.v[t].map((_, i) => num(toy.v[t], i, `token ${t + 1}'s value, number ${i + 1}`)))));
  $("toy-table").replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
}

function drawSteps() {
  const i = toy.reader, r = toyRow(toy, i), d = toy.q[i].length;
  const vec = (x) => `(${x.map(r3).join(", ")})`;
  const compare = r.keys.map((j, n) => `q\u00b7k${j + 1} = ${r3(r.dots[n])}` + (toy.scale ? ` \u00f7 \u221a${d} = ${r3(r.scores[n])}` : "")).join("; ");
  const weigh = el("span", {}, "softmax: ", ...r.keys.map((j, n) => el("span", { class: "share", "data-testid": `toy-share-${j}`, "data-value": r.weights[n] },
    `${n ? ", " : ""}token ${j + 1}: ${r3(r.weights[n])}`)));
  const blend = r.keys.map((j, n) => `${r3(r.weights[n])} \u00d7 ${vec(toy.v[j])}`).join(" + ");
  $("toy-steps").replaceChildren(
    el("li", {}, el("strong", { text: "Compare. " }), `Token ${i + 1}'s query ${vec(toy.q[i])} against the key of every token it reads: ${compare}.`),
    el("li", {}, el("strong", { text: "Weigh. " }), weigh, " (they add up to 1)."),
    el("li", {}, el("strong", { text: "Blend. " }), `${blend} = `,
      el("span", { "data-testid": "toy-answer", "data-value": JSON.stringify(r.answer) }, vec(r.answer)), "."));
}

function drawMatrix() {
  const n = toy.words.length;
  const head = el("tr", {}, el("th", { text: "reads \u2192" }), ...toy.words.map((w, j) => el("th", { text: `${j + 1}: ${w}` })), el("th", { text: "answer" }));
  const rows = toy.words.map((w, i) => {
    const r = toyRow(toy, i);
    return el("tr", { class: i === toy.reader ? "reader" : null }, el("th", { class: "text", text: `${i + 1}: ${w}` }),
      ...[...Array(n).keys()].map((j) => {
        const at = r.keys.indexOf(j);
        return el("td", { "data-testid": "toy-cell", "data-row": i, "data-col": j, "data-value": at < 0 ? 0 : r.weights[at],
          style: at < 0 ? null : `background: rgba(234, 179, 8, ${(0.7 * r.weights[at]).toFixed(2)})`, text: at < 0 ? "\u2013" : r3(r.weights[at]) });
      }), el("td", { text: `(${r.answer.map(r3).join(", ")})` }));
  });
  $("toy-matrix").replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
}

// keepTable: a number typed (its input keeps the focus).
export function drawToy(keepTable) {
  toy.scale = $("toy-scale").checked;
  toy.causal = $("toy-causal").checked;
  toy.reader = Number($("toy-reader").value || 0);
  $("toy-plane").replaceChildren(drawPlane());
  if (!keepTable) drawTable();
  drawSteps();
  drawMatrix();
}

export function wireToy() {
  $("toy-chapter").addEventListener("click", () => loadToy("chapter"));
  $("toy-seed").addEventListener("click", () => loadToy("seed"));
  for (const id of ["toy-scale", "toy-causal", "toy-reader"]) $(id).addEventListener("change", () => drawToy());
  loadToy("chapter");
}
