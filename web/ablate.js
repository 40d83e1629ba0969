// Secret 3: each head switched off on the test stories (/api/ablate), ranked.
import { state } from "./state.js";
import { $, api, el, fmt, fromModel, headName, keep, known, pct, prob, showError } from "./util.js";

// ---------- Secret 3: each head switched off on the test stories (/api/ablate) ----------

export function fillAblateHeads() {
  const sel = $("ablate-head");
  const n = state.layers * state.heads;
  sel.replaceChildren(...[...Array(n).keys()].map((g) => el("option", { value: g, text: `head ${headName(g)}` })));
  if (n) sel.value = state.head >= 0 ? state.head : 0;
  $("ablate-out").replaceChildren();
  $("ablate-summary").textContent = "";
  $("ablate-status").textContent = "";
  showError("ablate", null);
}

// ablate --json for the model: every single head off in turn (kept: the same answer every
// time), then drawn ranked with the head picked in the panel (or the bar) marked.
export async function runAblate() {
  const body = { model: state.model, mode: $("ablate-how").value }, epoch = state.epoch;
  const picked = headName(Number($("ablate-head").value));
  $("ablate-go").disabled = true;
  $("ablate-status").textContent = "measuring on the test stories...";
  try {
    // the head picked first (two passes over the test stories: seconds on any model), then the
    // ranking of every head (one pass a head: 17 on a model of two layers)
    let data = known("/api/ablate", body);
    if (!data && state.layers * state.heads > 8) {
      const one = known("/api/ablate", { ...body, heads: picked }) || await api("/api/ablate", { ...body, heads: picked });
      keep("/api/ablate", { ...body, heads: picked }, one);
      if (epoch !== state.epoch) return;
      state.ablate = { body, data: one };
      drawAblate();
      $("ablate-status").textContent = `head ${picked} measured; ranking all ${state.layers * state.heads} heads...`;
    }
    data = data || await api("/api/ablate", body);
    keep("/api/ablate", body, data);
    if (epoch !== state.epoch) return;
    state.ablate = { body, data };
    fromModel("ablate-card", state.model);
    $("ablate-status").textContent = `${data.positions.toLocaleString("en")} next tokens and ${data.name_positions} name positions of ${data.stories ? data.stories.test_stories : "the"} test stories`;
    drawAblate();
    showError("ablate", null);
  } catch (e) {
    if (epoch !== state.epoch) return;
    state.ablate = null;
    $("ablate-out").replaceChildren(); $("ablate-summary").textContent = ""; $("ablate-status").textContent = "";
    showError("ablate", e);
  } finally { $("ablate-go").disabled = false; }
}

export function drawAblate() {
  const a = state.ablate;
  if (!a || a.body.model !== state.model) return;
  const [base, ...singles] = a.data.ablations;
  const picked = headName(Number($("ablate-head").value));
  const ranked = singles.slice().sort((x, y) => y.d_loss - x.d_loss);
  const signed = (x, f) => (x >= 0 ? "+" : "") + f(x);
  const points = (x) => (100 * x).toFixed(2);
  const cols = ["rank", "head off", "loss", "loss change", "top guess right", "change (points)", "p(name)", "change", "name top guess", "change (points)"];
  const rows = ranked.map((r, i) => el("tr", {
    class: r.heads === picked ? "picked" : null, "data-testid": "ablate-row", "data-heads": r.heads, "data-d-loss": r.d_loss,
    "data-d-accuracy": r.d_accuracy, "data-d-name-probability": r.d_name_probability,
  }, ...[i + 1, r.heads, fmt(r.loss, 4), signed(r.d_loss, (x) => x.toFixed(4)), pct(r.accuracy), signed(r.d_accuracy, points),
    prob(r.name_probability), signed(r.d_name_probability, (x) => x.toFixed(4)), pct(r.name_accuracy), signed(r.d_name_accuracy, points)]
    .map((v, k) => el("td", { class: k === 1 ? "text" : null, text: String(v) }))));
  const head = el("tr", {}, ...cols.map((c, k) => el("th", { class: k === 1 ? "text" : null, text: c })));
  const first = el("tr", { class: "base" }, ...["", "none", fmt(base.loss, 4), "", pct(base.accuracy), "", prob(base.name_probability), "", pct(base.name_accuracy), ""]
    .map((v, k) => el("td", { class: k === 1 ? "text" : null, text: v })));
  $("ablate-out").replaceChildren(el("div", { class: "scroll" }, el("table", {}, el("thead", {}, head), el("tbody", {}, first, ...rows))));
  const r = ranked.find((x) => x.heads === picked);
  const rank = ranked.indexOf(r) + 1;
  $("ablate-summary").textContent = !r ? "" : `Without head ${picked} the loss on the test stories goes from ${fmt(base.loss, 4)} to ${fmt(r.loss, 4)} nats a token (${signed(r.d_loss, (x) => x.toFixed(4))}, rank ${rank} of ${ranked.length}); its top guess is right ${pct(r.accuracy)} of the time instead of ${pct(base.accuracy)}; where the hero's name comes back it gives the name ${prob(r.name_probability)} instead of ${prob(base.name_probability)}.`;
}
