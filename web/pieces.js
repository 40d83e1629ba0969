// Secret 4: invented names made of pieces (/api/pieces), on one layer and on two.
import { findModel, state } from "./state.js";
import { $, api, el, fmt, fromModel, keep, known, pct, prob, showError, tableOf } from "./util.js";

// ---------- Secret 4: names made of pieces (/api/pieces) ----------

// The model to show beside the one picked: one of the other kind (one layer of heads, or
// several), the one-layer twin of the two-layer model (trained the same way) when listed.
export function piecesPartner() {
  const attention = state.models.filter((m) => m.arch === "attention" && !m.path.includes("snapshots/") && m.path !== state.model);
  if (state.layers > 1) return attention.find((m) => m.layers === 1 && /wd-ema/.test(m.name)) || attention.find((m) => m.layers === 1);
  return attention.find((m) => m.layers > 1);
}

export async function runPieces() {
  const names = $("pieces-name").value.trim().toLowerCase();
  const partner = piecesPartner();
  const models = [state.model].concat(partner ? [partner.path] : []);
  $("pieces-go").disabled = true;
  $("pieces-status").textContent = "renaming the heroes of the test stories and measuring...";
  try {
    const got = await Promise.all(models.map((model) => {
      const body = { model, names };
      const had = known("/api/pieces", body);
      return had ? had : api("/api/pieces", body).then((d) => { keep("/api/pieces", body, d); return d; });
    }));
    if (models[0] !== state.model) return;
    $("pieces-out").replaceChildren(...got.map((d, i) => piecesView(d, models[i])));
    fromModel("pieces-card", models[0], models[1] ? `beside it ${models[1].split("/").pop()}` : "");
    $("pieces-status").textContent = "";
    showError("pieces", null);
  } catch (e) {
    $("pieces-out").replaceChildren();
    $("pieces-status").textContent = "";
    showError("pieces", e);
  } finally { $("pieces-go").disabled = false; }
}

export function piecesView(d, model) {
  const m = findModel(model);
  const layers = m && m.layers > 1 ? `${m.layers} layers` : "one layer";
  const out = [el("h3", { text: `${model.split("/").pop()} (${layers})` })];
  for (const r of d.names) {
    out.push(el("p", { "data-testid": "pieces-says", "data-name": r.name, "data-first-probability": r.first_probability, "data-next-probability": r.next_probability }, `"${r.name}" (${r.pieces}, ${r.mentions} later mentions in ${r.stories} stories): the first piece gets ${prob(r.first_probability)} (top guess ${pct(r.first_top1)}); after it, the next piece gets ${prob(r.next_probability)} (top guess ${pct(r.next_top1)}, median rank ${fmt(r.next_median_rank, 1)}).`));
  }
  out.push(tableOf(d.names, "pieces-names"));
  if (d.heads) {
    out.push(el("h3", { text: "The two lookups, head by head" }),
      el("p", { class: "muted", text: `At the token to copy: its weight on the token before (a previous-token head). At the later first piece: its weight on the token to copy (an induction head, layer 2 and up). A head reading evenly gives ${fmt(d.even_weight, 4)}.` }),
      headsTable(d));
    if (d.induction_head) out.push(el("p", { "data-testid": "pieces-induction", text: `Head ${d.induction_head} reads the token to copy most: weight ${fmt(d.induction_weight, 4)}.` }));
  }
  return el("div", { "data-testid": "pieces-model", "data-model": model }, ...out);
}

// Secret 4's head-by-head table, tall enough for the 16 heads of two layers, the head
// the sentence below names marked (and in sight when there are more heads than fit).
export function headsTable(d) {
  const box = tableOf(d.heads, "pieces-heads");
  box.classList.add("tall");
  const named = [...box.querySelectorAll("tbody tr")].find((tr) => tr.firstChild.textContent === String(d.induction_head));
  if (named) {
    named.classList.add("picked");
    requestAnimationFrame(() => { box.scrollTop += Math.max(0, named.getBoundingClientRect().bottom - box.getBoundingClientRect().bottom); });
  }
  return box;
}
