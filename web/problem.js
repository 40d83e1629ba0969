// The problem: a test story with every word marked that appeared earlier in it but not among
// the 8 tokens before it (/api/repeats: storylm repeats, by stats' own rule), the story's name
// in its own colour; and the share of such tokens over every test story.
import { state } from "./state.js";
import { $, cached, el, fromModel, pct, showError } from "./util.js";

// The test stories of the model picked as the picker's options (state.tests, from app.js).
export function fillProblemStories() {
  const pick = $("problem-pick"), old = pick.value;
  pick.replaceChildren(...state.tests.map((s, k) => el("option", { value: k, text: `${k}: ${s.text.split(/\s+/).slice(0, 6).join(" ")}...` })));
  if (old && Number(old) < state.tests.length) pick.value = old;
}

export async function refreshProblem() {
  const model = state.model, epoch = state.epoch;
  const story = Number($("problem-pick").value || 0);
  $("problem-story").replaceChildren();
  $("problem-count").textContent = "";
  $("problem-share").textContent = "";
  fromModel("problem-card", null);
  try {
    const d = await cached("/api/repeats", { model, story });
    if (epoch !== state.epoch) return;
    drawProblem(d);
    fromModel("problem-card", model, `the common tokens and names of ${d.stories.file.split("/").pop()}`);
    showError("problem", null);
  } catch (e) { if (epoch === state.epoch) showError("problem", e); }
}

// The story as words: a word's pieces ("##") joined; a piece marked far, or of the name.
function drawProblem(d) {
  const box = $("problem-story");
  const words = [];
  for (const t of d.tokens) {
    if (t.position === 0 || t.position === d.tokens.length - 1 && /^\[.*\]$/.test(t.token)) continue;   // [EOS] at either end
    const piece = t.token.startsWith("##") && words.length ? t.token.slice(2) : t.token;
    const span = el("span", {
      class: "mark" + (t.name ? " name" : t.far ? " far" : ""), "data-testid": "problem-token", "data-pos": t.position,
      "data-far": t.far, "data-name": t.name, title: t.far ? `seen ${t.back} tokens back` : null,
    }, piece);
    if (t.token.startsWith("##") && words.length) words[words.length - 1].push(span);
    else words.push([span]);
  }
  box.replaceChildren(...words.flatMap((w, i) => (i ? [" ", ...w] : w)));
  const marked = words.filter((w) => w.some((s) => s.dataset.far === "1")).length;
  const count = $("problem-count");
  count.dataset.far = d.far_repeats;
  count.textContent = `This story has ${marked} marked word${marked === 1 ? "" : "s"} (${d.far_repeats} token${d.far_repeats === 1 ? "" : "s"}), ` +
    `each seen earlier in the story but not among the 8 tokens before it` + (d.hero ? `; its name is "${d.hero}".` : "; no name of its first sentence comes back.");
  const t = d.test;
  const share = $("problem-share");
  share.dataset.share = t.far_repeat_share;
  share.textContent = `Over the ${d.stories.test_stories} test stories, ${t.far_repeats.toLocaleString("en")} of their ` +
    `${t.tokens.toLocaleString("en")} tokens (${pct(t.far_repeat_share)}) are such repeats, out of chapter 6's reach ` +
    `(storylm repeats, and storylm stats's far repeats).`;
}
