// Secret 2: the story's hero renamed (/api/swap); the report tables other panels draw too.
import { findModel, state } from "./state.js";
import { $, api, el, fmt, fromModel, kindOf, pct, prob, showError, tableOf } from "./util.js";

// ---------- Secret 2: the name swap ----------

export async function runSwap() {
  const name = $("swap-name").value.trim();
  if (!name) { showError("swap", new Error("Type a name to swap in.")); return; }
  const body = { model: state.model, text: $("story").value, name }, epoch = state.epoch;
  // the baseline is compared with nothing when it is the model picked (not with itself)
  if ($("swap-baseline").value && $("swap-baseline").value !== state.model) body.baseline = $("swap-baseline").value;
  $("swap-go").disabled = true;
  try {
    const data = await api("/api/swap", body);
    if (epoch !== state.epoch) return;   // an answer for the model picked before: dropped
    $("swap-out").replaceChildren(...(Array.isArray(data.mentions) ? swapView(data) : reportView(data)));
    fromModel("swap-card", state.model, body.baseline ? `baseline: ${body.baseline.split("/").pop()}` : "");
    showError("swap", null);
  } catch (e) { if (epoch === state.epoch) showError("swap", e); } finally { $("swap-go").disabled = false; }
}

// What "seen N times" counts: the training stories of the model's stories file, or, for a file
// of held-out stories only (the shipped models' 100), every story of it.
function seenIn(d) {
  const st = d.stories || {}, file = (st.file || "").split("/").pop();
  if (!st.stories) return "in the stories its names are learnt from";
  return st.stories === st.test_stories ? `in the ${st.stories} stories of ${file} (its names are learnt from them all: the training stories are not here)` :
    `in the ${(st.stories - st.test_stories).toLocaleString("en")} training stories of ${file}`;
}

// The typed story renamed: where the name comes back, what each network gives the new
// name's first piece there (probability and rank among the vocabulary's tokens).
export function swapView(d) {
  const base = d.baseline && d.baseline !== "none";
  const me = findModel(d.model.file) || {}, mine = me.arch || "model";
  const them = base ? (findModel(d.baseline) || {}).arch || "baseline" : "";
  const seen = d.train_count ? `seen ${d.train_count.toLocaleString("en")} time${d.train_count === 1 ? "" : "s"}` : "never seen";
  const out = [el("p", {}, `The hero "${d.hero}" becomes "${d.name}" (${d.kind}, ${seen} ${seenIn(d)}):`),
    el("p", { class: "gen-out", "data-testid": "swap-text", text: d.swapped_text })];
  const cols = ["mention", "position", "previous mention", `${mine}: probability`, "rank"];
  if (base) cols.push(`${them}: probability`, "rank");
  const head = el("tr", {}, ...cols.map((c) => el("th", { text: c })));
  const rows = d.mentions.map((m) => el("tr", {
    "data-testid": "swap-row", "data-position": m.position,
    "data-model-probability": m.model_probability, "data-baseline-probability": base ? m.baseline_probability : null,
  },
    el("td", { text: m.mention }), el("td", { text: m.position }),
    el("td", { class: "text", text: m.far ? "more than 8 tokens back" : "within the last 8" }),
    el("td", { text: prob(m.model_probability) }), el("td", { text: m.model_rank }),
    ...(base ? [el("td", { text: prob(m.baseline_probability) }), el("td", { text: m.baseline_rank })] : [])));
  out.push(el("div", { class: "scroll" }, el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows))));
  let sum = `Over the ${d.later_mentions} later mentions, ${kindOf(me)} gives "${d.name}" ${prob(d.model_probability)} on average and guesses it first ${pct(d.model_top1)} of the time`;
  if (base) sum += `; ${them} gives it ${prob(d.baseline_probability)} and guesses it first ${pct(d.baseline_top1)} of the time`;
  out.push(el("p", { "data-testid": "swap-summary", text: sum + "." }));
  return out;
}

// A report as the CLI's JSON gives it: its plain fields as a list, each table (an
// array of objects) as a table, so every number the server sends is shown.
export function reportView(data) {
  const skip = new Set(["command", "model"]);
  const kv = el("dl", { class: "kv" });
  const tables = [];
  for (const [k, v] of Object.entries(data)) {
    if (skip.has(k)) continue;
    if (Array.isArray(v) && v.length && typeof v[0] === "object") tables.push(el("h3", { text: k.replace(/_/g, " ") }), tableOf(v, k));
    else if (v === null || typeof v !== "object") kv.append(el("dt", { text: k.replace(/_/g, " ") }), el("dd", { text: fmt(v) }));
  }
  return [kv, ...tables];
}

