// Secret 1: where each head's weight goes on the test stories, against a snapshot of the same run.
import { calls, headColor, state } from "./state.js";
import { $, api, el, fmt, showError } from "./util.js";

// ---------- Secret 1 on the test stories: /api/heads for the model (and a snapshot) ----------

export const massOf = (report) => report.heads.map((r) => [r.d0, r.d1, r.d2, r.d3_7, r.d8_31, r.d32_255]);

// Secret 1 compares a model with snapshots of its own training run only ("X.stepN.safetensors"
// beside "X.safetensors", or the other snapshots of the run a snapshot is of): another run
// starts from other random weights, so its heads are no earlier stage of these.
export function fillCompare() {
  const sel = $("jobs-compare");
  const run = (p) => p.split("/").pop().replace(/\.safetensors$/, "").replace(/\.step\d+$/, "");
  const step = (p) => Number((p.match(/\.step(\d+)\.safetensors$/) || [0, Infinity])[1]);
  const mine = run(state.model), me = state.models.find((m) => m.path === state.model) || {};
  // the run's id, when both files record it, must agree too (a model trained again under the same name is another run)
  const sameRun = (m) => run(m.path) === mine && !(m.run && me.run && m.run !== me.run);
  const others = state.models.filter((m) => m.arch === "attention" && m.path !== state.model && sameRun(m) && step(m.path) < step(state.model))
    .sort((a, b) => step(a.path) - step(b.path));
  sel.replaceChildren(el("option", { value: "", text: others.length ? "(nothing)" : "(no earlier snapshot of this run is listed)" }),
    ...others.map((m) => el("option", { value: m.path, text: m.name })));
  if (others.length) sel.value = others[0].path;
}

export async function runJobs() {
  const other = $("jobs-compare").value;
  $("jobs-go").disabled = true;
  $("jobs-status").textContent = "measuring on the test stories...";
  try {
    const jobs = [api("/api/heads", { model: state.model })];
    if (other) jobs.push(api("/api/heads", { model: other }));
    const [cur, before] = await Promise.all(jobs);
    $("jobs-chart").replaceChildren(calls.headPanels(massOf(cur), before ? massOf(before) : null));
    $("jobs-reads").replaceChildren(...cur.heads.map((r, g) => el("li", {},
      el("span", { class: "swatch", style: `background:${headColor(g % state.heads)}` }),
      `head ${r.head}: mean distance back ${fmt(r.mean_distance, 1)}; reads most ${r.reads_most}`)));
    $("jobs-status").textContent = `${cur.heads[0].model}` + (before ? `; outline: ${before.heads[0].model}` : "");
    showError("jobs", null);
  } catch (e) {
    $("jobs-status").textContent = "";
    $("jobs-chart").replaceChildren(); $("jobs-reads").replaceChildren();
    showError("jobs", e);
  } finally { $("jobs-go").disabled = false; }
}
