// Features: a sparse autoencoder's latents (/api/sae/features: storylm sae features --json) for a
// model with an SAE beside it (MODEL.sae/). Each latent's density, its strongest contexts with
// every token shaded by the latent's value there (the firing token outlined), the value of a
// token on hover or focus (arrow keys move along a context), and the tokens it promotes and suppresses.
import { findModel, state } from "./state.js";
import { $, api, el, fmt, fromModel, keep, known, pct, showError } from "./util.js";

// The panel for the model picked: a button when it has an SAE, else what to do to get one.
export function describeFeatures() {
  const m = findModel(state.model), has = !!(m && m.sae);
  $("features-out").replaceChildren();
  $("features-hover").textContent = "";
  $("features-go").disabled = !has;
  $("features-status").textContent = has ? "" :
    "This model has no SAE beside it (train one with storylm sae train STORIES -m MODEL.safetensors --hook hook_hidden -o MODEL.sae).";
  showError("features", null);
}

export async function runFeatures() {
  const model = state.model, epoch = state.epoch, body = { model };
  $("features-go").disabled = true;
  $("features-status").textContent = "reading the held-out stories through the model and its SAE...";
  try {
    const d = known("/api/sae/features", body) || await api("/api/sae/features", body);
    keep("/api/sae/features", body, d);
    if (epoch !== state.epoch) return;
    $("features-out").replaceChildren(featuresView(d));
    fromModel("features-card", model, `its SAE on ${d.hook_name}`);
    $("features-status").textContent = "";
    showError("features", null);
  } catch (e) {
    if (epoch !== state.epoch) return;
    $("features-out").replaceChildren();
    $("features-status").textContent = "";
    showError("features", e);
  } finally { if (epoch === state.epoch) $("features-go").disabled = false; }
}

function featuresView(d) {
  const out = el("div", { "data-testid": "features-view" },
    el("p", { "data-testid": "features-summary", "data-dead": d.dead, "data-tokens": d.tokens, text:
      `${d.d_sae} latents on ${d.hook_name}, over ${d.tokens} tokens of the held-out stories; ${d.dead} never fire. ` +
      `The ${d.features.length} densest:` }));
  const list = el("ol", { class: "features" });
  for (const f of d.features) list.append(featureItem(f));
  out.append(list);
  return out;
}

function featureItem(f) {
  const max = f.max > 0 ? f.max : 1;
  const contexts = f.contexts.map((c) => contextLine(f, c, max));
  const tokens = (list, sign) => list.map((t) => `${t.token} (${sign}${fmt(Math.abs(t.log_prob_change), 2)})`).join(", ");
  return el("li", { "data-testid": "feature", "data-latent": f.latent, "data-density": f.density, "data-max": f.max },
    el("h3", { text: `latent ${f.latent}` }),
    el("p", { class: "muted", text: `fires on ${pct(f.density)} of the tokens; largest value ${fmt(f.max, 3)}, mean ${fmt(f.mean, 3)}` }),
    ...contexts,
    el("p", { "data-testid": "feature-promotes", text: `promotes: ${tokens(f.promotes, "+")}` }),
    el("p", { "data-testid": "feature-suppresses", text: `suppresses: ${tokens(f.suppresses, "\u2212")}` }));
}

// One context: its tokens, each shaded by the latent's value; the firing one outlined. One tab
// stop a context (its first token); the arrow keys move along it.
function contextLine(f, c, max) {
  const spans = c.tokens.map((t, i) => {
    const pos = t.position, v = t.value, firing = pos === c.position;
    const piece = t.token.startsWith("##") ? t.token.slice(2) : t.token;
    const light = 100 - 45 * Math.max(0, Math.min(1, v / max));
    return el("span", {
      class: "ftok" + (firing ? " fire" : ""),
      tabindex: i === 0 ? "0" : "-1", role: "button",
      "aria-label": `${piece}: ${fmt(v, 3)}`, title: `latent ${f.latent} at "${piece}": ${fmt(v, 3)}`,
      "data-testid": "features-token", "data-value": v, "data-position": pos, "data-latent": f.latent,
      style: `background: hsl(30 100% ${light.toFixed(1)}%)`, text: piece,
    });
  });
  // a space before each word; a piece that continues one ("##") is glued on
  const line = spans.flatMap((s, i) => (i > 0 && !c.tokens[i].token.startsWith("##") ? [" ", s] : [s]));
  return el("p", { class: "fctx", "data-testid": "features-context", "data-story": c.story, "data-position": c.position,
    "data-value": c.value, "aria-label": `story ${c.story}, ${fmt(c.value, 3)} at position ${c.position}` }, ...line);
}

function showToken(t) {
  if (!t) return;
  $("features-hover").textContent = `latent ${t.dataset.latent} at "${t.textContent}" (position ${t.dataset.position}): ${fmt(Number(t.dataset.value), 3)}`;
}

// Hover and focus say a token's value; the arrow keys, Home and End move along its context.
export function wireFeatures() {
  const out = $("features-out");
  out.addEventListener("mouseover", (ev) => showToken(ev.target.closest(".ftok")));
  out.addEventListener("focusin", (ev) => showToken(ev.target.closest(".ftok")));
  out.addEventListener("keydown", (ev) => {
    const t = ev.target.closest(".ftok");
    if (!t) return;
    const all = [...t.parentNode.children], i = all.indexOf(t);
    const j = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: all.length - 1 }[ev.key];
    if (j === undefined || j < 0 || j >= all.length) return;
    ev.preventDefault();
    t.tabIndex = -1;
    all[j].tabIndex = 0;
    all[j].focus();
  });
}
