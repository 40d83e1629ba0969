// Tool 3: what the hidden layer reads, its most active units, the next-token guesses.
import { state } from "./state.js";
import { $, el, fmt, num, pct, setAttr, setCss, setText } from "./util.js";

// ---------- Tool 3: the trace ----------

// The trace's lists are made once and rewritten in place after that (see setText):
// a click on a long story makes no element in them and lays out only what changed.
export function drawTrace(tr) {
  state.trace = tr;   // drawn again when the card's width changes
  const g = tr.guesses || [];
  const max = Math.max(1e-9, ...g.map((x) => x.probability));
  const list = $("guesses");
  if (list.children.length !== g.length)
    list.replaceChildren(...g.map(() => el("li", { "data-testid": "guess" }, el("span", { class: "p" }, document.createTextNode("")),
      el("span", { class: "pbar" }), el("span", {}, document.createTextNode("")))));
  g.forEach((x, i) => {
    const li = list.children[i];
    setAttr(li, "data-token", x.token);
    setAttr(li, "data-probability", x.probability);
    setText(li.children[0], pct(x.probability));
    setCss(li.children[1], `width:${(120 * x.probability / max).toFixed(1)}px`);
    setText(li.children[2], x.token);
  });
  list.dataset.position = tr.position;
  setText($("guesses-h"), `Next-token guesses after "${tr.token}" (position ${tr.position})`);
  drawInputs(tr.inputs || []);
  drawHidden(tr.hidden || []);
}

// Each part of the 160 inputs as a strip of cells (blue negative, red positive),
// painted on a canvas a part (160 coloured elements cost a click a style match, a
// layout and a paint each); a cell's number is its tooltip, made when the pointer
// comes (inputTitle). The strips are made once for a model's parts.
// A number is 12 px wide, less when the longest part would not fit the card (a transformer's
// 64-number resid_pre on a phone): the cells shrink, the card does not overflow.
export let CELL_PX = 12;
export function drawInputs(parts) {
  const box = $("inputs");
  const longest = Math.max(1, ...parts.map((p) => p.numbers.length));
  CELL_PX = Math.max(3, Math.min(12, Math.floor((box.clientWidth - 215) / longest)));
  const key = CELL_PX + "|" + parts.map((p) => p.part + ":" + p.numbers.length).join(" ");
  const dpr = window.devicePixelRatio || 1;
  if (box.dataset.key !== key) {
    box.replaceChildren(...parts.map((p) => el("div", { class: "part", "data-testid": "input-part", "data-part": p.part },
      el("span", {}, document.createTextNode("")), el("span", { class: "muted", title: "length of the part" }, document.createTextNode("")),
      el("canvas", { class: "cells", width: Math.round(p.numbers.length * CELL_PX * dpr), height: Math.round(16 * dpr),
        style: `width:${p.numbers.length * CELL_PX}px; height:16px`, role: "img", "aria-label": `the ${p.numbers.length} numbers of ${p.part}` }))));
    box.dataset.key = key;
  }
  state.inputs = parts;
  const big = Math.max(1e-9, ...parts.flatMap((p) => p.numbers.map(Math.abs)));
  parts.forEach((p, k) => {
    const m = /^head (?:(\d+):)?(\d+)$/.exec(p.part);   // "head 3", or "head 2:3" on several layers
    const off = m && state.off.has((Number(m[1] || 1) - 1) * state.heads + Number(m[2]));
    const row = box.children[k];
    const [name, norm, cells] = row.children;
    const cls = "part" + (off ? " off" : "");
    if (row.className !== cls) row.className = cls;
    setText(name, p.part + (off ? " (off)" : ""));
    setText(norm, fmt(p.norm, 2));
    const g = cells.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, p.numbers.length * CELL_PX, 16);
    p.numbers.forEach((x, i) => {
      const a = Math.min(1, Math.abs(x) / big);
      g.fillStyle = x >= 0 ? `rgba(194,65,12,${a.toFixed(3)})` : `rgba(37,99,235,${a.toFixed(3)})`;
      g.fillRect(i * CELL_PX, 0, CELL_PX, 16);
    });
  });
}

export function inputTitle(ev) {
  const cells = ev.target.closest("canvas.cells");
  const part = cells && cells.closest(".part");
  if (!part || !state.inputs) return;
  const p = state.inputs[[...part.parentNode.children].indexOf(part)];
  const i = Math.floor(ev.offsetX / CELL_PX);
  if (p && i >= 0 && i < p.numbers.length) cells.title = `number ${i} of ${p.part}: ${fmt(p.numbers[i])}`;
}

export function drawHidden(units) {
  const t = $("hidden");
  if (!t.tBodies.length || t.tBodies[0].rows.length !== units.length) {
    const head = el("tr", {}, ...["unit", "value", "pushed hardest by", "its input"].map((h, i) =>
      el("th", { class: i === 2 ? "text" : null, text: h })));
    t.replaceChildren(el("thead", {}, head), el("tbody", {}, ...units.map(() => el("tr", {},
      ...[0, 1, 2, 3].map((i) => el("td", { class: i === 2 ? "text" : null }, document.createTextNode("")))))));
  }
  units.forEach((u, k) => {
    const c = t.tBodies[0].rows[k].cells;
    [u.unit, u.value.toFixed(3), u.strongest_part, num(u.part_input)].forEach((x, i) => setText(c[i], x));
  });
}
