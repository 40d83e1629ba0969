// The algorithm: the code the page runs, in five parts from the weights to a training step,
// as storylm's build took it from the library's own source (algorithm.json, made by
// cmake/extract_code.cmake from the regions marked "page:"), or the same network in PyTorch.
import { $, el, showError } from "./util.js";

const PARTS = [
  ["attention forward", "1. The attention forward", "compare (q.k/\u221ad plus the distance score), weigh (softmax), blend (the weighted values)"],
  ["hidden layer", "2. The hidden layer", "the row and the heads' results into the tanh layer"],
  ["output and loss", "3. The output and loss", "scores for every token, softmax, \u2212log p of the next token"],
  ["backward", "4. The backward", "every weight's gradient, from the loss back to the rows"],
  ["adam step", "5. Adam's step", "each weight moved by its gradient's running averages"],
];
const algo = { pieces: null, part: 0 };

export async function loadAlgorithm() {
  try {
    const res = await fetch("algorithm.json");
    if (!res.ok) throw new Error(`algorithm.json: the server answered ${res.status}`);
    algo.pieces = (await res.json()).pieces;
    drawAlgorithm();
  } catch (e) { showError("algo", e); }
}

export function drawAlgorithm() {
  if (!algo.pieces) return;
  const lang = $("algo-lang").value;
  $("algo-tabs").replaceChildren(...PARTS.map(([, title], i) => el("button", {
    type: "button", role: "tab", "aria-selected": i === algo.part ? "true" : "false", class: "tab", "data-testid": "algo-tab",
    onclick: () => { algo.part = i; drawAlgorithm(); } }, title)));
  const [name, , what] = PARTS[algo.part];
  const mine = algo.pieces.filter((p) => p.part === name && (lang === "py") === p.file.endsWith(".py"));
  const extra = lang === "py" && algo.part === 0 ? algo.pieces.filter((p) => p.part === "weights") : [];
  $("algo-says").textContent = `${what}. ` + (lang === "py" ? "PyTorch, from python/examples/attention_network.py." :
    "storylm's C, as the server runs it: " + mine.map((p) => `${p.file}, line ${p.line}`).join("; ") + ".");
  $("algo-code").replaceChildren(...extra.concat(mine).map((p) => el("figure", { "data-testid": "algo-piece", "data-file": p.file, "data-line": p.line },
    el("figcaption", { text: `${p.file}:${p.line}` }), el("pre", { tabindex: 0 }, el("code", { text: p.code })))));
}
