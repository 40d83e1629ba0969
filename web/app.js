// The storylm playground: plain JavaScript over the JSON API of `storylm serve`.
// Every number shown comes from the server (the same numbers as the CLI's --json);
// the page only draws them. A click asks for what its views need in one request
// (/api/batch), answers are kept for the clicks after, and a late answer to an
// older click is dropped.
// The page's modules, one a view (state.js and util.js shared); this one reads the
// test stories and wires the page. A view imports no other view: what one view calls
// of another goes through state.js's calls, filled here.
import { drawAblate, fillAblateHeads, runAblate } from "./ablate.js";
import { drawDistances, lineChart, refreshDistances } from "./distances.js";
import { loadGenerateDefaults, runGenerate } from "./generate.js";
import { drawHeadsBar } from "./heads_bar.js";
import { fillCompare, runJobs } from "./jobs.js";
import { describeModel, loadModels } from "./models.js";
import { readPermalink, savePermalink } from "./permalink.js";
import { runPieces } from "./pieces.js";
import { calls, findModel, state } from "./state.js";
import { askAhead, drawAttention, fetchPosition, positionViews, gridScrolled, prefetch, refreshStory, tokenKeys, tokenTitle, viewHead } from "./story.js";
import { runSwap } from "./swap.js";
import { drawTrace, inputTitle } from "./trace.js";
import { drawTrainHeads, headPanels, pollTraining, startTraining, stopTraining, uploadStories } from "./train.js";
import { $, api, el, known, showError } from "./util.js";

Object.assign(calls, {
  describeModel, drawAblate, drawDistances, drawHeadsBar, drawTrace, fillAblateHeads, fillCompare, headPanels,
  lineChart, loadModels, refreshDistances, refreshStory, savePermalink, viewHead,
});

// ---------- the test stories ----------

// The test stories of the model picked: its teaching stories, which the server finds from
// its training record (the 100 the shipped models held out, the project's stories for a
// model trained on them); the same ones Secret 1, 3 and 4 and the mean ablation read.
async function loadStories() {
  const model = state.model;
  try {
    const data = await api("/api/stories", { model });
    if (model !== state.model) return;
    const pick = $("story-pick");
    pick.replaceChildren(pick.options[0], ...(data.stories || []).map((s) => el("option", {
      value: s.text, text: `${s.index}: ${s.text.split(/\s+/).slice(0, 6).join(" ")}...`,
    })));
    $("story-file").textContent = data.file ? `(${(data.stories || []).length} from ${data.file.split("/").pop()})` : "";
  } catch (e) { showError("story", e); }
}

// ---------- wiring ----------

function debounce(fn, ms) {
  let t = 0;
  return () => { clearTimeout(t); t = setTimeout(fn, ms); };
}

function wire() {
  $("tokens").addEventListener("click", (ev) => {
    const b = ev.target.closest(".tok");
    clearTimeout(state.hover);
    if (b) fetchPosition(Number(b.dataset.pos), true, ev.timeStamp);
  });
  $("tokens").addEventListener("pointerdown", (ev) => {
    const b = ev.target.closest(".tok");
    if (b && ev.button === 0) { clearTimeout(state.hover); askAhead(Number(b.dataset.pos)); }
  });
  $("tokens").addEventListener("keydown", tokenKeys);
  $("tokens").addEventListener("mouseover", (ev) => {
    const b = ev.target.closest(".tok");
    if (b) { tokenTitle(b); prefetch(b); }
  });
  $("tokens").addEventListener("mouseleave", () => clearTimeout(state.hover));
  $("inputs").addEventListener("mousemove", inputTitle);
  $("attend-table").parentNode.addEventListener("scroll", gridScrolled, { passive: true });
  const storyChanged = debounce(() => { state.pos = -1; refreshStory(); savePermalink(); }, 250);
  $("story").addEventListener("input", storyChanged);
  $("story-pick").addEventListener("change", (ev) => {
    if (!ev.target.value) return;
    $("story").value = ev.target.value;
    state.pos = -1;
    refreshStory();
  });
  $("model").addEventListener("change", (ev) => {
    state.model = ev.target.value;
    state.pos = -1;   // another vocabulary may cut the story into other tokens
    describeModel();
    fillCompare();
    $("jobs-chart").replaceChildren(); $("jobs-reads").replaceChildren(); $("jobs-status").textContent = ""; showError("jobs", null);
    state.ablate = null;
    $("pieces-out").replaceChildren(); showError("pieces", null);
    refreshDistances();
    refreshStory();
    loadStories();
    savePermalink();
  });
  $("dist-layer").addEventListener("change", refreshDistances);
  $("view-layer").addEventListener("change", (ev) => {
    state.layer = Number(ev.target.value);
    if (state.head >= 0 && Math.floor(state.head / state.heads) + 1 !== state.layer) { state.head = -1; drawHeadsBar(); }
    refreshStory();
    savePermalink();
  });
  $("ablate-go").addEventListener("click", runAblate);
  $("ablate-head").addEventListener("change", (ev) => { viewHead(Number(ev.target.value)); });
  $("ablate-how").addEventListener("change", () => { if (state.ablate) runAblate(); });
  $("pieces-go").addEventListener("click", runPieces);
  $("pieces-name").addEventListener("keydown", (ev) => { if (ev.key === "Enter") runPieces(); });
  $("ablate-mode").addEventListener("change", (ev) => { state.mode = ev.target.value; if (state.off.size) refreshStory(); });
  $("sort-weight").addEventListener("change", drawAttention);
  $("dist-range").addEventListener("change", drawDistances);
  $("swap-go").addEventListener("click", runSwap);
  $("jobs-go").addEventListener("click", runJobs);
  $("gen-go").addEventListener("click", runGenerate);
  $("gen-stop").addEventListener("click", () => state.gen && state.gen.abort());
  $("train-go").addEventListener("click", startTraining);
  $("train-stop").addEventListener("click", stopTraining);
  $("train-file").addEventListener("change", (ev) => uploadStories(ev.target.files[0]));
  $("train-card").addEventListener("dragover", (ev) => ev.preventDefault());
  $("train-card").addEventListener("drop", (ev) => { ev.preventDefault(); uploadStories(ev.dataTransfer.files[0]); });
  $("train-snap").addEventListener("input", drawTrainHeads);
  $("train-use").addEventListener("click", (ev) => {
    const m = findModel(ev.target.dataset.model);
    if (!m) { showError("train", new Error(`the new model ${ev.target.dataset.model} is not in the model list yet`)); return; }
    $("model").value = m.path;
    $("model").dispatchEvent(new Event("change"));
  });
}

async function start() {
  wire();
  drawHeadsBar();
  try {
    await Promise.all([loadModels(), loadGenerateDefaults()]);
  } catch (e) { showError("top", e); return; }
  readPermalink();
  document.body.dataset.ready = "1";
  loadStories();
  refreshDistances();
  refreshStory();
  pollTraining();
}

// What the browser test reads of the page's state (module scope is not the window's).
window.playground = { state, positionViews, known };

document.addEventListener("DOMContentLoaded", start);
