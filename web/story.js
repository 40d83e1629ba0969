// Tool 1 and the story: the tokens, a click's views asked for in one batch, the attention tables,
// the loss on the story.
import { calls, headColor, state } from "./state.js";
import { $, ablation, api, batch, el, fmt, fromModel, headName, keep, known, layerBody, modelViews, num, pct, setAttr, setCss, setText, showError, tokenShade, viewLayer } from "./util.js";

// ---------- the story: attention, trace and loss ----------

// Text, model or switches changed: ask for all three views at once, in one request.
export async function refreshStory() {
  const n = ++state.seq.story;
  state.text = $("story").value;
  if (!state.text.trim()) { state.seq.pos++; clearPositionViews(); clearLoss(); showError("story", null); return; }
  if (!modelViews().oneLayer) { showStoryLoss(n); return; }
  // only for the story the permalink came with, once the views it names are shown (a model of
  // several layers is first asked whether the server reads it layer by layer)
  const linkPos = state.linkPos;
  state.linkPos = null;
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
    fromModel("attend-card", state.model);
    fromModel("trace-card", state.model);
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
export function positionViews(pos, withTrace) {
  const base = { model: state.model, text: state.text, pos, ...ablation(), ...layerBody() };
  // the head in view by its number in its layer (the layer goes in "layer")
  const views = [["/api/attend", state.head >= 0 ? { ...base, head: state.head % state.heads } : { ...base, wide: true }]];
  if (withTrace) views.push(["/api/trace", base]);
  return views;
}

// The answers of views ([url, body]) and of the requests in more ({url, body}, never
// kept): the kept ones, those already asked for (awaited, not asked again), and one
// batch for the rest, whose answers are kept. {answers, more, inHand: all were kept}.
export async function answersOf(views, more = []) {
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
export function askAhead(pos) {
  if (state.attend && modelViews().oneLayer && pos !== state.pos && pos >= 0 && pos < state.attend.tokens.length)
    answersOf(positionViews(pos, true)).catch(() => {});
}

// The pointer resting on a token asks for its views (one passing over tokens asks
// nothing); pressing the button asks at once, as a click takes the press's length
// (about a tenth of a second by hand) before it fires.
export function prefetch(b) {
  clearTimeout(state.hover);
  state.hover = setTimeout(() => askAhead(Number(b.dataset.pos)), 80);
}

export async function fetchPosition(pos, withTrace = true, t0 = performance.now(), more = []) {
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
    if (tr) calls.drawTrace(tr);
    // From the click to everything drawn and laid out (reading offsetHeight makes the
    // browser lay the page out now): what "instant" is measured by.
    void document.body.offsetHeight;
    const t2 = performance.now();
    markClick(att.position, t0, t1, t2, cached);
    $("attend-caption").append(el("span", { class: "muted", text: ` (${cached ? "known" : "answered"} and drawn in ${(t2 - t0).toFixed(0)} ms)` }));
    showError("attend", null);
    if (tr) showError("trace", null);
    calls.savePermalink();
    return extra;
  } catch (e) {
    if (n === state.seq.pos && !e.stale) {   // stale: asked for a model picked before, never computed
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
export function markClick(pos, t0, t1, t2, cached) {
  const d = document.body.dataset;
  d.clickCached = cached ? "1" : "0";
  d.clickMs = (t2 - t0).toFixed(1);
  d.drawMs = (t2 - t1).toFixed(1);
  d.clickPos = String(pos);
  delete d.paintMs;
  requestAnimationFrame(() => setTimeout(() => { if (d.clickPos === String(pos)) d.paintMs = (performance.now() - t0).toFixed(1); }));
}

// Another head picked for viewing.
export function viewHead(h) {
  state.head = h;
  calls.drawHeadsBar();
  calls.savePermalink();
  const layer = h >= 0 ? Math.floor(h / state.heads) + 1 : 0;
  if (layer) { state.layer = layer; $("view-layer").value = layer; }
  if (layer && state.layers > 1 && Number($("dist-layer").value) !== layer) { $("dist-layer").value = layer; calls.refreshDistances(); }
  else calls.drawDistances();
  if (h >= 0 && $("ablate-head").value !== String(h)) $("ablate-head").value = h;
  calls.drawAblate();
  if (state.attend && state.attendHead === h) { drawTokens(); drawAttention(); }
  else if (state.attend) fetchPosition(state.pos, false);
}

// A model without the attention view (window8, or heads on several layers): the views
// of one layer's heads are emptied (their cards say why), the loss on the story (with the
// switches, on several layers) and the generation still work.
export async function showStoryLoss(n) {
  state.seq.pos++;
  clearPositionViews();
  showError("attend", null);
  showError("trace", null);
  const lossKey = state.model + "\u0000" + state.text;
  try {
    if (!modelViews().heads) guessesOf(n);   // window8: its guesses in Tool 3
    const loss = await api("/api/loss", { model: state.model, text: state.text, ...ablation() });
    if (!state.off.size) state.fullLoss[lossKey] = loss.loss;
    else if (state.fullLoss[lossKey] === undefined) state.fullLoss[lossKey] = (await api("/api/loss", { model: state.model, text: state.text })).loss;
    if (n === state.seq.story) drawLoss(loss, state.fullLoss[lossKey]);
    showError("story", null);
  } catch (e) { if (n === state.seq.story) { clearLoss(); showError("story", e); } }
}

// A network without heads (window8): its next-token guesses after the story (/api/guess), in Tool 3.
async function guessesOf(n) {
  const model = state.model;
  try {
    const d = await api("/api/guess", { model, text: state.text });
    if (n !== state.seq.story || model !== state.model) return;
    calls.drawTrace({ guesses: d.guesses, position: d.position, token: d.token, inputs: [], hidden: [] });
    fromModel("trace-card", model);
    showError("trace", null);
  } catch (e) { if (n === state.seq.story) showError("trace", e); }
}

// The attention view and the trace emptied (the tables made again when next drawn).
export function clearPositionViews() {
  state.attend = null;
  state.trace = null;
  drawTokens();
  for (const id of ["attend-table", "guesses", "inputs", "hidden"]) $(id).replaceChildren();
  grid.kind = "";
  $("inputs").dataset.key = "";
  $("attend-caption").textContent = "";
  $("guesses-h").textContent = "Next-token guesses";
}

export function clearLoss() {
  $("loss").replaceChildren();
  delete $("loss").dataset.loss;
}

// The weight each token gets from the reading position: one head's, or with all
// heads in view their mean over the heads that are on (each head's weights add up
// to 1, so the mean does too).
export function weightsShown() {
  const w = new Map();
  if (!state.attend) return w;
  if (state.attendHead >= 0) {
    for (const k of state.attend.keys) w.set(k.position, k.weight);
    return w;
  }
  const first = (viewLayer() - 1) * state.heads;   // the layer's heads, numbered over every layer
  const heads = [...Array(state.heads).keys()].filter((h) => !state.off.has(first + h));
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
export function drawTokens() {
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

export function tokenButton(t) {
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
export function restyleToken(b, t, weight, max, viewOff) {
  let cls = b._base || (b._base = b.dataset.base);
  if (t.position === state.pos) cls += " reading";
  if (t.position > state.pos) cls += " later";
  let bg = "";
  if (weight !== undefined && !viewOff) {
    // in steps of 1/20 of the largest (finer is hardly seen), none below: most tokens
    // keep theirs from one click to the next, and a token whose style is not written
    // is not restyled
    const a = Math.round(20 * weight / max);
    if (a > 0) {
      const shade = tokenShade(a / 20);   // text of contrast 4.5:1 or more on every step
      bg = shade.bg;
      if (shade.dark) cls += " dark";
    }
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
export function tokenTitle(b) {
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
export function tokenKeys(ev) {
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

export function drawAttention() {
  const att = state.attend;
  const cap = $("attend-caption");
  if (!att) return;
  const of = state.layers > 1 ? ` of layer ${viewLayer()}` : "";
  const who = state.head >= 0 ? `head ${headName(state.head)}` : `all ${state.heads} heads${of} (colour: their mean weight over the heads that are on)`;
  const read = att.keys.length;   // a row a position read, in either layout
  cap.textContent = `Position ${att.position}, "${att.token}", reads ${read} tokens; ${who}.`;
  if (state.head >= 0 && state.off.has(state.head)) {
    cap.textContent += ` Head ${headName(state.head)} is switched off: its weights are computed as always, but what it brings back is replaced, so they no longer count.`;
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
export const ROW_PX = 28, ROWS_SEEN = 16, ROWS_AROUND = 2;
export const grid = { kind: "", rows: [], fill: null, from: 0, to: 0, top: 0, pool: [], shown: 0, cells: 0, pads: [] };

// Writes only what changed (each write makes the browser match styles or lay out again).
// kind: which table ("one" head, "all" heads, with the first head's number); cols: its grid columns; minEm: the sum
// of their least widths (in em), below which the table scrolls sideways in its box
// instead of squeezing its columns; labels and headStyle(i): its header;
// fill(row, item): writes item into a row's cells.
export function setGridRows(kind, cols, minEm, labels, headStyle, rows, fill) {
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
export function gridRow() {
  const r = el("div", { class: "gt-row", role: "row", "data-testid": "attn-row" });
  for (let i = 0; i < grid.cells; i++) r.append(el("span", { role: "cell", class: i === 1 ? "text" : null }, document.createTextNode("")));
  return r;
}

// The first row in sight, from the last scroll position seen (reading scrollTop now
// would make the browser lay the page out in the middle of a redraw).
export function drawGridRows(always) {
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

export function gridScrolled(ev) {
  grid.top = ev.target.scrollTop;
  if (!grid.frame) grid.frame = requestAnimationFrame(() => { grid.frame = 0; drawGridRows(false); });
}

export function drawOneHeadTable(att) {
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
export function drawAllHeadsTable(att) {
  const shown = state.weights;
  let rows = att.keys;
  if ($("sort-weight").checked) rows = [...rows].sort((a, b) => (shown.get(b.position) || 0) - (shown.get(a.position) || 0));
  const H = state.heads, first = (viewLayer() - 1) * H;   // the layer's heads, numbered over every layer
  const labels = ["position", "token", "distance", ...[...Array(H).keys()].map((h) => `head ${headName(first + h)}`), "cosine"];
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
      setCss(cell, state.off.has(first + h) ? "color:#6e6a63; text-decoration: line-through" : `background: rgba(194,65,12,${(0.6 * x).toFixed(2)})`);
    }
    setText(c[3 + H], num(k.cosine));
  };
  // a head's column holds "head 7" and "100.0%" (4.2em with its padding)
  setGridRows("all" + first, `5.5em minmax(5em, 1.2fr) 6.5em repeat(${H}, minmax(4.2em, 1fr)) 5.5em`, 22.5 + 4.2 * H, labels, headStyle, rows, fill);
}

export function drawLoss(loss, full) {
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
