// The model picker: the models /api/models lists, the shape of the one picked (heads by layer),
// which views it has, and whether the server shows a model of several layers layer by layer.
import { calls, state } from "./state.js";
import { $, api, batch, el, keep, known, modelViews, setUnavailable } from "./util.js";

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
  fillBaselines();
  calls.fillCompare();
  describeModel();
}

// The model's shape (from its file's header, through /api/models) decides the heads drawn;
// switches of another model's heads do not carry over.
export function describeModel() {
  const m = state.models.find((x) => x.path === state.model);
  $("model-download").href = "/api/download?model=" + encodeURIComponent(state.model);
  $("model-info").textContent = m ? `${m.path}: ${m.params.toLocaleString("en")} parameters, ${m.vocab_size} tokens` +
    (m.layers > 1 ? `, ${m.layers} layers of ${m.heads} heads` : "") : "";
  if (m && m.vocab_size > 0) $("gen-k").max = m.vocab_size; // top-k reaches every token of this model's vocabulary
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
  } catch (e) { ok = false; }
  state.layerViews[model] = ok;
  if (model !== state.model) return;
  describeModel();
  if (ok) calls.refreshStory();
}

export function fillBaselines() {
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
