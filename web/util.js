// What every view uses: elements, number formats, the API calls (one, a batch), the answers kept,
// head names and which views the model picked has.
import { send } from "./site.js";
import { state } from "./state.js";

// ---------- small helpers ----------

export const $ = (id) => document.getElementById(id);

export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "style") node.style.cssText = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  // a box that scrolls is reached by the keyboard too (its arrows scroll it)
  if (/(^| )scroll( |$)/.test(node.className) && !node.hasAttribute("tabindex")) node.tabIndex = 0;
  return node;
}

export const SVG_NS = "http://www.w3.org/2000/svg";
export function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) node.setAttribute(k, v);
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

export function fmt(x, digits = 3) {
  if (x === null || x === undefined) return "";
  if (typeof x !== "number") return String(x);
  if (Number.isInteger(x)) return String(x);
  return x.toFixed(digits);
}
// A count with commas every three digits ("1,425,880"), as toLocaleString("en") writes it
// without the hundreds of milliseconds its first call takes to set up (on the first view's way).
export const thousands = (n) => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
export const num = (x) => (typeof x === "number" ? x.toFixed(3) : fmt(x));
export const pct = (x) => (100 * x).toFixed(1) + "%";
// A probability that may be tiny (a name the network does not expect): two digits that count.
export const prob = (x) => (x >= 0.001 || x === 0 ? pct(x) : (100 * x).toPrecision(2) + "%");

export function showError(where, err) {
  if (err && err.stale) return; // asked for a model picked before: nothing to show for this one
  const box = $("error-" + where);
  if (!err) { box.hidden = true; box.textContent = ""; return; }
  box.textContent = err.message || String(err);
  box.hidden = false;
}

// One API call: POST with a JSON body (or GET without), to the server or the page's worker
// (site.js); a 4xx/5xx answer's {"error"} becomes the thrown message, so every view can show it as is.
// A call still waiting for the worker when another model is picked (state.epoch) is never
// computed: it throws an AbortError marked stale, which showError leaves unshown.
export async function api(path, body, signal) {
  const epoch = state.epoch, stale = () => epoch !== state.epoch;
  const init = body === undefined ? { signal, stale } :
    { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal, stale };
  const res = await send(path, init);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) {
    let msg = data && data.error ? data.error : `${path}: the server answered ${res.status}`;
    if (data && data.hint) msg += ` (${data.hint})`;
    throw new Error(msg);
  }
  if (data === null) throw new Error(`${path}: the server's answer is not JSON`);
  return data;
}

// Several views in one request: bodies [{url, body}] -> their answers, in order;
// the first that failed is thrown as its message.
export async function batch(requests) {
  const data = await api("/api/batch", { requests });
  return data.answers.map((a, i) => {
    if (a.status === 200) return a.body;
    const b = a.body || {};
    throw new Error((b.error || `${requests[i].url}: the server answered ${a.status}`) + (b.hint ? ` (${b.hint})` : ""));
  });
}

// Answers kept by what was asked (a view's url and body): a click on a position seen
// before, or another head whose numbers are in hand, asks for nothing. At most
// KEEP answers, the oldest dropped (a Map keeps its keys in the order set).
export const KEEP = 96;
export function known(url, body) { return state.answers.get(url + JSON.stringify(body)); }
export function keep(url, body, answer) {
  const key = url + JSON.stringify(body);
  state.answers.delete(key);
  state.answers.set(key, answer);
  if (state.answers.size > KEEP) state.answers.delete(state.answers.keys().next().value);
}

// Head g (numbered over every layer) as the CLI names it: "3", or "2:3" (layer 2's head 3)
// on a model of several layers.
export function headName(g) {
  return state.layers > 1 ? `${Math.floor(g / state.heads) + 1}:${g % state.heads}` : String(g);
}

// Which views the model has: the attention view and the trace read one layer of heads at
// a time ("layer" in their requests on a model of several; a server that reads only the
// first layer of such a model says so, and the page shows a note: state.layerViews);
// the distance scores, the heads' jobs and switching heads off read any number of layers.
export function modelViews() {
  const heads = state.heads > 0; // the server's count of a layer's heads: 0 for a model without (window8)
  return { heads, oneLayer: heads && (state.layers === 1 || state.layerViews[state.model] === true) };
}

// The layer the attention view and the trace read: the head in view's, else the one picked.
export function viewLayer() {
  return state.head >= 0 ? Math.floor(state.head / state.heads) + 1 : Math.min(state.layer, state.layers);
}

// "layer" for a request of the attention view or the trace: only on a model of several
// layers (a one-layer model's requests stay as they were, and so do their kept answers).
export function layerBody() {
  return state.layers > 1 ? { layer: viewLayer() } : {};
}

// A card the model has not: its content hidden and a short note in its place (not an
// error: nothing went wrong). note null: the card shown again.
export function setUnavailable(card, note) {
  const box = $(card);
  let p = box.querySelector(":scope > .note");
  if (!p) { p = el("p", { class: "note", "data-testid": "note-" + card }); box.querySelector("h2").after(p); }
  p.textContent = note || "";
  p.hidden = !note;
  box.classList.toggle("unavailable", !!note);
}

export function ablation() {
  const heads = [...state.off].sort((a, b) => a - b).map(headName).join(",");
  return heads ? { ablate: heads, ablate_mode: state.mode } : {};
}

// Set a cell's text, a node's attribute or its style only when they change (no needless redraw).
export function setText(cell, x) {
  const s = String(x);
  if (!cell.firstChild) cell.append(document.createTextNode(""));
  if (cell.firstChild.nodeValue !== s) cell.firstChild.nodeValue = s;
}
export function setAttr(node, k, v) {
  const s = String(v);
  if (node.getAttribute(k) !== s) node.setAttribute(k, s);
}
export function setCss(node, css) {
  if (node._css !== css) node.style.cssText = node._css = css;
}

export function tableOf(rows, name) {
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const head = el("tr", {}, ...cols.map((c) => el("th", { text: c.replace(/_/g, " ") })));
  const body = rows.map((r) => el("tr", { "data-testid": `${name}-row` }, ...cols.map((c) => {
    const v = r[c];
    return el("td", { class: typeof v === "string" ? "text" : null, text: v !== null && typeof v === "object" ? JSON.stringify(v) : fmt(v) });
  })));
  return el("div", { class: "scroll" }, el("table", {}, el("thead", {}, head), el("tbody", {}, ...body)));
}

// The line of a card that names the model its numbers come from.
export function fromModel(card, path, more) {
  const p = document.querySelector(`[data-testid="from-${card}"]`);
  if (!p) return;
  p.textContent = path ? `Numbers from ${path.split("/").pop()}${more ? "; " + more : ""}.` : "";
  p.dataset.model = path || "";
}

// A view's answer kept by what was asked, or asked now (and kept); late answers are the
// caller's to drop (state.epoch).
export async function cached(url, body) {
  const had = known(url, body);
  if (had) return had;
  const got = await api(url, body);
  keep(url, body, got);
  return got;
}

// What a model is called on the page, from what the server says of it (its architecture's
// name, its blocks or layers), never from a list of names: "the attention model", "the
// attn-only model of 2 blocks" ...
export function kindOf(m) {
  if (!m || !m.arch) return "the model";
  const parts = m.readout === "residual" ? "blocks" : "layers";
  return `the ${m.arch} model` + (m.layers > 1 ? ` of ${m.layers} ${parts}` : "");
}

// A model without heads (the server's count of a layer's heads is 0): chapter 6's baseline.
export const headless = (m) => !!m && m.heads === 0;

// Token backgrounds for a weight a in [0, 1] (of the largest): from white to a dark orange,
// with text of contrast at least 4.5:1 on every step (WCAG's relative luminance): dark text
// while the background is light enough for it, white once it is dark enough, and no step in
// between (where neither would be).
const DARK = [154, 52, 18];
const lin = (c) => { const x = c / 255; return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; };
const lum = (rgb) => 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2]);
const mix = (a) => DARK.map((c) => Math.round(255 + (c - 255) * a));
const INK_L = 0.0123;   // #1d1d1f
export const contrast = (l1, l2) => (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
export function tokenShade(a) {
  let rgb = mix(a);
  if (contrast(lum(rgb), INK_L) >= 4.6) return { bg: `rgb(${rgb.join(", ")})`, dark: false };
  let x = a;
  while (x < 1 && contrast(lum(mix(x)), 1) < 4.6) x += 0.01;
  rgb = mix(Math.min(1, x));
  return { bg: `rgb(${rgb.join(", ")})`, dark: true };
}
export const DARKEST = `rgb(${DARK.join(", ")})`;
