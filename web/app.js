// The storylm playground: plain JavaScript over the JSON API of `storylm serve`.
// Every number shown comes from the server (the same numbers as the CLI's --json);
// the page only draws them. A click asks for what its views need in one request
// (/api/batch), answers are kept for the clicks after, and a late answer to an
// older click is dropped.
"use strict";

// Distinct colours, one a head of a layer, readable on white (Tableau 10 minus the greys);
// a model of more heads a layer uses them again.
const HEAD_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"];
const headColor = (h) => HEAD_COLORS[h % HEAD_COLORS.length];
const DIST_BINS = ["0", "1", "2", "3-7", "8-31", "32+"];

const state = {
  models: [],
  model: "",
  text: "",
  pos: -1,            // the reading position; -1 until the server said which is the last
  linkPos: null,      // a permalink's position, read once the story's length is known
  layers: 1,          // the model's layers of heads and heads a layer (0: none, window8), from /api/models
  heads: 8,
  head: -1,           // the head viewed, numbered over every layer (layer l's head h: l*heads + h); -1: all
  off: new Set(),     // heads switched off, numbered as head
  mode: "zero",
  attend: null,       // the last /api/attend answer drawn: one head's, or all 8 by position (wide)
  attendHead: -1,     // the head it was asked for (-1: it holds all 8, wide)
  answers: new Map(), // views' answers kept, by what was asked (see known)
  asking: new Map(),  // views asked for and not answered yet, by what was asked: their answers' promises
  hover: 0,           // the timer of the pointer resting on a token (prefetch)
  tokenKey: "",       // the token ids the token buttons were made for
  weights: null,      // the weight drawn behind each token, by position
  titled: null,       // the token whose tooltip was made last (remade after a redraw)
  inputs: null,       // the trace's parts drawn (their numbers are the cells' tooltips)
  lossTokens: null,   // /api/loss's table: the probability of each next token
  fullLoss: {},       // loss with every head on, by model and text, to show what switching off costs
  distances: null,    // /api/distances of the model
  ablate: null,       // {body, data}: the /api/ablate answer drawn (Secret 3)
  trainHeads: [],     // the training's heads' weight by distance, at each save
  seq: { story: 0, pos: 0 },
  gen: null,          // AbortController of the running generation
  trainTimer: 0,
  trainSeen: "",
};

// ---------- small helpers ----------

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
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
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) node.setAttribute(k, v);
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function fmt(x, digits = 3) {
  if (x === null || x === undefined) return "";
  if (typeof x !== "number") return String(x);
  if (Number.isInteger(x)) return String(x);
  return x.toFixed(digits);
}
const num = (x) => (typeof x === "number" ? x.toFixed(3) : fmt(x));
const pct = (x) => (100 * x).toFixed(1) + "%";
// A probability that may be tiny (a name the network does not expect): two digits that count.
const prob = (x) => (x >= 0.001 || x === 0 ? pct(x) : (100 * x).toPrecision(2) + "%");

function showError(where, err) {
  const box = $("error-" + where);
  if (!err) { box.hidden = true; box.textContent = ""; return; }
  box.textContent = err.message || String(err);
  box.hidden = false;
}

// One API call: POST with a JSON body (or GET without); a 4xx/5xx answer's
// {"error"} becomes the thrown message, so every view can show it as is.
async function api(path, body, signal) {
  const init = body === undefined ? { signal } :
    { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal };
  const res = await fetch(path, init);
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
async function batch(requests) {
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
const KEEP = 96;
function known(url, body) { return state.answers.get(url + JSON.stringify(body)); }
function keep(url, body, answer) {
  const key = url + JSON.stringify(body);
  state.answers.delete(key);
  state.answers.set(key, answer);
  if (state.answers.size > KEEP) state.answers.delete(state.answers.keys().next().value);
}

// Head g (numbered over every layer) as the CLI names it: "3", or "2:3" (layer 2's head 3)
// on a model of several layers.
function headName(g) {
  return state.layers > 1 ? `${Math.floor(g / state.heads) + 1}:${g % state.heads}` : String(g);
}

// Which views the model has: the attention view and the trace read one layer of heads;
// the distance scores, the heads' jobs and switching heads off read any number of layers.
function modelViews() {
  const heads = modelArch() === "attention" && state.heads > 0;
  return { heads, oneLayer: heads && state.layers === 1 };
}

// A card the model has not: its content hidden and a short note in its place (not an
// error: nothing went wrong). note null: the card shown again.
function setUnavailable(card, note) {
  const box = $(card);
  let p = box.querySelector(":scope > .note");
  if (!p) { p = el("p", { class: "note", "data-testid": "note-" + card }); box.querySelector("h2").after(p); }
  p.textContent = note || "";
  p.hidden = !note;
  box.classList.toggle("unavailable", !!note);
}

function ablation() {
  const heads = [...state.off].sort((a, b) => a - b).map(headName).join(",");
  return heads ? { ablate: heads, ablate_mode: state.mode } : {};
}

// ---------- models ----------

// The model list (again after a training saved a new one); the model in use stays.
async function loadModels() {
  const data = await api("/api/models");
  state.models = data.models || [];
  const pick = $("model");
  const keep = state.model || data.default;
  pick.replaceChildren(...state.models.map((m) =>
    el("option", { value: m.path, text: `${m.name} (${m.arch})` })));
  const known = state.models.some((m) => m.path === keep);
  state.model = known ? keep : (state.models[0] ? state.models[0].path : "");
  pick.value = state.model;
  fillBaselines();
  fillCompare();
  describeModel();
}

// The model's shape (from its file's header, through /api/models) decides the heads drawn;
// switches of another model's heads do not carry over.
function describeModel() {
  const m = state.models.find((x) => x.path === state.model);
  $("model-download").href = "/api/download?model=" + encodeURIComponent(state.model);
  $("model-info").textContent = m ? `${m.path}: ${m.params.toLocaleString("en")} parameters, ${m.vocab_size} tokens` +
    (m.layers > 1 ? `, ${m.layers} layers of ${m.heads} heads` : "") : "";
  if (m && m.vocab_size > 0) $("gen-k").max = m.vocab_size; // top-k reaches every token of this model's vocabulary
  const layers = m && m.layers ? m.layers : 1, heads = m && m.heads !== undefined ? m.heads : 8;
  if (layers !== state.layers || heads !== state.heads) { state.off.clear(); state.head = -1; }
  state.layers = layers;
  state.heads = heads;
  const views = modelViews();
  const one = views.oneLayer ? null : views.heads ?
    `The attention view and the trace read one layer of heads; this model has ${state.layers}. Its distance scores (layer by layer), the heads' jobs, switching heads off (Secret 3) and the two lookups (Secret 4) read every layer.` :
    "This is a window8 model (chapter 6's network): it reads the last 8 tokens with no heads, so there is nothing to show here. The loss on your story, the name swap (as its baseline), Secret 4 and writing on work with it.";
  setUnavailable("attend-card", one);
  const short = views.heads ? "This view reads one layer of heads (see Tool 1)." : "A window8 model has no heads: nothing to show here (see Tool 1).";
  setUnavailable("trace-card", one && short);
  for (const card of ["dist-card", "jobs-card", "ablate-card"]) setUnavailable(card, views.heads ? null : short);
  // without heads the bar keeps only the loss on the story
  for (const id of ["heads-h", "heads"]) $(id).hidden = !views.heads;
  $("ablate-mode").closest(".row").classList.toggle("no-heads", !views.heads);
  const layerPick = $("dist-layer");
  layerPick.replaceChildren(...[...Array(state.layers).keys()].map((l) => el("option", { value: l + 1, text: `layer ${l + 1}` })));
  layerPick.closest("label").hidden = state.layers < 2;
  drawHeadsBar();
  fillAblateHeads();
}

function fillBaselines() {
  const sel = $("swap-baseline");
  const old = sel.value;
  const w8 = state.models.filter((m) => m.arch === "window8");
  sel.replaceChildren(el("option", { value: "", text: "(no baseline)" }),
    ...w8.map((m) => el("option", { value: m.path, text: `${m.name} (window8)` })));
  if (w8.some((m) => m.path === old)) sel.value = old;
  else if (w8.length) sel.value = w8[0].path;
}

// The model list names files as the server lists them; a path given elsewhere (the
// trainer's) may be spelt differently, so the file name decides when the path does not.
function findModel(p) {
  const base = (x) => x.split("/").pop();
  return state.models.find((m) => m.path === p) || state.models.find((m) => base(m.path) === base(p));
}

function modelArch() {
  const m = state.models.find((x) => x.path === state.model);
  return m ? m.arch : "attention";
}

// ---------- the story: attention, trace and loss ----------

// Text, model or switches changed: ask for all three views at once, in one request.
async function refreshStory() {
  const n = ++state.seq.story;
  const linkPos = state.linkPos;   // only for the story the permalink came with
  state.linkPos = null;
  state.text = $("story").value;
  if (!state.text.trim()) return;
  if (!modelViews().oneLayer) { showStoryLoss(n); return; }
  const lossKey = state.model + "\u0000" + state.text;
  const more = [{ url: "/api/loss", body: { model: state.model, text: state.text, ...ablation() } }];
  if (state.off.size && state.fullLoss[lossKey] === undefined) more.push({ url: "/api/loss", body: { model: state.model, text: state.text } });
  try {
    const got = await fetchPosition(state.pos, true, performance.now(), more);
    if (!got || n !== state.seq.story) return;
    // a permalink's position past the story's end is dropped: the last token reads
    if (linkPos !== null && linkPos < state.attend.tokens.length && linkPos !== state.pos) await fetchPosition(linkPos);
    const [loss, full] = got;
    if (!state.off.size) state.fullLoss[lossKey] = loss.loss;
    state.lossTokens = loss.tokens || null;
    drawTokens();
    if (full) state.fullLoss[lossKey] = full.loss;
    drawLoss(loss, state.fullLoss[lossKey]);
    showError("story", null);
  } catch (e) {
    if (n === state.seq.story) showError("story", e);
  }
}

// Attention and trace for one position, with the requests in more (their answers
// are returned), in one request to the server, which runs the text once for all of
// them. The attention asked for is the head in view, or with all 8 in view their
// weights by position (wide: a tenth of all heads' rows), so a click on a long story
// stays small; the trace does not depend on the head, so picking another head asks
// for the attention alone (withTrace false). Answers kept (known) are not asked again.
// The views a click on pos shows: [url, body] of the attention (the head in view, or
// all 8 wide) and, withTrace, of the trace.
function positionViews(pos, withTrace) {
  const base = { model: state.model, text: state.text, pos, ...ablation() };
  const views = [["/api/attend", state.head >= 0 ? { ...base, head: state.head } : { ...base, wide: true }]];
  if (withTrace) views.push(["/api/trace", base]);
  return views;
}

// The answers of views ([url, body]) and of the requests in more ({url, body}, never
// kept): the kept ones, those already asked for (awaited, not asked again), and one
// batch for the rest, whose answers are kept. {answers, more, inHand: all were kept}.
async function answersOf(views, more = []) {
  const inHand = views.every(([url, body]) => known(url, body));
  const got = views.map(([url, body]) => known(url, body) || state.asking.get(url + JSON.stringify(body)));
  const ask = views.filter((_, i) => !got[i]);
  const sent = ask.length || more.length ? batch(ask.map(([url, body]) => ({ url, body })).concat(more)) : null;
  ask.forEach(([url, body], j) => {
    const key = url + JSON.stringify(body);
    const one = sent.then((a) => {
      keep(url, body, a[j]);
      keep(url, { ...body, pos: a[j].position }, a[j]);   // a click on that position later asks nothing
      return a[j];
    });
    one.catch(() => {}).finally(() => state.asking.delete(key));
    state.asking.set(key, one);
    got[views.indexOf(ask[j])] = one;
  });
  const answers = await Promise.all(got);
  return { answers, more: sent ? (await sent).slice(ask.length) : [], inHand };
}

// A position's views asked for ahead (unless in hand or asked for already), so that
// the click or key that usually follows finds them in hand or on their way.
function askAhead(pos) {
  if (state.attend && modelViews().oneLayer && pos !== state.pos && pos >= 0 && pos < state.attend.tokens.length)
    answersOf(positionViews(pos, true)).catch(() => {});
}

// The pointer resting on a token asks for its views (one passing over tokens asks
// nothing); pressing the button asks at once, as a click takes the press's length
// (about a tenth of a second by hand) before it fires.
function prefetch(b) {
  clearTimeout(state.hover);
  state.hover = setTimeout(() => askAhead(Number(b.dataset.pos)), 80);
}

async function fetchPosition(pos, withTrace = true, t0 = performance.now(), more = []) {
  const n = ++state.seq.pos;
  const head = state.head;
  try {
    const { answers: got, more: extra, inHand } = await answersOf(positionViews(pos, withTrace), more);
    if (n !== state.seq.pos) return null;
    const cached = inHand && !more.length;
    const [att, tr] = got;
    const t1 = performance.now();
    state.attend = att;
    state.attendHead = head;
    state.pos = att.position;
    drawTokens();
    drawAttention();
    if (tr) drawTrace(tr);
    // From the click to everything drawn and laid out (reading offsetHeight makes the
    // browser lay the page out now): what "instant" is measured by.
    void document.body.offsetHeight;
    const t2 = performance.now();
    markClick(att.position, t0, t1, t2, cached);
    $("attend-caption").append(el("span", { class: "muted", text: ` (${cached ? "known" : "answered"} and drawn in ${(t2 - t0).toFixed(0)} ms)` }));
    showError("attend", null);
    if (tr) showError("trace", null);
    savePermalink();
    return extra;
  } catch (e) {
    if (n === state.seq.pos) {
      // the old numbers go: they belong to a text, model or switches no longer asked for
      const msg = new Error(`${e.message}. Change the text, the switches or the model and try again; reload the page if the server was restarted.`);
      clearPositionViews();
      showError("attend", msg);
      if (withTrace) showError("trace", msg);
    }
    if (more.length) throw e;
    return null;
  }
}

// What a click took, for scripts/click_latency and the browser test: from the click
// (t0, its event's time) to the answers in hand (t1) and to all drawn and laid out
// (t2), and to the next frame (a task queued from the frame's callback runs once the
// frame is painted).
function markClick(pos, t0, t1, t2, cached) {
  const d = document.body.dataset;
  d.clickCached = cached ? "1" : "0";
  d.clickMs = (t2 - t0).toFixed(1);
  d.drawMs = (t2 - t1).toFixed(1);
  d.clickPos = String(pos);
  delete d.paintMs;
  requestAnimationFrame(() => setTimeout(() => { if (d.clickPos === String(pos)) d.paintMs = (performance.now() - t0).toFixed(1); }));
}

// Another head picked for viewing.
function viewHead(h) {
  state.head = h;
  drawHeadsBar();
  savePermalink();
  const layer = h >= 0 ? Math.floor(h / state.heads) + 1 : 0;
  if (layer && state.layers > 1 && Number($("dist-layer").value) !== layer) { $("dist-layer").value = layer; refreshDistances(); }
  else drawDistances();
  if (h >= 0 && $("ablate-head").value !== String(h)) $("ablate-head").value = h;
  drawAblate();
  if (state.attend && state.attendHead === h) { drawTokens(); drawAttention(); }
  else if (state.attend) fetchPosition(state.pos, false);
}

// A model without the attention view (window8, or heads on several layers): the views
// of one layer's heads are emptied (their cards say why), the loss on the story (with the
// switches, on several layers) and the generation still work.
async function showStoryLoss(n) {
  state.seq.pos++;
  clearPositionViews();
  showError("attend", null);
  showError("trace", null);
  const lossKey = state.model + "\u0000" + state.text;
  try {
    const loss = await api("/api/loss", { model: state.model, text: state.text, ...ablation() });
    if (!state.off.size) state.fullLoss[lossKey] = loss.loss;
    else if (state.fullLoss[lossKey] === undefined) state.fullLoss[lossKey] = (await api("/api/loss", { model: state.model, text: state.text })).loss;
    if (n === state.seq.story) drawLoss(loss, state.fullLoss[lossKey]);
    showError("story", null);
  } catch (e) { if (n === state.seq.story) { clearLoss(); showError("story", e); } }
}

// The attention view and the trace emptied (the tables made again when next drawn).
function clearPositionViews() {
  state.attend = null;
  drawTokens();
  for (const id of ["attend-table", "guesses", "inputs", "hidden"]) $(id).replaceChildren();
  grid.kind = "";
  $("inputs").dataset.key = "";
  $("attend-caption").textContent = "";
  $("guesses-h").textContent = "Next-token guesses";
}

function clearLoss() {
  $("loss").replaceChildren();
  delete $("loss").dataset.loss;
}

// The weight each token gets from the reading position: one head's, or with all
// heads in view their mean over the heads that are on (each head's weights add up
// to 1, so the mean does too).
function weightsShown() {
  const w = new Map();
  if (!state.attend) return w;
  if (state.attendHead >= 0) {
    for (const k of state.attend.keys) w.set(k.position, k.weight);
    return w;
  }
  const heads = [...Array(state.heads).keys()].filter((h) => !state.off.has(h));
  if (!heads.length) return w;
  for (const k of state.attend.keys) {
    let sum = 0;
    for (const h of heads) sum += k["weight_" + h];
    w.set(k.position, sum / heads.length);
  }
  return w;
}

// The buttons are made once for a story's tokens and then only restyled, so a click
// on a long story redraws quickly.
function drawTokens() {
  const box = $("tokens");
  const att = state.attend;
  if (!att) { box.replaceChildren(); state.tokenKey = ""; return; }
  const key = att.tokens.map((t) => t.id).join(" ");
  if (key !== state.tokenKey) {
    box.replaceChildren(...att.tokens.map(tokenButton));
    state.tokenKey = key;
  }
  const w = weightsShown();
  state.weights = w;
  const max = Math.max(1e-9, ...w.values());
  const viewOff = state.head >= 0 && state.off.has(state.head);
  const buttons = box.children;
  att.tokens.forEach((t, i) => restyleToken(buttons[i], t, w.get(t.position), max, viewOff));
  if (state.titled) tokenTitle(state.titled);
}

function tokenButton(t) {
  const piece = t.token;
  const cont = piece.startsWith("##");
  const label = cont ? [el("span", { class: "hash", text: "##" }), piece.slice(2)] : [piece];
  const b = el("button", { type: "button", "data-testid": "token", "data-pos": t.position }, ...label);
  b.dataset.base = "tok" + (cont ? " cont" : "") + (/^\[.*\]$/.test(piece) ? " special" : "");
  return b;
}

// A click restyles every token: only what changed is written (each write makes the
// browser match styles again; a weight is kept in state.weights, not written on each of
// the 256 tokens), and the tooltip is made when the pointer comes (tokenTitle).
function restyleToken(b, t, weight, max, viewOff) {
  let cls = b._base || (b._base = b.dataset.base);
  if (t.position === state.pos) cls += " reading";
  if (t.position > state.pos) cls += " later";
  let bg = "";
  if (weight !== undefined && !viewOff) {
    // in steps of 1/20 of the largest (finer is hardly seen), none below: most tokens
    // keep theirs from one click to the next, and a token whose style is not written
    // is not restyled
    const a = Math.round(20 * weight / max);
    if (a > 0) bg = `rgba(194, 65, 12, ${a / 20})`;
    if (a > 11) cls += " dark";
  }
  const reading = t.position === state.pos;
  if (b._cls !== cls) b.className = b._cls = cls;
  if (b._bg !== bg) b.style.background = b._bg = bg;
  if (b._reading !== reading) {
    b._reading = reading;
    b.setAttribute("aria-pressed", reading ? "true" : "false");
    b.tabIndex = reading ? 0 : -1;   // one tab stop; the arrow keys move along
  }
}

// The tooltip of the token under the pointer: its weight, and the probability the
// network gave it.
function tokenTitle(b) {
  state.titled = b;
  const t = state.attend && state.attend.tokens[Number(b.dataset.pos)];
  if (!t) return;
  const weight = state.weights && state.weights.get(t.position);
  let title = weight === undefined ? `position ${t.position}` : `position ${t.position}: weight ${pct(weight)}`;
  const guessed = state.lossTokens && state.lossTokens[t.position - 1];
  if (guessed && guessed.target_id === t.id) title += `; the network gave it ${pct(guessed.probability)} (rank ${guessed.rank})`;
  if (b.title !== title) b.title = title;
}

// Arrow keys move the reading position; the focus follows it once redrawn.
function tokenKeys(ev) {
  const n = state.attend ? state.attend.tokens.length : 0;
  let p = state.pos;
  if (ev.key === "ArrowLeft") p = Math.max(0, p - 1);
  else if (ev.key === "ArrowRight") p = Math.min(n - 1, p + 1);
  else if (ev.key === "Home") p = 0;
  else if (ev.key === "End") p = n - 1;
  else return;
  ev.preventDefault();
  fetchPosition(p, true, ev.timeStamp).then(() => {
    const b = $("tokens").querySelector(`[data-pos="${p}"]`);
    if (b) b.focus();
    // the next key most likely moves on the same way
    if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") askAhead(ev.key === "ArrowLeft" ? p - 1 : p + 1);
  });
}

function drawAttention() {
  const att = state.attend;
  const cap = $("attend-caption");
  if (!att) return;
  const who = state.head >= 0 ? `head ${state.head}` : `all ${state.heads} heads (colour: their mean weight over the heads that are on)`;
  const read = att.keys.length;   // a row a position read, in either layout
  cap.textContent = `Position ${att.position}, "${att.token}", reads ${read} tokens; ${who}.`;
  if (state.head >= 0 && state.off.has(state.head)) {
    cap.textContent += ` Head ${state.head} is switched off: its weights are computed as always, but what it brings back is replaced, so they no longer count.`;
  }
  if (state.attendHead >= 0) drawOneHeadTable(att); else drawAllHeadsTable(att);
}

// The attention tables: only the rows in sight in their scroll box and a couple either
// side exist, between two spacers as tall as the rows left out (rows have one fixed
// height, style.css); scrolling fills the others in. The rows are kept from one
// click to the next and written in place, a cell only where its text or colour
// changed: a click makes no element and lays out only the cells that changed (a
// 256-token story has 256 rows of up to 12 cells; making, matching and laying them
// all out was most of a click's time).
const ROW_PX = 28, ROWS_SEEN = 16, ROWS_AROUND = 2;
const grid = { kind: "", rows: [], fill: null, from: 0, to: 0, top: 0, pool: [], shown: 0, cells: 0, pads: [] };

// Writes only what changed (each write makes the browser match styles or lay out again).
function setText(cell, x) {
  const s = String(x);
  if (!cell.firstChild) cell.append(document.createTextNode(""));
  if (cell.firstChild.nodeValue !== s) cell.firstChild.nodeValue = s;
}
function setAttr(node, k, v) {
  const s = String(v);
  if (node.getAttribute(k) !== s) node.setAttribute(k, s);
}
function setCss(node, css) {
  if (node._css !== css) node.style.cssText = node._css = css;
}

// kind: which table ("one" head, "all" heads); cols: its grid columns; minEm: the sum
// of their least widths (in em), below which the table scrolls sideways in its box
// instead of squeezing its columns; labels and headStyle(i): its header;
// fill(row, item): writes item into a row's cells.
function setGridRows(kind, cols, minEm, labels, headStyle, rows, fill) {
  const t = $("attend-table");
  if (grid.kind !== kind) {
    t.style.setProperty("--cols", cols);
    t.style.minWidth = `${minEm}em`;
    const head = el("div", { class: "gt-row gt-head", role: "row", "aria-rowindex": 1 }, ...labels.map((c, i) =>
      el("span", { role: "columnheader", class: i === 1 ? "text" : null, style: headStyle ? headStyle(i) : null, text: c })));
    grid.pads = [el("div", { class: "gt-pad" }), el("div", { class: "gt-pad" })];
    t.replaceChildren(head, ...grid.pads);
    Object.assign(grid, { kind, pool: [], shown: 0, cells: labels.length });
  }
  setAttr(t, "aria-rowcount", rows.length + 1);
  Object.assign(grid, { rows, fill });
  drawGridRows(true);
}

// A row of the table's cells, each holding one text node (written by setText).
function gridRow() {
  const r = el("div", { class: "gt-row", role: "row", "data-testid": "attn-row" });
  for (let i = 0; i < grid.cells; i++) r.append(el("span", { role: "cell", class: i === 1 ? "text" : null }, document.createTextNode("")));
  return r;
}

// The first row in sight, from the last scroll position seen (reading scrollTop now
// would make the browser lay the page out in the middle of a redraw).
function drawGridRows(always) {
  const first = Math.max(0, Math.floor(grid.top / ROW_PX) - 1);
  const n = grid.rows.length;
  if (!always && first >= grid.from && Math.min(n, first + ROWS_SEEN) <= grid.to) return;
  grid.from = Math.max(0, first - ROWS_AROUND);
  grid.to = Math.min(n, first + ROWS_SEEN + ROWS_AROUND);
  const want = grid.to - grid.from;
  while (grid.pool.length < want) grid.pool.push(gridRow());
  for (let i = grid.shown; i < want; i++) grid.pads[1].before(grid.pool[i]);
  for (let i = want; i < grid.shown; i++) grid.pool[i].remove();
  grid.shown = want;
  setCss(grid.pads[0], `height:${grid.from * ROW_PX}px`);
  setCss(grid.pads[1], `height:${(n - grid.to) * ROW_PX}px`);
  for (let i = grid.from; i < grid.to; i++) {
    const r = grid.pool[i - grid.from];
    setAttr(r, "aria-rowindex", i + 2);
    grid.fill(r, grid.rows[i]);
  }
}

function gridScrolled(ev) {
  grid.top = ev.target.scrollTop;
  if (!grid.frame) grid.frame = requestAnimationFrame(() => { grid.frame = 0; drawGridRows(false); });
}

function drawOneHeadTable(att) {
  let rows = att.keys;
  if ($("sort-weight").checked) rows = [...rows].sort((a, b) => b.weight - a.weight);
  const cls = "gt-row" + (state.off.has(state.head) ? " off" : "");
  const labels = ["position", "token", "distance", "q\u00b7k/\u221a8", "distance score", "score", "weight", "cosine of rows"];
  const fill = (r, k) => {
    if (r.className !== cls) r.className = cls;
    setAttr(r, "data-position", k.position);
    setAttr(r, "data-head", k.head);
    setAttr(r, "data-weight", k.weight);
    const c = r.children;
    [k.position, k.token, k.distance, num(k.dot), num(k.distance_score), num(k.score), pct(k.weight), num(k.cosine)].forEach((x, i) => setText(c[i], x));
    if (!c[6].lastChild.className) c[6].append(el("span", { class: "barfill" }));   // the weight as a bar too
    setCss(c[6].lastChild, `width:${(60 * k.weight).toFixed(1)}px`);
  };
  setGridRows("one", "5.5em minmax(6em, 1.4fr) 6.5em minmax(4em, 1fr) minmax(4.5em, 1.3fr) minmax(4em, 1fr) minmax(6em, 1.5fr) minmax(4.5em, 1.3fr)",
    41, labels, null, rows, fill);
}

// From the wide answer: a row a position read, each head's weight in its column.
function drawAllHeadsTable(att) {
  const shown = state.weights;
  let rows = att.keys;
  if ($("sort-weight").checked) rows = [...rows].sort((a, b) => (shown.get(b.position) || 0) - (shown.get(a.position) || 0));
  const H = state.heads;
  const labels = ["position", "token", "distance", ...[...Array(H).keys()].map((h) => `head ${h}`), "cosine"];
  const headStyle = (i) => (i >= 3 && i < 3 + H ? `border-bottom: 3px solid ${headColor(i - 3)}` : null);
  const fill = (r, k) => {
    setAttr(r, "data-position", k.position);
    const c = r.children;
    setText(c[0], k.position);
    setText(c[1], k.token);
    setText(c[2], k.distance);
    for (let h = 0; h < H; h++) {
      const x = k["weight_" + h], cell = c[3 + h];
      setAttr(cell, "data-head", h);
      setAttr(cell, "data-weight", x);
      setText(cell, pct(x));
      setCss(cell, state.off.has(h) ? "color:#a3a09a; text-decoration: line-through" : `background: rgba(194,65,12,${(0.6 * x).toFixed(2)})`);
    }
    setText(c[3 + H], num(k.cosine));
  };
  // a head's column holds "head 7" and "100.0%" (4.2em with its padding)
  setGridRows("all", `5.5em minmax(5em, 1.2fr) 6.5em repeat(${H}, minmax(4.2em, 1fr)) 5.5em`, 22.5 + 4.2 * H, labels, headStyle, rows, fill);
}

function drawLoss(loss, full) {
  const box = $("loss");
  const parts = [`Loss on your story: ${fmt(loss.loss)} nats a token`];
  if (loss.perplexity !== undefined) parts.push(`perplexity ${fmt(loss.perplexity, 1)}`);
  if (loss.accuracy !== undefined) parts.push(`top guess right ${pct(loss.accuracy)}`);
  box.replaceChildren(parts.join(", "));
  box.dataset.loss = loss.loss;
  if (state.off.size && full !== undefined) {
    const d = loss.loss - full;
    box.append(el("span", { class: "delta", text: ` (${d >= 0 ? "+" : ""}${fmt(d)} against all heads on)` }));
  }
}

// ---------- Tool 3: the trace ----------

// The trace's lists are made once and rewritten in place after that (see setText):
// a click on a long story makes no element in them and lays out only what changed.
function drawTrace(tr) {
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
const CELL_PX = 12;
function drawInputs(parts) {
  const box = $("inputs");
  const key = parts.map((p) => p.part + ":" + p.numbers.length).join(" ");
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
    const m = /^head (\d)$/.exec(p.part);
    const off = m && state.off.has(Number(m[1]));
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

function inputTitle(ev) {
  const cells = ev.target.closest("canvas.cells");
  const part = cells && cells.closest(".part");
  if (!part || !state.inputs) return;
  const p = state.inputs[[...part.parentNode.children].indexOf(part)];
  const i = Math.floor(ev.offsetX / CELL_PX);
  if (p && i >= 0 && i < p.numbers.length) cells.title = `number ${i} of ${p.part}: ${fmt(p.numbers[i])}`;
}

function drawHidden(units) {
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

// ---------- Tool 2: distance scores ----------

// The distance scores of the layer picked (distances --layer); a failure clears the old
// model's curves rather than leave them under the message.
async function refreshDistances() {
  state.distances = null;
  $("dist-chart").replaceChildren();
  showError("dist", null);
  if (!modelViews().heads) return;
  const layer = Number($("dist-layer").value) || 1;
  try {
    const d = await api("/api/distances", { model: state.model, layer });
    if (d.model && d.model.file !== state.model) return;   // another model was picked meanwhile
    state.distances = d;
    drawDistances();
  } catch (e) { showError("dist", new Error(`${e.message}. Pick another model, or reload the page if the server was restarted.`)); }
}

function drawDistances() {
  const d = state.distances;
  if (!d) return;
  const n = Number($("dist-range").value);
  const rows = d.scores.slice(0, n);
  const layer = (Number($("dist-layer").value) || 1) - 1, H = state.heads;
  const series = [...Array(H).keys()].map((h) => rows.map((r) => [r.distance, r["head_" + h]]));
  const bold = state.head >= 0 && Math.floor(state.head / H) === layer ? state.head % H : -1;
  const chart = lineChart(series, {
    xLabel: "distance back", yLabel: "distance score", colors: series.map((_, h) => headColor(h)),
    names: series.map((_, h) => `head ${headName(layer * H + h)}`), bold, xMax: n - 1,
  });
  $("dist-chart").replaceChildren(chart);
  $("dist-chart").dataset.layer = layer + 1;                // what is drawn, for scripts and the browser test:
  $("dist-chart").dataset.scores = JSON.stringify(rows[1]); // the scores at distance 1
}

// A line chart: series = [[[x, y], ...], ...]. The head in view is drawn bold.
function lineChart(series, o) {
  const W = o.W || 900, H = o.H || 300, L = 56, R = 130, T = 12, B = 42;
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

function ticks(lo, hi, count) {
  const step0 = (hi - lo) / count;
  const mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0) || step0;
  const out = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) out.push(Math.abs(t) < 1e-12 ? 0 : t);
  return out;
}

// ---------- the heads bar ----------

function drawHeadsBar() {
  const box = $("heads");
  const cols = [headColumn(-1)];
  for (let g = 0; g < state.layers * state.heads; g++) cols.push(headColumn(g));
  box.classList.toggle("compact", state.layers > 1);
  box.replaceChildren(...cols);
}

// A head's column: its view button and its on switch; h numbered over every layer
// (-1: the view of all heads), named as the CLI names it ("3", or "2:3").
function headColumn(h) {
  const viewing = state.head === h, name = h < 0 ? "" : headName(h);
  const view = el("input", {
    type: "radio", name: "view-head", id: `view-${h}`, value: h, checked: viewing,
    "data-testid": h < 0 ? "view-all" : `view-head-${name}`,
    onchange: () => viewHead(h),
  });
  const label = el("label", { for: `view-${h}` }, h < 0 ? `all ${state.layers * state.heads}` : el("span", { class: "swatch", style: `background:${headColor(h % state.heads)}` }),
    h < 0 ? "" : el("span", { class: "word", text: "head " }), h < 0 ? "" : name);
  const col = el("div", { class: "head" + (viewing ? " viewing" : "") + (state.off.has(h) ? " off" : "") }, el("span", {}, view, label));
  if (h >= 0) {
    const sw = el("input", {
      type: "checkbox", id: `on-${h}`, checked: !state.off.has(h), "data-testid": `switch-head-${name}`,
      onchange: (ev) => { if (ev.target.checked) state.off.delete(h); else state.off.add(h); drawHeadsBar(); refreshStory(); savePermalink(); },
    });
    col.append(el("label", { for: `on-${h}` }, sw, " on"));
  } else {
    col.append(el("span", { class: "muted", text: "view" }));
  }
  return col;
}

// ---------- Secret 2: the name swap ----------

async function runSwap() {
  const name = $("swap-name").value.trim();
  if (!name) { showError("swap", new Error("Type a name to swap in.")); return; }
  const body = { model: state.model, text: $("story").value, name };
  if ($("swap-baseline").value) body.baseline = $("swap-baseline").value;
  $("swap-go").disabled = true;
  try {
    const data = await api("/api/swap", body);
    $("swap-out").replaceChildren(...(Array.isArray(data.mentions) ? swapView(data) : reportView(data)));
    showError("swap", null);
  } catch (e) { showError("swap", e); } finally { $("swap-go").disabled = false; }
}

// The typed story renamed: where the name comes back, what each network gives the new
// name's first piece there (probability and rank among the vocabulary's tokens).
function swapView(d) {
  const base = d.baseline && d.baseline !== "none";
  const out = [el("p", {}, `The hero "${d.hero}" becomes "${d.name}" (${d.kind}, ${d.train_count === null ? "never" : d.train_count + " times"} in the training stories):`),
    el("p", { class: "gen-out", "data-testid": "swap-text", text: d.swapped_text })];
  const cols = ["mention", "position", "previous mention", "attention: probability", "rank"];
  if (base) cols.push("window8: probability", "rank");
  const head = el("tr", {}, ...cols.map((c) => el("th", { text: c })));
  const rows = d.mentions.map((m) => el("tr", {
    "data-testid": "swap-row", "data-position": m.position,
    "data-model-probability": m.model_probability, "data-baseline-probability": base ? m.baseline_probability : null,
  },
    el("td", { text: m.mention }), el("td", { text: m.position }),
    el("td", { class: "text", text: m.far ? "more than 8 tokens back" : "within the last 8" }),
    el("td", { text: prob(m.model_probability) }), el("td", { text: m.model_rank }),
    ...(base ? [el("td", { text: prob(m.baseline_probability) }), el("td", { text: m.baseline_rank })] : [])));
  out.push(el("div", { class: "scroll" }, el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows))));
  let sum = `Over the ${d.later_mentions} later mentions, the attention network gives "${d.name}" ${prob(d.model_probability)} on average and guesses it first ${pct(d.model_top1)} of the time`;
  if (base) sum += `; window8 gives it ${prob(d.baseline_probability)} and guesses it first ${pct(d.baseline_top1)} of the time`;
  out.push(el("p", { "data-testid": "swap-summary", text: sum + "." }));
  return out;
}

// A report as the CLI's JSON gives it: its plain fields as a list, each table (an
// array of objects) as a table, so every number the server sends is shown.
function reportView(data) {
  const skip = new Set(["command", "model"]);
  const kv = el("dl", { class: "kv" });
  const tables = [];
  for (const [k, v] of Object.entries(data)) {
    if (skip.has(k)) continue;
    if (Array.isArray(v) && v.length && typeof v[0] === "object") tables.push(el("h3", { text: k.replace(/_/g, " ") }), tableOf(v, k));
    else if (v === null || typeof v !== "object") kv.append(el("dt", { text: k.replace(/_/g, " ") }), el("dd", { text: fmt(v) }));
  }
  return [kv, ...tables];
}

function tableOf(rows, name) {
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const head = el("tr", {}, ...cols.map((c) => el("th", { text: c.replace(/_/g, " ") })));
  const body = rows.map((r) => el("tr", { "data-testid": `${name}-row` }, ...cols.map((c) => {
    const v = r[c];
    return el("td", { class: typeof v === "string" ? "text" : null, text: v !== null && typeof v === "object" ? JSON.stringify(v) : fmt(v) });
  })));
  return el("div", { class: "scroll" }, el("table", {}, el("thead", {}, head), el("tbody", {}, ...body)));
}

// ---------- let the network write on: a POST read as a stream of SSE events ----------

async function runGenerate() {
  if (state.gen) return;
  const ctrl = new AbortController();
  state.gen = ctrl;
  const prompt = $("story").value;
  const body = {
    model: state.model, prompt,
    max_tokens: Number($("gen-n").value), temperature: Number($("gen-t").value),
    top_k: Number($("gen-k").value), top_p: Number($("gen-p").value), seed: Number($("gen-seed").value),
    ...ablation(),
  };
  const out = $("gen-out");
  out.replaceChildren();
  out.dataset.state = "running";
  out.dataset.tokens = "0";
  $("gen-go").disabled = true; $("gen-stop").disabled = false;
  $("gen-status").textContent = "writing...";
  showError("gen", null);
  const t0 = performance.now();
  let count = 0;
  try {
    const res = await fetch("/api/generate", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal: ctrl.signal });
    if (!res.ok) {
      let msg = `the server answered ${res.status}`;
      try {
        const d = await res.json();
        msg = (d.error || msg) + (d.hint ? ` (${d.hint})` : "");
      } catch (e) { /* keep the status */ }
      throw new Error(msg);
    }
    await readEvents(res.body, (event, data) => {
      if (event === "done") {
        showGenText(data.text);
        out.dataset.state = "done";
        out.dataset.doneTokens = String(data.tokens);
        $("gen-status").textContent = `${data.tokens} tokens, seed ${data.seed}, stopped: ${data.stop_reason}; ${rate(count, t0)}`;
      } else if (event === "error") {
        throw new Error(data.error || "generation failed");
      } else {
        count++;
        showGenText(data.text);
        out.dataset.tokens = String(count);
        $("gen-status").textContent = `writing... ${count} tokens, ${rate(count, t0)}`;
      }
    });
    if (out.dataset.state === "running") out.dataset.state = "ended";
  } catch (e) {
    if (e.name === "AbortError") {
      out.dataset.state = "stopped";
      $("gen-status").textContent = `stopped after ${count} tokens`;
    } else {
      out.dataset.state = "failed";
      showError("gen", e);
      $("gen-status").textContent = "";
    }
  } finally {
    state.gen = null;
    $("gen-go").disabled = false; $("gen-stop").disabled = true;
  }
}

const rate = (n, t0) => `${(n / Math.max(1e-3, (performance.now() - t0) / 1000)).toFixed(0)} tokens/s`;

function showGenText(text) {
  $("gen-out").textContent = text;
}

// Server-Sent Events from a fetch body: events are separated by a blank line,
// each line "event: NAME" or "data: JSON".
async function readEvents(stream, onEvent) {
  const reader = stream.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let event = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
      }
      if (data) onEvent(event, JSON.parse(data));
    }
  }
}

// ---------- train your own ----------

async function startTraining() {
  const body = {
    stories: $("train-stories").value.trim(), steps: Number($("train-steps").value),
    seed: Number($("train-seed").value), eval_every: Number($("train-every").value),
  };
  try {
    await api("/api/train", body);
    showError("train", null);
    $("train-use").hidden = true;
    pollTraining();
  } catch (e) { showError("train", e); }
}

// A stories file of the learner's own, sent to the server (POST /api/upload, the file's bytes
// as body), which checks it as storylm stories reads it and keeps it in its training folder;
// the training then reads it from there.
async function uploadStories(file) {
  if (!file) return;
  const st = $("upload-state");
  st.textContent = `sending ${file.name} (${(file.size / 1e6).toFixed(1)} MB)...`;
  try {
    const res = await fetch("/api/upload?name=" + encodeURIComponent(file.name), { method: "POST", body: file });
    const data = await res.json().catch(() => null);
    if (!res.ok) throw new Error((data && data.error ? data.error + (data.hint ? ` (${data.hint})` : "") : `the server answered ${res.status}`));
    $("train-stories").value = data.stories;
    st.textContent = `${file.name}: ${data.stories_count.toLocaleString("en")} stories, ${data.tokens.toLocaleString("en")} tokens; ready to train`;
    st.dataset.stories = data.stories;
    showError("train", null);
  } catch (e) { st.textContent = ""; showError("train", e); }
}

async function stopTraining() {
  try { await api("/api/train/stop", {}); pollTraining(); } catch (e) { showError("train", e); }
}

// Polled every second while a run is going; once at page load to find one.
async function pollTraining() {
  clearTimeout(state.trainTimer);
  let t;
  try { t = await api("/api/train"); } catch (e) { showError("train", e); return; }
  drawTraining(t);
  if (t.state === "running") state.trainTimer = setTimeout(pollTraining, 1000);
  else if (t.model && t.model !== state.trainSeen && (t.state === "done" || t.state === "stopped")) {
    state.trainSeen = t.model;
    await loadModels().catch((e) => showError("top", e));
    $("train-use").hidden = false;
    $("train-use").dataset.model = t.model;
    const m = findModel(t.model);
    $("train-download").hidden = !m;
    if (m) $("train-download").href = "/api/download?model=" + encodeURIComponent(m.path);
  }
}

function drawTraining(t) {
  const running = t.state === "running";
  $("train-go").disabled = running;
  $("train-stop").disabled = !running;
  const st = $("train-state");
  st.dataset.state = t.state;
  st.dataset.points = (t.points || []).length;
  // The server's message already says the step while it runs.
  st.textContent = running && t.message ? `running: ${t.message}` :
    `${t.state}` + (t.steps ? `: step ${t.step} of ${t.steps}` : "") +
    (t.model && !running ? `, saved as ${t.model}` : "") + (t.message ? ` (${t.message})` : "");
  const pts = t.points || [];
  if (!pts.length) {
    $("train-curve").replaceChildren(el("p", { class: "muted", text: running ? "waiting for the first evaluation..." : "no training yet" }));
    state.trainHeads = t.heads || [];
    drawTrainHeads();
    return;
  }
  const series = [pts.map((p) => [p.step, p.train_loss]), pts.map((p) => [p.step, p.test_loss])];
  const chart = lineChart(series, {
    xLabel: "step", yLabel: "loss", colors: ["#2563eb", "#c2410c"], names: ["training", "test stories"],
    xMax: Math.max(1, t.steps || 1), xMin: 0, W: 560, H: 320,
  });
  chart.setAttribute("data-points", pts.length);
  $("train-curve").replaceChildren(chart);
  state.trainHeads = t.heads || [];
  const snap = $("train-snap");
  const last = Math.max(0, state.trainHeads.length - 1);
  const follow = Number(snap.value) >= Number(snap.max);
  snap.max = String(last);
  if (follow) snap.value = String(last);
  drawTrainHeads();
}

// The training's heads at the step picked, in front of its first step's (outlined).
function drawTrainHeads() {
  const list = state.trainHeads || [];
  const box = $("train-heads");
  if (!list.length) { box.replaceChildren(); $("train-snap-step").textContent = ""; return; }
  const i = Math.min(Number($("train-snap").value), list.length - 1);
  const cur = list[i], first = list[0];
  $("train-snap-step").textContent = `${cur.step} (dashed outline: step ${first.step})`;
  const chart = headPanels(cur.mass, first.mass);
  chart.setAttribute("data-step", cur.step);
  box.replaceChildren(chart);
}

// Small multiples: one panel a head, a bar a distance bin (the share of the head's
// weight), and the same shares of another moment as dashed outlines when given.
// now, before: [8][6] shares.
function headPanels(now, before) {
  // Full height is the largest share drawn, so a head that spreads its weight
  // evenly still shows its shape.
  const top = Math.max(0.05, ...now.flat(), ...(before ? before.flat() : []));
  const PW = 200, PH = 110, G = 16, W = 4 * (PW + G) + 10, RH = PH + 48;
  const rowsOf = Math.ceil(now.length / 4);
  const g = svg("svg", { viewBox: `0 0 ${W} ${rowsOf * RH + 20}`, role: "img", "aria-label": "each head's weight by distance back" });
  now.forEach((bins, h) => {
    const x0 = (h % 4) * (PW + G) + 10, y0 = Math.floor(h / 4) * RH + 20;
    const name = now.length > state.heads && state.heads ? headName(h) : String(h), color = headColor(h % (state.heads || 8));
    g.append(svg("text", { x: x0, y: y0 - 4, fill: color, style: "font-weight:600" }, `head ${name}`));
    const bw = PW / bins.length;
    bins.forEach((m, b) => {
      const hgt = PH * m / top;
      g.append(svg("rect", { x: x0 + b * bw + 2, y: y0 + PH - hgt, width: bw - 4, height: hgt, fill: color }, svg("title", {}, `head ${name}, distance ${DIST_BINS[b]}: ${pct(m)}`)),
        svg("text", { x: x0 + b * bw + bw / 2, y: y0 + PH + 16, "text-anchor": "middle", style: "font-size:13px" }, DIST_BINS[b]));
      if (before) {
        const f = PH * before[h][b] / top;
        g.append(svg("rect", { x: x0 + b * bw + 2, y: y0 + PH - f, width: bw - 4, height: f, fill: "none", stroke: "#333", "stroke-dasharray": "3 2" }));
      }
    });
  });
  g.append(svg("text", { x: 10, y: rowsOf * RH + 14 }, `bar height: share of the head's weight at that distance back (full height = ${pct(top)})`));
  return g;
}

// ---------- Secret 1 on the test stories: /api/heads for the model (and a snapshot) ----------

const massOf = (report) => report.heads.map((r) => [r.d0, r.d1, r.d2, r.d3_7, r.d8_31, r.d32_255]);

// Secret 1 compares a model with snapshots of its own training run only ("X.stepN.safetensors"
// beside "X.safetensors", or the other snapshots of the run a snapshot is of): another run
// starts from other random weights, so its heads are no earlier stage of these.
function fillCompare() {
  const sel = $("jobs-compare");
  const run = (p) => p.split("/").pop().replace(/\.safetensors$/, "").replace(/\.step\d+$/, "");
  const step = (p) => Number((p.match(/\.step(\d+)\.safetensors$/) || [0, Infinity])[1]);
  const mine = run(state.model);
  const others = state.models.filter((m) => m.arch === "attention" && m.path !== state.model && run(m.path) === mine && step(m.path) < step(state.model))
    .sort((a, b) => step(a.path) - step(b.path));
  sel.replaceChildren(el("option", { value: "", text: others.length ? "(nothing)" : "(no earlier snapshot of this run is listed)" }),
    ...others.map((m) => el("option", { value: m.path, text: m.name })));
  if (others.length) sel.value = others[0].path;
}

async function runJobs() {
  const other = $("jobs-compare").value;
  $("jobs-go").disabled = true;
  $("jobs-status").textContent = "measuring on the test stories...";
  try {
    const jobs = [api("/api/heads", { model: state.model })];
    if (other) jobs.push(api("/api/heads", { model: other }));
    const [cur, before] = await Promise.all(jobs);
    $("jobs-chart").replaceChildren(headPanels(massOf(cur), before ? massOf(before) : null));
    $("jobs-reads").replaceChildren(...cur.heads.map((r, g) => el("li", {},
      el("span", { class: "swatch", style: `background:${headColor(g % state.heads)}` }),
      `head ${r.head}: mean distance back ${fmt(r.mean_distance, 1)}; reads most ${r.reads_most}`)));
    $("jobs-status").textContent = `${cur.heads[0].model}` + (before ? `; outline: ${before.heads[0].model}` : "");
    showError("jobs", null);
  } catch (e) {
    $("jobs-status").textContent = "";
    $("jobs-chart").replaceChildren(); $("jobs-reads").replaceChildren();
    showError("jobs", e);
  } finally { $("jobs-go").disabled = false; }
}

// ---------- Secret 3: each head switched off on the test stories (/api/ablate) ----------

function fillAblateHeads() {
  const sel = $("ablate-head");
  const n = state.layers * state.heads;
  sel.replaceChildren(...[...Array(n).keys()].map((g) => el("option", { value: g, text: `head ${headName(g)}` })));
  if (n) sel.value = state.head >= 0 ? state.head : 0;
  $("ablate-out").replaceChildren();
  $("ablate-summary").textContent = "";
  $("ablate-status").textContent = "";
  showError("ablate", null);
}

// ablate --json for the model: every single head off in turn (kept: the same answer every
// time), then drawn ranked with the head picked in the panel (or the bar) marked.
async function runAblate() {
  const body = { model: state.model, mode: $("ablate-how").value };
  $("ablate-go").disabled = true;
  $("ablate-status").textContent = "measuring on the test stories...";
  try {
    const data = known("/api/ablate", body) || await api("/api/ablate", body);
    keep("/api/ablate", body, data);
    if (body.model !== state.model) return;
    state.ablate = { body, data };
    $("ablate-status").textContent = `${data.positions.toLocaleString("en")} next tokens and ${data.name_positions} name positions of ${data.stories ? data.stories.test_stories : "the"} test stories`;
    drawAblate();
    showError("ablate", null);
  } catch (e) {
    state.ablate = null;
    $("ablate-out").replaceChildren(); $("ablate-summary").textContent = ""; $("ablate-status").textContent = "";
    showError("ablate", e);
  } finally { $("ablate-go").disabled = false; }
}

function drawAblate() {
  const a = state.ablate;
  if (!a || a.body.model !== state.model) return;
  const [base, ...singles] = a.data.ablations;
  const picked = headName(Number($("ablate-head").value));
  const ranked = singles.slice().sort((x, y) => y.d_loss - x.d_loss);
  const signed = (x, f) => (x >= 0 ? "+" : "") + f(x);
  const points = (x) => (100 * x).toFixed(2);
  const cols = ["rank", "head off", "loss", "loss change", "top guess right", "change (points)", "p(name)", "change", "name top guess", "change (points)"];
  const rows = ranked.map((r, i) => el("tr", {
    class: r.heads === picked ? "picked" : null, "data-testid": "ablate-row", "data-heads": r.heads, "data-d-loss": r.d_loss,
    "data-d-accuracy": r.d_accuracy, "data-d-name-probability": r.d_name_probability,
  }, ...[i + 1, r.heads, fmt(r.loss, 4), signed(r.d_loss, (x) => x.toFixed(4)), pct(r.accuracy), signed(r.d_accuracy, points),
    prob(r.name_probability), signed(r.d_name_probability, (x) => x.toFixed(4)), pct(r.name_accuracy), signed(r.d_name_accuracy, points)]
    .map((v, k) => el("td", { class: k === 1 ? "text" : null, text: String(v) }))));
  const head = el("tr", {}, ...cols.map((c, k) => el("th", { class: k === 1 ? "text" : null, text: c })));
  const first = el("tr", { class: "base" }, ...["", "none", fmt(base.loss, 4), "", pct(base.accuracy), "", prob(base.name_probability), "", pct(base.name_accuracy), ""]
    .map((v, k) => el("td", { class: k === 1 ? "text" : null, text: v })));
  $("ablate-out").replaceChildren(el("div", { class: "scroll" }, el("table", {}, el("thead", {}, head), el("tbody", {}, first, ...rows))));
  const r = ranked.find((x) => x.heads === picked);
  const rank = ranked.indexOf(r) + 1;
  $("ablate-summary").textContent = !r ? "" : `Without head ${picked} the loss on the test stories goes from ${fmt(base.loss, 4)} to ${fmt(r.loss, 4)} nats a token (${signed(r.d_loss, (x) => x.toFixed(4))}, rank ${rank} of ${ranked.length}); its top guess is right ${pct(r.accuracy)} of the time instead of ${pct(base.accuracy)}; where the hero's name comes back it gives the name ${prob(r.name_probability)} instead of ${prob(base.name_probability)}.`;
}

// ---------- Secret 4: names made of pieces (/api/pieces) ----------

// The model to show beside the one picked: one of the other kind (one layer of heads, or
// several), the one-layer twin of the two-layer model (trained the same way) when listed.
function piecesPartner() {
  const attention = state.models.filter((m) => m.arch === "attention" && !m.path.includes("snapshots/") && m.path !== state.model);
  if (state.layers > 1) return attention.find((m) => m.layers === 1 && /wd-ema/.test(m.name)) || attention.find((m) => m.layers === 1);
  return attention.find((m) => m.layers > 1);
}

async function runPieces() {
  const names = $("pieces-name").value.trim().toLowerCase();
  const partner = piecesPartner();
  const models = [state.model].concat(partner ? [partner.path] : []);
  $("pieces-go").disabled = true;
  $("pieces-status").textContent = "renaming the heroes of the test stories and measuring...";
  try {
    const got = await Promise.all(models.map((model) => {
      const body = { model, names };
      const had = known("/api/pieces", body);
      return had ? had : api("/api/pieces", body).then((d) => { keep("/api/pieces", body, d); return d; });
    }));
    if (models[0] !== state.model) return;
    $("pieces-out").replaceChildren(...got.map((d, i) => piecesView(d, models[i])));
    $("pieces-status").textContent = "";
    showError("pieces", null);
  } catch (e) {
    $("pieces-out").replaceChildren();
    $("pieces-status").textContent = "";
    showError("pieces", e);
  } finally { $("pieces-go").disabled = false; }
}

function piecesView(d, model) {
  const m = findModel(model);
  const layers = m && m.layers > 1 ? `${m.layers} layers` : "one layer";
  const out = [el("h3", { text: `${model.split("/").pop()} (${layers})` })];
  for (const r of d.names) {
    out.push(el("p", { "data-testid": "pieces-says", "data-name": r.name, "data-first-probability": r.first_probability, "data-next-probability": r.next_probability }, `"${r.name}" (${r.pieces}, ${r.mentions} later mentions in ${r.stories} stories): the first piece gets ${prob(r.first_probability)} (top guess ${pct(r.first_top1)}); after it, the next piece gets ${prob(r.next_probability)} (top guess ${pct(r.next_top1)}, median rank ${fmt(r.next_median_rank, 1)}).`));
  }
  out.push(tableOf(d.names, "pieces-names"));
  if (d.heads) {
    out.push(el("h3", { text: "The two lookups, head by head" }),
      el("p", { class: "muted", text: `At the token to copy: its weight on the token before (a previous-token head). At the later first piece: its weight on the token to copy (an induction head, layer 2 and up). A head reading evenly gives ${fmt(d.even_weight, 4)}.` }),
      headsTable(d));
    if (d.induction_head) out.push(el("p", { "data-testid": "pieces-induction", text: `Head ${d.induction_head} reads the token to copy most: weight ${fmt(d.induction_weight, 4)}.` }));
  }
  return el("div", { "data-testid": "pieces-model", "data-model": model }, ...out);
}

// Secret 4's head-by-head table, tall enough for the 16 heads of two layers, the head
// the sentence below names marked (and in sight when there are more heads than fit).
function headsTable(d) {
  const box = tableOf(d.heads, "pieces-heads");
  box.classList.add("tall");
  const named = [...box.querySelectorAll("tbody tr")].find((tr) => tr.firstChild.textContent === String(d.induction_head));
  if (named) {
    named.classList.add("picked");
    requestAnimationFrame(() => { box.scrollTop += Math.max(0, named.getBoundingClientRect().bottom - box.getBoundingClientRect().bottom); });
  }
  return box;
}

// ---------- the permalink: model, story, reading position, head and switches in the hash ----------

function savePermalink() {
  if (!state.models.length) return;
  const p = new URLSearchParams({ m: state.model, h: state.head, off: [...state.off].sort((a, b) => a - b).map(headName).join(","), p: state.pos, t: $("story").value });
  const hash = "#" + p.toString();
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

// The view a permalink names, before anything is asked for; what does not fit this server
// (a model it does not list, a head the model has not, a position past the story's end)
// is left out.
function readPermalink() {
  const p = new URLSearchParams(location.hash.slice(1));
  const m = p.get("m");
  if (m && findModel(m)) { state.model = findModel(m).path; $("model").value = state.model; describeModel(); fillCompare(); }
  if (p.get("t")) $("story").value = p.get("t");
  const n = state.layers * state.heads;
  const g = (name) => { const [a, b] = name.includes(":") ? name.split(":").map(Number) : [1, Number(name)]; return (a - 1) * state.heads + b; };
  for (const name of (p.get("off") || "").split(",").filter(Boolean)) { const h = g(name); if (h >= 0 && h < n) state.off.add(h); }
  const h = p.has("h") ? Number(p.get("h")) : NaN;
  if (Number.isInteger(h) && h >= -1 && h < n) state.head = h;
  const pos = Number(p.get("p"));
  if (p.has("p") && Number.isInteger(pos) && pos >= 0) state.linkPos = pos;
  drawHeadsBar();
  fillAblateHeads();
}

// ---------- the test stories ----------

async function loadStories() {
  try {
    const data = await api("/api/stories");
    const pick = $("story-pick");
    pick.append(...(data.stories || []).map((s) => el("option", {
      value: s.text, text: `${s.index}: ${s.text.split(/\s+/).slice(0, 6).join(" ")}...`,
    })));
  } catch (e) { showError("story", e); }
}

// ---------- wiring ----------

function debounce(fn, ms) {
  let t = 0;
  return () => { clearTimeout(t); t = setTimeout(fn, ms); };
}

function wire() {
  $("tokens").addEventListener("click", (ev) => {
    const b = ev.target.closest(".tok");
    clearTimeout(state.hover);
    if (b) fetchPosition(Number(b.dataset.pos), true, ev.timeStamp);
  });
  $("tokens").addEventListener("pointerdown", (ev) => {
    const b = ev.target.closest(".tok");
    if (b && ev.button === 0) { clearTimeout(state.hover); askAhead(Number(b.dataset.pos)); }
  });
  $("tokens").addEventListener("keydown", tokenKeys);
  $("tokens").addEventListener("mouseover", (ev) => {
    const b = ev.target.closest(".tok");
    if (b) { tokenTitle(b); prefetch(b); }
  });
  $("tokens").addEventListener("mouseleave", () => clearTimeout(state.hover));
  $("inputs").addEventListener("mousemove", inputTitle);
  $("attend-table").parentNode.addEventListener("scroll", gridScrolled, { passive: true });
  const storyChanged = debounce(() => { state.pos = -1; refreshStory(); savePermalink(); }, 250);
  $("story").addEventListener("input", storyChanged);
  $("story-pick").addEventListener("change", (ev) => {
    if (!ev.target.value) return;
    $("story").value = ev.target.value;
    state.pos = -1;
    refreshStory();
  });
  $("model").addEventListener("change", (ev) => {
    state.model = ev.target.value;
    state.pos = -1;   // another vocabulary may cut the story into other tokens
    describeModel();
    fillCompare();
    $("jobs-chart").replaceChildren(); $("jobs-reads").replaceChildren(); $("jobs-status").textContent = ""; showError("jobs", null);
    state.ablate = null;
    $("pieces-out").replaceChildren(); showError("pieces", null);
    refreshDistances();
    refreshStory();
    savePermalink();
  });
  $("dist-layer").addEventListener("change", refreshDistances);
  $("ablate-go").addEventListener("click", runAblate);
  $("ablate-head").addEventListener("change", (ev) => { viewHead(Number(ev.target.value)); });
  $("ablate-how").addEventListener("change", () => { if (state.ablate) runAblate(); });
  $("pieces-go").addEventListener("click", runPieces);
  $("pieces-name").addEventListener("keydown", (ev) => { if (ev.key === "Enter") runPieces(); });
  $("ablate-mode").addEventListener("change", (ev) => { state.mode = ev.target.value; if (state.off.size) refreshStory(); });
  $("sort-weight").addEventListener("change", drawAttention);
  $("dist-range").addEventListener("change", drawDistances);
  $("swap-go").addEventListener("click", runSwap);
  $("jobs-go").addEventListener("click", runJobs);
  $("gen-go").addEventListener("click", runGenerate);
  $("gen-stop").addEventListener("click", () => state.gen && state.gen.abort());
  $("train-go").addEventListener("click", startTraining);
  $("train-stop").addEventListener("click", stopTraining);
  $("train-file").addEventListener("change", (ev) => uploadStories(ev.target.files[0]));
  $("train-card").addEventListener("dragover", (ev) => ev.preventDefault());
  $("train-card").addEventListener("drop", (ev) => { ev.preventDefault(); uploadStories(ev.dataTransfer.files[0]); });
  $("train-snap").addEventListener("input", drawTrainHeads);
  $("train-use").addEventListener("click", (ev) => {
    const m = findModel(ev.target.dataset.model);
    if (!m) { showError("train", new Error(`the new model ${ev.target.dataset.model} is not in the model list yet`)); return; }
    $("model").value = m.path;
    $("model").dispatchEvent(new Event("change"));
  });
}

async function start() {
  wire();
  drawHeadsBar();
  try {
    await loadModels();
  } catch (e) { showError("top", e); return; }
  readPermalink();
  document.body.dataset.ready = "1";
  loadStories();
  refreshDistances();
  refreshStory();
  pollTraining();
}

document.addEventListener("DOMContentLoaded", start);
