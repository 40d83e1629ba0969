// What attention does differently, measured: how far back each head's weight reaches over the
// test stories (/api/heads, Secret 1's measure): its share beyond the 8 tokens before, and its
// mean distance back.
import { headColor, state } from "./state.js";
import { $, cached, el, fmt, fromModel, kindOf, modelViews, pct, showError } from "./util.js";

export async function refreshDiff() {
  const model = state.model, epoch = state.epoch;
  $("diff-chart").replaceChildren();
  fromModel("diff-card", null);
  showError("diff", null);
  if (!modelViews().heads) {
    const m = state.models.find((x) => x.path === model);
    $("diff-status").textContent = `This is ${kindOf(m)}: it has no heads to measure. Pick a model with heads to measure them.`;
    return;
  }
  $("diff-status").textContent = "Measuring on the test stories\u2026";
  try {
    const d = await cached("/api/heads", { model });
    if (epoch !== state.epoch) return;
    drawReach(d);
    fromModel("diff-card", model);
  } catch (e) {
    if (epoch !== state.epoch) return;
    $("diff-status").textContent = "";
    showError("diff", e);
  }
}

// One bar a head: its weight beyond 8 back (d8_31 + d32_255), to the whole width = all of it.
function drawReach(d) {
  const rows = d.heads.map((r) => ({ head: r.head, far: r.d8_31 + r.d32_255, mean: r.mean_distance }));
  const far = rows.reduce((a, r) => (r.far > a.far ? r : a));
  $("diff-status").textContent = `Over the test stories, head ${far.head} puts ${pct(far.far)} of its weight more than 8 tokens back, ` +
    `out of chapter 6's reach; the heads' mean distances back run from ${fmt(Math.min(...rows.map((r) => r.mean)), 1)} ` +
    `to ${fmt(Math.max(...rows.map((r) => r.mean)), 1)} tokens.`;
  $("diff-chart").replaceChildren(el("ul", { class: "reach" }, ...rows.map((r, g) => el("li", {
    "data-testid": "diff-head", "data-head": r.head, "data-far": r.far, "data-mean": r.mean,
  }, el("span", { class: "who" }, el("span", { class: "swatch", style: `background:${headColor(g % (state.heads || 8))}` }), `head ${r.head}`),
  el("span", { class: "track" }, el("span", { class: "fill", style: `width:${(100 * r.far).toFixed(1)}%` })),
  el("span", { class: "what", text: `${pct(r.far)} beyond 8 back, mean ${fmt(r.mean, 1)}` })))));
}
