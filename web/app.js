// The storylm playground: the chapter, section by section, over the JSON API of `storylm serve`.
// Every number of the model comes from the server (the same numbers as the CLI's --json); the
// page only draws them, but for the toy's made-up numbers, which it computes as they move. A
// click asks for what its views need in one request (/api/batch), answers are kept for the
// clicks after, and a late answer to an older click, or for another model, is dropped.
// The page's modules, one a view (state.js and util.js shared); this one reads the test
// stories and wires the page. A view imports no other view: what one view calls of another
// goes through state.js's calls, filled here.
import { drawAblate, fillAblateHeads, runAblate } from "./ablate.js";
import { drawAlgorithm, loadAlgorithm } from "./algorithm.js";
import { refreshDiff } from "./diff.js";
import { describeFeatures, runFeatures, wireFeatures } from "./features.js";
import { drawDistances, lineChart, refreshDistances } from "./distances.js";
import { refreshFilm, wireFilm } from "./film.js";
import { loadGenerateDefaults, runGenerate } from "./generate.js";
import { drawHeadsBar } from "./heads_bar.js";
import { drawJobs, fillCompare, runJobs } from "./jobs.js";
import { describeModel, loadModels } from "./models.js";
import { readPermalink, savePermalink } from "./permalink.js";
import { runPieces } from "./pieces.js";
import { fillProblemStories, refreshProblem } from "./problem.js";
import { refreshQuestion } from "./question.js";
import { calls, findModel, state } from "./state.js";
import { refreshStats } from "./stats.js";
import { askAhead, drawAttention, fetchPosition, positionViews, gridScrolled, prefetch, refreshStory, tokenKeys, tokenTitle, viewHead } from "./story.js";
import { runSwap } from "./swap.js";
import { drawTrace, inputTitle } from "./trace.js";
import {
  baseChanged, drawTrainHeads, fillBases, forgetTraining, headPanels, pollTraining, resumeTraining, startTraining, stopTraining, uploadStories,
} from "./train.js";
import { drawSizes, drawTransformer, wireTransformer } from "./transformer.js";
import { wireToy } from "./toy.js";
import { $, api, el, fromModel, known, showError } from "./util.js";

Object.assign(calls, {
  describeModel, drawAblate, drawDistances, drawHeadsBar, drawTrace, fillAblateHeads, fillBases, fillCompare, headPanels,
  lineChart, loadModels, refreshDistances, refreshStory, savePermalink, viewHead,
});

// ---------- the test stories ----------

// The test stories of the model picked: its teaching stories, which the server finds from
// its training record (the 100 the shipped models held out, the project's stories for a
// model trained on them); the same ones the problem, the film, Secrets 1, 3 and 4 and the mean
// ablation read. Then the views that read a test story.
async function loadStories() {
  const model = state.model, epoch = state.epoch;
  try {
    const data = await api("/api/stories", { model });
    if (epoch !== state.epoch) return null;
    state.tests = data.stories || [];
    const pick = $("story-pick");
    pick.replaceChildren(pick.options[0], ...state.tests.map((s) => el("option", {
      value: s.text, text: `${s.index}: ${s.text.split(/\s+/).slice(0, 6).join(" ")}...`,
    })));
    $("story-file").textContent = data.file ? `(${state.tests.length} from ${data.file.split("/").pop()})` : "";
    fillProblemStories();
    await refreshProblem();
    await refreshFilm();
    return state.tests;
  } catch (e) { if (epoch === state.epoch) showError("story", e); return null; }
}

// Everything that reads the model, asked again for the one picked; the numbers of the one
// before are cleared first, and its late answers dropped (state.epoch).
function modelChanged() {
  state.epoch++;
  state.pos = -1;   // another vocabulary may cut the story into other tokens
  describeModel();
  describeFeatures();
  fillCompare();
  for (const id of ["jobs-chart", "jobs-reads", "pieces-out", "swap-out", "ablate-out", "question-out"]) $(id).replaceChildren();
  for (const id of ["jobs-status", "ablate-summary", "ablate-status", "pieces-status"]) $(id).textContent = "";
  for (const w of ["jobs", "pieces", "swap", "ablate", "gen", "question"]) showError(w, null);
  for (const p of document.querySelectorAll("p.from")) { p.textContent = ""; p.dataset.model = ""; }
  if (!state.gen) { $("gen-out").replaceChildren(); $("gen-status").textContent = ""; delete $("gen-out").dataset.state; }
  state.ablate = null;
  refreshDistances();
  refreshStory();
  refreshDiff();
  refreshStats();
  refreshQuestion();
  drawTransformer();
  drawSizes();
  savePermalink();
  return loadStories();
}

// ---------- wiring ----------

function debounce(fn, ms) {
  let t = 0;
  return () => { clearTimeout(t); t = setTimeout(fn, ms); };
}

// Charts are drawn at their box's width (their text at its own size): again when it changes.
function redrawCharts() {
  drawDistances();
  drawJobs();
  drawTrainHeads();
  drawTransformer();
  if (state.trace) drawTrace(state.trace);
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
  $("model").addEventListener("change", (ev) => { state.model = ev.target.value; modelChanged(); });
  $("problem-pick").addEventListener("change", async () => { await refreshProblem(); await refreshFilm(); });
  $("question-name").addEventListener("input", debounce(refreshQuestion, 300));
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
  $("features-go").addEventListener("click", runFeatures);
  $("pieces-name").addEventListener("keydown", (ev) => { if (ev.key === "Enter") runPieces(); });
  $("ablate-mode").addEventListener("change", (ev) => { state.mode = ev.target.value; if (state.off.size) refreshStory(); });
  $("sort-weight").addEventListener("change", drawAttention);
  $("dist-range").addEventListener("change", drawDistances);
  $("swap-go").addEventListener("click", runSwap);
  $("jobs-go").addEventListener("click", runJobs);
  $("gen-go").addEventListener("click", runGenerate);
  $("gen-stop").addEventListener("click", () => state.gen && state.gen.abort());
  $("train-go").addEventListener("click", startTraining);
  $("train-from").addEventListener("change", baseChanged);
  $("train-stop").addEventListener("click", stopTraining);
  $("train-resume").addEventListener("click", resumeTraining);
  $("train-forget").addEventListener("click", forgetTraining);
  $("train-file").addEventListener("change", (ev) => uploadStories(ev.target.files[0]));
  $("train-card").addEventListener("dragover", (ev) => ev.preventDefault());
  $("train-card").addEventListener("drop", (ev) => { ev.preventDefault(); uploadStories(ev.dataTransfer.files[0]); });
  $("train-snap").addEventListener("input", drawTrainHeads);
  $("train-use").addEventListener("click", useNewModel);
  $("algo-lang").addEventListener("change", drawAlgorithm);
  $("bar-fold").addEventListener("click", () => {
    const folded = $("heads-bar").classList.toggle("folded");
    $("bar-fold").setAttribute("aria-expanded", folded ? "false" : "true");
    $("bar-fold").textContent = folded ? "unfold" : "fold";
  });
  window.addEventListener("resize", debounce(redrawCharts, 200));
  wireToy();
  wireFilm();
  wireTransformer();
  wireFeatures();
}

// "Use the new model": every view reads it, and the story is one of its own test stories
// (from the stories it was trained on), or the page says that the story is outside its
// vocabulary (a story of other words is cut into [UNK]s there).
async function useNewModel(ev) {
  const m = findModel(ev.target.dataset.model);
  if (!m) { showError("train", new Error(`the new model ${ev.target.dataset.model} is not in the model list yet`)); return; }
  $("model").value = m.path;
  state.model = m.path;
  const tests = await modelChanged();
  if (state.model !== m.path) return;
  if (tests && tests.length) {
    $("story").value = tests[0].text;
    state.pos = -1;
    refreshStory();
    $("train-state").dataset.story = "test";
    $("train-state").append(el("span", { text: ` The story above is now the new model's test story ${tests[0].index}, from the stories it was trained on.` }));
  } else {
    $("train-state").append(el("span", { text: " Its test stories could not be read: the story above may be outside its vocabulary." }));
  }
}

async function start() {
  wire();
  drawHeadsBar();
  loadAlgorithm();
  try {
    await Promise.all([loadModels(), loadGenerateDefaults()]);
  } catch (e) { showError("top", e); return; }
  readPermalink();
  document.body.dataset.ready = "1";
  modelChanged();
  pollTraining();
}

// What the browser test reads of the page's state (module scope is not the window's).
window.playground = { state, positionViews, known, fromModel };

document.addEventListener("DOMContentLoaded", start);
