// The film: one position of a story looking back through one head, step by step
// (/api/lookup: storylm lookup): its query, each earlier key with its scores (q.k/sqrt(d),
// the distance score, their sum), then the weights softmax makes, then the values brought
// back and their blend. Play, pause, step; pick the position and the head.
import { state } from "./state.js";
import { $, cached, el, fmt, fromModel, headName, kindOf, known, modelViews, pct, showError } from "./util.js";

const film = { data: null, stage: 0, timer: 0, story: "" };

// The story the film reads: the problem's test story; its positions from its marks
// (/api/repeats, asked by the problem), the name's later mention first picked.
export async function refreshFilm() {
  const model = state.model, epoch = state.epoch;
  stopFilm();
  film.data = null;
  $("film-view").replaceChildren();
  $("film-says").textContent = "";
  $("film-stage").textContent = "";
  fromModel("film-card", null);
  showError("film", null);
  const pick = Number($("problem-pick").value || 0), story = state.tests[pick];
  if (!modelViews().heads) {
    $("film-says").textContent = `This is ${kindOf(state.models.find((x) => x.path === state.model))}: it has no heads, so no query, keys or values. Pick a model with heads to watch one look back.`;
    return;
  }
  if (!story) return;
  film.story = story.text;
  try {
    const marks = known("/api/repeats", { model, story: pick }) || await cached("/api/repeats", { model, story: pick });
    if (epoch !== state.epoch) return;
    fillPickers(marks);
    await loadFilm();
  } catch (e) { if (epoch === state.epoch) showError("film", e); }
}

function fillPickers(marks) {
  // the position just before the name comes back (it must find the name to guess it), else the last
  const toks = marks.tokens.filter((t) => t.position > 0 && t.position < marks.tokens.length - 1);
  const next = (t) => marks.tokens[t.position + 1] || {};
  const first = toks.find((t) => next(t).name && next(t).far) || toks.find((t) => next(t).far) || toks[toks.length - 1];
  $("film-pos").replaceChildren(...toks.map((t) => el("option", { value: t.position,
    text: `${t.position}: ${t.token}${next(t).far ? (next(t).name ? " (next: the name again)" : ` (next: "${next(t).token}" again)`) : ""}` })));
  $("film-pos").value = first.position;
  const n = state.layers * state.heads, keep = $("film-head").value;
  $("film-head").replaceChildren(...[...Array(n).keys()].map((g) => el("option", { value: g, text: `head ${headName(g)}` })));
  $("film-head").value = keep && Number(keep) < n ? keep : state.head >= 0 ? state.head : 0;
}

export async function loadFilm() {
  const model = state.model, epoch = state.epoch;
  stopFilm();
  const g = Number($("film-head").value), pos = Number($("film-pos").value);
  const body = { model, text: film.story, pos, head: g % state.heads };
  if (state.layers > 1) body.layer = Math.floor(g / state.heads) + 1;
  try {
    const d = await cached("/api/lookup", body);
    if (epoch !== state.epoch) return;
    film.data = d;
    drawFilm();
    setStage(0);
    fromModel("film-card", model);
    showError("film", null);
  } catch (e) { if (epoch === state.epoch) showError("film", e); }
}

// A list of numbers as a strip of cells: orange positive, blue negative.
function strip(xs, cell) {
  const big = Math.max(1e-9, ...xs.map(Math.abs));
  const s = el("span", { class: "strip", title: xs.map((x) => fmt(x)).join(" ") });
  for (const x of xs) {
    const a = Math.min(1, Math.abs(x) / big).toFixed(2);
    s.append(el("i", { style: `width:${cell}px; background:${x >= 0 ? `rgba(194,65,12,${a})` : `rgba(37,99,235,${a})`}` }));
  }
  return s;
}

function drawFilm() {
  const d = film.data, read = d.reading[0];
  const head = el("tr", {}, ...["pos", "token", "back", "key", "q\u00b7k/\u221ad", "distance score", "score", "weight", "value \u00d7 weight"].map((c, i) =>
    el("th", { class: i === 1 ? "text" : null, text: c })));
  const rows = d.keys.map((k, j) => el("tr", {
    class: "frow", "data-testid": "film-row", "data-step": j + 1, "data-position": k.position, "data-dot": k.dot,
    "data-distance-score": k.distance_score, "data-score": k.score, "data-weight": k.weight,
  }, el("td", { text: k.position }), el("td", { class: "text", text: k.token }), el("td", { text: k.distance }),
  el("td", {}, strip(k.key, 7)), el("td", { text: fmt(k.dot) }), el("td", { text: fmt(k.distance_score) }),
  el("td", { text: fmt(k.score) }), el("td", { class: "w", text: pct(k.weight) }),
  el("td", { class: "v" }, strip(k.value.map((x) => x * k.weight), 5))));
  $("film-view").replaceChildren(
    el("p", { "data-testid": "film-query", "data-values": JSON.stringify(read.query) }, `Position ${read.position}, "${read.token}", asks with its query of ${read.query.length} numbers: `, strip(read.query, 10)),
    el("div", { class: "scroll" }, el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows))),
    el("p", { class: "blend", "data-testid": "film-blend", "data-values": JSON.stringify(read.blend) },
      `The blend it brings back, ${read.blend.length} numbers: `, strip(read.blend, 10), ` (${read.blend.map((x) => fmt(x, 2)).join(", ")})`));
}

// Stages: 0 the query; 1..n each key in turn (nearest first); n+1 the weights; n+2 the blend.
function setStage(k) {
  const d = film.data;
  if (!d) return;
  const n = d.keys.length, last = n + 2;
  film.stage = Math.max(0, Math.min(last, k));
  const s = film.stage, box = $("film-view");
  box.classList.toggle("show-w", s > n);
  box.classList.toggle("show-v", s > n + 1);
  for (const r of box.querySelectorAll(".frow")) r.hidden = Number(r.dataset.step) > s;
  const cur = s >= 1 && s <= n ? d.keys[s - 1] : null;
  const sum = d.keys.reduce((a, x) => a + Math.exp(x.score), 0);
  const top = d.keys.reduce((a, x) => (x.weight > a.weight ? x : a), d.keys[0]);
  const tf = d.position_learned ? "learned" : "fixed";
  $("film-says").textContent = s === 0 ? `Head ${$("film-head").selectedOptions[0].text.replace("head ", "")} at position ${d.reading[0].position}: its query. Step to meet the keys, nearest first.` :
    cur ? `Key at position ${cur.position}, "${cur.token}", ${cur.distance} back: q\u00b7k/\u221a${d.reading[0].query.length} = ${fmt(cur.dot)}, plus the ${tf} distance score ${fmt(cur.distance_score)}: score ${fmt(cur.score)}.` :
      s === n + 1 ? `Softmax turns the ${n} scores into weights that add up to 1: each weight is e^score / ${fmt(sum, 2)}. The most, ${pct(top.weight)}, goes to "${top.token}" at position ${top.position}.` :
        `Each value times its weight, added up: the blend this head brings back, ${d.reading[0].blend.length} numbers.`;
  $("film-stage").textContent = `step ${s} of ${last}`;
  $("film-stage").dataset.stage = s;
  $("film-stage").dataset.last = last;
  if (cur) { const r = box.querySelector(`.frow[data-step="${s}"]`); if (r && film.timer) r.scrollIntoView({ block: "nearest" }); }
}

export function stopFilm() {
  clearInterval(film.timer);
  film.timer = 0;
  $("film-play").textContent = "Play";
}

export function wireFilm() {
  $("film-step").addEventListener("click", () => { stopFilm(); setStage(film.stage + 1); });
  $("film-back").addEventListener("click", () => { stopFilm(); setStage(film.stage - 1); });
  $("film-play").addEventListener("click", () => {
    if (film.timer) { stopFilm(); return; }
    if (!film.data) return;
    if (film.stage >= film.data.keys.length + 2) setStage(0);
    $("film-play").textContent = "Pause";
    film.timer = setInterval(() => {
      if (!film.data || film.stage >= film.data.keys.length + 2) { stopFilm(); return; }
      setStage(film.stage + 1);
    }, 120);
  });
  $("film-pos").addEventListener("change", loadFilm);
  $("film-head").addEventListener("change", loadFilm);
}
