// Attention and the transformer: an animation from chapter 6's network to this page's, to one
// transformer block (layer norm, attention, W_O, the residual connection, the MLP), a stack of
// blocks and a GPT, drawn with the shipped models' own sizes (/api/models); and a table of sizes.
import { state } from "./state.js";
import { $, el, svg, thousands } from "./util.js";

const tf = { stage: 0, timer: 0 };
const STAGES = ["Chapter 6's network", "This page's network", "A transformer block", "A stack of blocks", "A GPT"];

// The shipped model of each kind: window8, one layer of attention, two, the transformer.
function kinds() {
  const listed = state.models.filter((m) => !m.path.includes("snapshots/"));
  const by = (f) => listed.find(f) || {};
  return {
    w8: by((m) => m.arch === "window8"), att: by((m) => m.arch === "attention" && m.layers === 1),
    two: listed.find((m) => m.arch === "attention" && m.layers > 1 && /layers/.test(m.name)) || by((m) => m.arch === "attention" && m.layers > 1),
    tf: listed.find((m) => m.arch === "transformer" && m.pos === "alibi") || by((m) => m.arch === "transformer") };
}

// Each stage: boxes top to bottom, [label, detail, kind] (kind: "new" is drawn as what this stage adds).
function boxes(k) {
  const w8 = k.w8, a = k.att, t = k.tf;
  const V = thousands(a.vocab_size || 2000), D = a.row_dim || 32, H = a.heads || 8, vd = a.value_dim || 16;
  const TD = t.row_dim || 64, TH = t.heads || 8, Tk = t.key_dim || 8, Tm = t.hidden_dim || 256, TL = t.layers || 2;
  return [
    [["the last 8 tokens' rows", `${w8.context || 8} \u00d7 ${w8.row_dim || 32} numbers`], ["hidden layer", `${w8.hidden_dim || 128} tanh neurons`], ["output layer", `scores for ${V} tokens`]],
    [["the token's row", `${D} numbers`], ["attention: " + H + " heads", `each brings back ${vd} numbers, from up to ${a.window || 256} tokens back`, "new"],
      ["row beside the heads' results", `${D + H * vd} numbers`, "new"], ["hidden layer", `${a.hidden_dim || 128} tanh neurons`], ["output layer", `scores for ${V} tokens`]],
    [["rows in", `${TD} numbers a token`], ["layer norm", "average 0, spread 1", "new"], ["attention: " + TH + " heads", `${Tk} numbers each`],
      ["W_O", `mixes the heads back to ${TD}`, "new"], ["+ residual", "added to the row", "new"], ["layer norm", "", "new"],
      ["MLP", `${Tm} neurons, each position on its own`, "new"], ["+ residual", "rows out", "new"]],
    [["token rows", `${TD} numbers, no position added (ALiBi)`], ...[...Array(TL).keys()].map((l) => [`block ${l + 1}`, `attention (${TH} heads) and MLP (${Tm})`, "new"]),
      ["layer norm", ""], ["output layer", `scores for ${V} tokens`]],
    [["embeddings", "a row for each token, and a way to mark positions"], ["block 1", "causal attention and MLP"], ["block 2", ""],
      ["\u22ee", `${TL} blocks in storylm's transformer, 12 in GPT-2's smallest, 96 in GPT-3`, "new"], ["block N", ""],
      ["layer norm", ""], ["output layer", "the next token's probabilities", "new"]],
  ];
}

export function drawTransformer() {
  const box = $("tf-anim");
  if (!state.models.length) return;
  const W = Math.max(300, Math.min(720, Math.round(box.clientWidth || 720)));
  const stage = boxes(kinds())[tf.stage], BH = 44, G = 16, top = 10;
  const H = top + stage.length * (BH + G) + 10, bw = Math.min(W - 20, 460), x = (W - bw) / 2;
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "anim", "data-stage": tf.stage,
    "aria-label": `${STAGES[tf.stage]}: ${stage.map((b) => b[0]).join(", then ")}` });
  stage.forEach(([label, detail, kind], i) => {
    const y = top + i * (BH + G);
    if (i) g.append(svg("line", { x1: W / 2, x2: W / 2, y1: y - G, y2: y, stroke: "#666", "stroke-width": 2, "marker-end": "" }));
    g.append(svg("rect", { x, y, width: bw, height: BH, rx: 7, fill: kind === "new" ? "#fff4e5" : "#f5f3ee", stroke: kind === "new" ? "#c2410c" : "#8f8a80",
      class: "tfbox", style: `animation-delay:${(i * 0.12).toFixed(2)}s` }));
    g.append(svg("text", { x: W / 2, y: y + 18, "text-anchor": "middle", "font-size": 15, fill: "#1d1d1f", "font-weight": 600 }, label),
      svg("text", { x: W / 2, y: y + 36, "text-anchor": "middle", "font-size": 13, fill: "#4a4a55" }, detail));
  });
  box.replaceChildren(g);
  $("tf-stage").textContent = `${tf.stage + 1} of ${STAGES.length}: ${STAGES[tf.stage]}`;
  $("tf-stage").dataset.stage = tf.stage;
}

function go(k) { tf.stage = (k + STAGES.length) % STAGES.length; drawTransformer(); }
function stop() { clearInterval(tf.timer); tf.timer = 0; $("tf-play").textContent = "Play"; }

// The table of sizes: the page's networks from their files, then three published models.
// Sources: the first transformer's base model, Vaswani et al. 2017, "Attention Is All You
// Need", Table 3 (N = 6 blocks in each stack, d_model 512, h = 8, 65 million parameters; it
// marks positions with sinusoids, so no fixed context); GPT-2, Radford et al. 2019, "Language
// Models are Unsupervised Multitask Learners", Table 2 and section 2.3 (the largest: 1,542
// million parameters, 48 layers, d_model 1,600, a context of 1,024 tokens; 25 heads in its
// released hyperparameters); GPT-3, Brown et al. 2020, "Language Models are Few-Shot
// Learners", Table 2.1 and section 2.1 (175.0 billion, 96 layers, d_model 12,288, 96 heads,
// a context of 2,048 tokens).
export function drawSizes() {
  const k = kinds();
  const mine = [[k.w8, "chapter 6's network (window8)"], [k.att, "this page's network"], [k.two, "this page's network, 2 layers"], [k.tf, "storylm's tiny transformer"]]
    .filter(([m]) => m.path).map(([m, what]) => [`${what}: ${m.name}`, thousands(m.params),
      m.arch === "window8" ? "1 hidden layer" : String(m.layers), String(m.row_dim), m.arch === "window8" ? "none" : String(m.heads),
      m.arch === "window8" ? String(m.context) : String(m.window)]);
  const published = [
    ["the first transformer (base model, 2017)", "65 million", "6 + 6", "512", "8", "no fixed limit"],
    ["GPT-2 (largest, 2019)", "1.5 billion", "48", "1,600", "25", "1,024"],
    ["GPT-3 (largest, 2020)", "175 billion", "96", "12,288", "96", "2,048"]];
  const head = el("tr", {}, ...["network", "parameters", "layers (blocks)", "width (numbers a row)", "heads", "context (tokens read)"].map((c, i) =>
    el("th", { class: i ? null : "text", text: c })));
  $("tf-sizes").replaceChildren(el("thead", {}, head), el("tbody", {}, ...mine.concat(published).map((r, i) => el("tr", {
    "data-testid": "tf-size-row", class: i < mine.length ? null : "base" }, ...r.map((c, j) => el("td", { class: j ? null : "text", text: c }))))));
}

export function wireTransformer() {
  $("tf-next").addEventListener("click", () => { stop(); go(tf.stage + 1); });
  $("tf-prev").addEventListener("click", () => { stop(); go(tf.stage - 1); });
  $("tf-play").addEventListener("click", () => {
    if (tf.timer) { stop(); return; }
    $("tf-play").textContent = "Pause";
    go(tf.stage + 1);
    tf.timer = setInterval(() => { if (tf.stage === STAGES.length - 1) stop(); else go(tf.stage + 1); }, 2500);
  });
}
