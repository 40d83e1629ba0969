// Tool 1's measured statements for the model in view (/api/stats: storylm stats): per head,
// the correlation of q.k with the cosine of the two rows over every pair in the test stories,
// and the share of positions whose key closest in direction is not the largest q.k.
import { state } from "./state.js";
import { $, api, el, fmt, headName, keep, known, modelViews, pct, showError } from "./util.js";

export async function refreshStats() {
  const model = state.model, epoch = state.epoch, body = { model };
  $("stats-table").replaceChildren();
  $("stats-closest").textContent = "";
  showError("stats", null);
  if (!modelViews().heads) { $("stats-corr").textContent = "(Chapter 6's network has no heads to measure.)"; return; }
  $("stats-corr").textContent = "Measuring on the test stories\u2026";
  try {
    const d = known("/api/stats", body) || await api("/api/stats", body);
    keep("/api/stats", body, d);
    if (epoch !== state.epoch) return;
    drawStats(d);
  } catch (e) {
    if (epoch !== state.epoch) return;
    // a model the statistics are not written for (several layers of heads): said, not an error
    $("stats-corr").textContent = `(These statistics are not measured for this model: ${e.message})`;
  }
}

function drawStats(d) {
  const c = d.heads.map((h) => h.correlation), s = d.heads.map((h) => h.closest_not_largest);
  const lo = Math.min(...c), hi = Math.max(...c), slo = Math.min(...s), shi = Math.max(...s);
  const corr = $("stats-corr");
  Object.assign(corr.dataset, { lo, hi, pairs: d.pairs });
  corr.textContent = `Over all ${(d.pairs / 1e6).toFixed(1)} million pairs of a token and a token it can read in the ` +
    `${d.stories.test_stories} test stories, the dot product does not follow the cosine of the two rows in any head ` +
    `(correlations between ${fmt(lo, 2)} and ${fmt(hi, 2)}; the chapter's network: \u22120.12 and 0.09).`;
  const cl = $("stats-closest");
  Object.assign(cl.dataset, { lo: slo, hi: shi });
  cl.textContent = `In ${pct(slo)} to ${pct(shi)} of the positions of the test stories, depending on the head, the key ` +
    `closest in direction to the query is not the one with the largest dot product (the chapter's: 48% to 65%).`;
  const head = el("tr", {}, ...["head", "correlation of q\u00b7k with the rows' cosine", "closest in direction is not the largest q\u00b7k"].map((x) => el("th", { text: x })));
  const rows = d.heads.map((h) => el("tr", { "data-testid": "stats-row", "data-head": h.head, "data-correlation": h.correlation, "data-closest": h.closest_not_largest },
    el("td", { text: state.layers > 1 ? headName(h.head) : String(h.head) }), el("td", { text: fmt(h.correlation, 3) }), el("td", { text: pct(h.closest_not_largest) })));
  $("stats-table").replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
}
