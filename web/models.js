// The model picker: the models /api/models lists, the shape of the one picked (heads by layer),
// which views it has, and whether the server shows a model of several layers layer by layer.
import { downloadHref } from "./site.js";
import { calls, state } from "./state.js";
import { $, api, batch, el, headless, kindOf, modelViews, setUnavailable, thousands } from "./util.js";

// ---------- models ----------

// The model list (again after a training saved a new one); the model in use stays.
export async function loadModels() {
  const data = await api("/api/models");
  state.models = data.models || [];
  const pick = $("model");
  const keep = state.model || data.default;
  pick.replaceChildren(...state.models.map((m) =>
    el("option", { value: m.path, text: `${m.name} (${m.arch})` })));
  const known = state.models.some((m) => m.path === keep);
  state.model = known ? keep : (state.models[0] ? state.models[0].path : "");
  pick.value = state.model;
  calls.fillCompare();
  calls.fillBases();
  describeModel();
}

// The model's shape (from its file's header, through /api/models) decides the heads drawn;
// switches of another model's heads do not carry over.
export function describeModel() {
  const m = state.models.find((x) => x.path === state.model);
  $("model-download").href = downloadHref(state.model);
  $("model-info").textContent = m ? `${m.path}: ${thousands(m.params)} parameters, ${m.vocab_size} tokens` +
    (m.layers > 1 ? `, ${m.layers} layers of ${m.heads} heads` : "") : "";
  if (m && m.vocab_size > 0) $("gen-k").max = m.vocab_size; // top-k reaches every token of this model's vocabulary
  fillBaselines();
  const layers = m && m.layers ? m.layers : 1, heads = m && m.heads !== undefined ? m.heads : 8;
  if (layers !== state.layers || heads !== state.heads) { state.off.clear(); state.head = -1; state.layer = 1; }
  state.layers = layers;
  state.heads = heads;
  const views = modelViews();
  const asked = state.layerViews[state.model];
  if (views.heads && state.layers > 1 && asked === undefined) askLayerViews(state.model);
  const one = views.oneLayer ? null : views.heads ?
    (asked === undefined || asked === "asking" ? `Asking the server whether it shows this model's heads layer by layer...` :
      `This server shows the attention view and the trace of one-layer models only; this model has ${state.layers} layers. Its distance scores (layer by layer), the heads' jobs, switching heads off (Secret 3) and the two lookups (Secret 4) read every layer.`) :
    `This is ${kindOf(m)} (${describe(m)}): it has no heads, so there is nothing to show here. The loss on your story, the name swap (as its baseline), Secret 4 and writing on work with it.`;
  setUnavailable("attend-card", one);
  const short = views.heads ? "This view reads one layer of heads at a time (see Tool 1)." : `${kindOf(m)} has no heads: nothing to show here (see Tool 1).`;
  // a model without heads has a Tool 3 all the same: its guesses after the story
  setUnavailable("trace-card", views.heads ? one && short : null);
  $("trace-more").hidden = !views.heads;
  describeSizes(m || {});
  for (const card of ["dist-card", "jobs-card", "ablate-card"]) setUnavailable(card, views.heads ? null : short);
  // without heads the bar keeps only the loss on the story
  for (const id of ["heads-h", "heads"]) $(id).hidden = !views.heads;
  $("ablate-mode").closest(".row").classList.toggle("no-heads", !views.heads);
  const layerPick = $("dist-layer");
  layerPick.replaceChildren(...[...Array(state.layers).keys()].map((l) => el("option", { value: l + 1, text: `layer ${l + 1}` })));
  layerPick.closest("label").hidden = state.layers < 2;
  const viewPick = $("view-layer");   // the attention view's and the trace's
  viewPick.replaceChildren(...[...Array(state.layers).keys()].map((l) => el("option", { value: l + 1, text: `layer ${l + 1}` })));
  viewPick.value = state.layer;
  viewPick.closest("label").hidden = state.layers < 2 || !views.oneLayer;
  calls.drawHeadsBar();
  calls.fillAblateHeads();
}

// Whether the server reads a model of several layers layer by layer in the attention view
// and the trace ("layer" in their requests): one small batch of both, once a model. A server
// that reads one layer only answers 400, and the cards show a note, not an error.
async function askLayerViews(model) {
  state.layerViews[model] = "asking";
  const body = { model, text: "Once", layer: 2 };
  let ok = false;
  try {
    await batch([{ url: "/api/attend", body: { ...body, wide: true } }, { url: "/api/trace", body }]);
    ok = true;
  } catch (e) {
    // not asked after all (another model was picked first): asked again when it is picked again
    if (e.stale) { delete state.layerViews[model]; return; }
  }
  state.layerViews[model] = ok;
  if (model !== state.model) return;
  describeModel();
  if (ok) calls.refreshStory();
}

// The name swap's baselines: chapter 6's networks (models without heads) with the picked
// model's vocabulary, as two models' guesses compare only over the same pieces.
export function fillBaselines() {
  const sel = $("swap-baseline");
  const old = sel.value;
  const cur = state.models.find((m) => m.path === state.model);
  const same = (m) => !cur || !cur.vocab_hash || m.vocab_hash === cur.vocab_hash;
  const w8 = state.models.filter((m) => headless(m) && same(m));
  sel.replaceChildren(el("option", { value: "", text: w8.length ? "(no baseline)" : "(no baseline of this model's vocabulary)" }),
    ...w8.map((m) => el("option", { value: m.path, text: `${m.name} (${m.arch})` })));
  if (w8.some((m) => m.path === old)) sel.value = old;
  else if (w8.length) sel.value = w8[0].path;
}

// The model list names files as the server lists them; a path given elsewhere (the
// trainer's) may be spelt differently, so the file name decides when the path does not.

// The server's line for the model's architecture (its blocks or layers, heads and sizes).
function describe(m) {
  return m && m.description ? m.description : m && m.arch ? m.arch : "a model";
}

// The chapter's sizes in the words of the model picked, all from what the server says of it
// (/api/models: its readout, heads, d_model, d_mlp, context), so that a new architecture needs
// no edit here: each head's query and key of key_dim numbers and what it brings back of value_dim.
export function describeSizes(m) {
  const kd = m.key_dim || 8, vd = m.value_dim || 16, H = m.heads || 0, D = m.row_dim || 32;
  for (const e of document.querySelectorAll(".kd")) e.textContent = String(kd);
  for (const e of document.querySelectorAll(".vd")) e.textContent = String(vd);
  const reach = m.context || 8;
  $("trace-help").textContent = headless(m) ?
    `This model has no heads (${describe(m)}): its hidden layer reads the rows of the last ${reach} tokens. Here are its next-token guesses after your story.` :
    m.readout === "residual" ? `What block L reads at the reading token: its resid_pre of ${D} numbers, then what each of its ${H} heads brings back (hook_z, ${vd} numbers each)` +
      (m.d_mlp > 0 ? `, its most active MLP neurons (${m.d_mlp} a block)` : " (its blocks have no MLP)") + ", and the network's next-token guesses." :
      `The ${D + H * vd} numbers the hidden layer reads for the reading token: its own row of ${D}, then what each of the ${H} heads brings back, ${vd} numbers each; the most active hidden units, and the network's next-token guesses.`;
  $("trace-sizes").dataset.model = m.path || "";
  $("trace-sizes").dataset.description = describe(m);
  const w8 = state.models.find(headless);
  $("trace-sizes").firstChild.nodeValue = m.params ?
    `In all, ${thousands(m.params)} numbers to learn in ${kindOf(m)} picked (${describe(m)})` +
    (w8 && !headless(m) ? `, about as many as chapter 6's ${thousands(w8.params)}: ` : ": ") +
    (headless(m) ? `it reads the last ${reach} tokens only. ` : `it reads up to ${m.window || 256} tokens back instead of ${w8 ? w8.context || 8 : 8}. `) +
    "Training is chapter 6's too: the same loss, \u2212log of the probability given to the token that came next, and the same Adam. What changes is what a step reads. No position ever reads a later token, so one forward pass over a whole story makes a guess at every position at once, and the gradients of all of them are added up. Each training step reads 8 whole stories, about 2,000 positions, instead of chapter 6's 64 positions picked at random." : "";
}
