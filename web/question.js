// The question: a short story whose first sentence names its hero, and after it a natural
// place for the name to come back. Chapter 6's window8 network (its 8-token window outlined)
// beside the attention network: each one's top guesses for the next word and the name's
// probability and rank there (/api/guess: storylm guess, with /api/tokenize for the window).
import { findModel, state } from "./state.js";
import { $, api, el, kindOf, prob, showError } from "./util.js";

export const QUESTION_STORY = "NAME had a red ball. She liked to throw it high in the sky. One day the ball went over the fence.";
let asked = 0;

// The two networks shown: the model picked and window8 (or, when window8 is picked, the
// server's default model beside it).
function pair() {
  const me = findModel(state.model) || {};
  const w8 = state.models.find((m) => m.arch === "window8" && !m.path.includes("snapshots/"));
  if (me.arch !== "window8") return w8 ? [w8, me] : [me];
  const other = state.models.find((m) => m.arch === "attention" && m.layers === 1 && !m.path.includes("snapshots/"));
  return other ? [me, other] : [me];
}

export async function refreshQuestion() {
  const n = ++asked, epoch = state.epoch;
  const typed = $("question-name").value.trim() || "Lily";
  const name = typed[0].toUpperCase() + typed.slice(1).toLowerCase();
  const text = QUESTION_STORY.replace("NAME", name);
  const models = pair();
  try {
    const got = await Promise.all(models.map((m) => Promise.all([
      api("/api/tokenize", { model: m.path, text }), api("/api/guess", { model: m.path, text, word: name.toLowerCase(), top_k: 5 })])));
    if (n !== asked || epoch !== state.epoch) return;
    $("question-out").replaceChildren(...got.map(([tok, g], i) => networkCard(models[i], tok, g)));
    suggest(got[got.length - 1][1]);
    why(got.map((x) => x[1]), models, name);
    showError("question", null);
  } catch (e) { if (n === asked && epoch === state.epoch) { $("question-out").replaceChildren(); showError("question", e); } }
}

function networkCard(m, tokens, g) {
  const w8 = m.arch === "window8", C = g.context || 8;
  const words = tokens.map((t, i) => el("span", { class: "qtok" + (w8 && i >= tokens.length - C ? " inwin" : ""), "data-testid": "question-token" },
    t.piece.startsWith("##") ? t.piece.slice(2) : t.piece));
  const story = el("p", { class: "qstory" + (w8 ? "" : " whole") }, ...words.flatMap((w, i) => (i ? [" ", w] : [w])));
  const list = el("ol", { class: "guesses" }, ...g.guesses.map((x) => el("li", {
    "data-testid": "question-guess", "data-token": x.token, "data-probability": x.probability }, `${x.token} ${prob(x.probability)}`)));
  const w = g.word;
  return el("div", { class: "qcard", "data-testid": "question-model", "data-model": m.path, "data-probability": w.probability, "data-rank": w.rank },
    el("h3", { text: `${m.name}: ${kindOf(m)}` }),
    el("p", { class: "muted", text: w8 ? `It reads only the last ${C} tokens, outlined.` : `It reads the whole story, up to ${m.window || 256} tokens back.` }),
    story, el("p", {}, "Its top guesses for the next word:"), list,
    el("p", { "data-testid": "question-name-p" }, `"${w.word}"` + (w.pieces > 1 ? ` (its first piece "${w.first_piece}")` : "") +
      `: probability ${prob(w.probability)}, rank ${w.rank} of ${m.vocab_size.toLocaleString("en")}.`));
}

// Names that show the point: one the model knows well, the chapter's rare "fred", a rarer one, an invented one.
function suggest(g) {
  const names = g.names || [];
  const pick = (kind) => names.filter((x) => x.kind === kind).map((x) => x.name);
  const list = [...new Set([pick("common")[0], "fred", pick("rare")[0], pick("invented")[0]].filter(Boolean))];
  $("question-try").replaceChildren("try: ", ...list.map((x) => el("button", { type: "button", class: "chip", "data-testid": "question-suggest",
    onclick: () => { $("question-name").value = x; refreshQuestion(); } }, x)));
}

function why(answers, models, name) {
  const att = answers.find((_, i) => models[i].arch !== "window8"), w8 = answers.find((_, i) => models[i].arch === "window8");
  if (!att || !att.word) { $("question-why").textContent = ""; return; }
  const w = att.word;
  const kind = w.kind === "common" ? `a name the stories it learnt from hold ${w.seen.toLocaleString("en")} times` :
    w.kind === "rare" ? `a rare name, seen only ${w.seen} times in the stories its names are learnt from` :
      w.kind === "invented" ? "an invented name, never seen in the stories" : "";
  $("question-why").textContent = `"${name}" is ${kind}. The attention network gives it ${prob(w.probability)} (rank ${w.rank})` +
    (w8 ? `, window8 ${prob(w8.word.probability)} (rank ${w8.word.rank})` : "") +
    `. Copying works best for the names a network knows well: a common name is one token it has seen brought back many times; ` +
    `a rare one it hardly knows; an invented one is cut into pieces it must put together again (Secret 4).`;
}
