// The page's state and the heads' colours, shared by every view (it imports nothing).

// Distinct colours, one a head of a layer, readable on white (Tableau 10 minus the greys);
// a model of more heads a layer uses them again.
export const HEAD_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"];
export const headColor = (h) => HEAD_COLORS[h % HEAD_COLORS.length];
export const DIST_BINS = ["0", "1", "2", "3-7", "8-31", "32+"];

export const state = {
  models: [],
  model: "",
  text: "",
  pos: -1,            // the reading position; -1 until the server said which is the last
  linkPos: null,      // a permalink's position, read once the story's length is known
  layers: 1,          // the model's layers of heads and heads a layer (0: none, window8), from /api/models
  heads: 8,
  layer: 1,           // the layer whose heads the attention view and the trace read when all are in view
  layerViews: {},     // by model: true when the server reads its attention and trace layer by layer, false when not, "asking"
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
  epoch: 0,           // counts the models picked: an answer asked under another epoch is dropped
  tests: [],          // the model's test stories (/api/stories): [{index, text}]
  gen: null,          // AbortController of the running generation
  trainTimer: 0,
  trainSeen: "",
};

// The entry of state.models for path p (by its file name when the folder differs).
export function findModel(p) {
  const base = (x) => x.split("/").pop();
  return state.models.find((m) => m.path === p) || state.models.find((m) => base(m.path) === base(p));
}

// The entry of /api/models of the model in view ({} before the list came).
export function modelEntry() {
  return state.models.find((x) => x.path === state.model) || {};
}

// The architecture of the model in view.
export function modelArch() {
  const m = state.models.find((x) => x.path === state.model);
  return m ? m.arch : "attention";
}

// The views' functions that other views call, filled once by app.js: a view imports
// state.js and util.js only, never another view, so the modules use each other in no circle.
export const calls = {};
