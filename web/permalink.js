// The permalink: model, story, reading position, head, switches and layer in the URL's hash.
import { calls, findModel, state } from "./state.js";
import { $, headName } from "./util.js";

// ---------- the permalink: model, story, reading position, head and switches in the hash ----------

export function savePermalink() {
  if (!state.models.length) return;
  const p = new URLSearchParams({ m: state.model, h: state.head, off: [...state.off].sort((a, b) => a - b).map(headName).join(","), p: state.pos, t: $("story").value });
  if (state.layers > 1) p.set("l", state.layer);
  const hash = "#" + p.toString();
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

// The view a permalink names, before anything is asked for; what does not fit this server
// (a model it does not list, a head the model has not, a position past the story's end)
// is left out.
export function readPermalink() {
  const p = new URLSearchParams(location.hash.slice(1));
  const m = p.get("m");
  if (m && findModel(m)) { state.model = findModel(m).path; $("model").value = state.model; calls.describeModel(); calls.fillCompare(); }
  if (p.get("t")) $("story").value = p.get("t");
  const n = state.layers * state.heads;
  const g = (name) => { const [a, b] = name.includes(":") ? name.split(":").map(Number) : [1, Number(name)]; return (a - 1) * state.heads + b; };
  for (const name of (p.get("off") || "").split(",").filter(Boolean)) { const h = g(name); if (h >= 0 && h < n) state.off.add(h); }
  const h = p.has("h") ? Number(p.get("h")) : NaN;
  if (Number.isInteger(h) && h >= -1 && h < n) state.head = h;
  const l = Number(p.get("l"));
  if (Number.isInteger(l) && l >= 1 && l <= state.layers) state.layer = l;
  const pos = Number(p.get("p"));
  if (p.has("p") && Number.isInteger(pos) && pos >= 0) state.linkPos = pos;
  calls.drawHeadsBar();
  calls.fillAblateHeads();
}
