// Train your own: upload, start, stop, the loss curve and the heads' weight by distance at each save.
// On the static site the run is in the tab: web/train_worker.js (storylm train in WebAssembly)
// answers the same requests as the server, in a Web Worker of its own.
import { downloadHref, giveFiles, STATIC } from "./site.js";
import { calls, DIST_BINS, findModel, headColor, state } from "./state.js";
import { $, api, el, headName, pct, showError, svg } from "./util.js";

// ---------- train your own ----------

// The training worker of the static site and its requests waiting for an answer (id -> resolve).
let trainer = null, asked = 0;
const waiting = new Map();

// The training worker's answer to req ({method, url, body: a JSON text, bytes: an ArrayBuffer}):
// {status, body (a JSON text) or bytes}.
function askTrainer(req) {
  if (!trainer) {
    trainer = new Worker("train_worker.js");
    trainer.onmessage = (ev) => { const done = waiting.get(ev.data.id); waiting.delete(ev.data.id); if (done) done(ev.data); };
    trainer.onerror = (ev) => {
      const body = JSON.stringify({ error: `the page's training worker failed: ${ev.message || "it did not start"}` });
      for (const done of waiting.values()) done({ status: 500, body });
      waiting.clear();
    };
  }
  const id = ++asked;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    trainer.postMessage({ id, ...req }, req.bytes ? [req.bytes] : []);
  });
}

// A training request: the server's (util.js's api), or on the static site the training worker's,
// whose {"error", "hint"} becomes the thrown message as api's does.
async function trainApi(path, body, bytes) {
  if (!STATIC) return api(path, body);
  const a = await askTrainer({ method: body === undefined && !bytes ? "GET" : "POST", url: path, body: body === undefined ? null : JSON.stringify(body), bytes });
  if (a.bytes) return a.bytes;
  const data = JSON.parse(a.body);
  if (a.status >= 400) throw new Error(data.error + (data.hint ? ` (${data.hint})` : ""));
  return data;
}

export async function startTraining() {
  const body = {
    stories: $("train-stories").value.trim(),
    seed: Number($("train-seed").value), eval_every: Number($("train-every").value), lr: Number($("train-lr").value),
  };
  // Left empty, the steps fit the corpus as storylm train fits them.
  if ($("train-steps").value.trim()) body.steps = Number($("train-steps").value);
  if ($("train-from").value) body.from = $("train-from").value;
  try {
    await trainApi("/api/train", body);
    showError("train", null);
    $("train-use").hidden = true;
    pollTraining();
  } catch (e) { showError("train", e); }
}

// The models a run may start from (train --from): the shipped ones among the listed models,
// by their short names (tinystories-transformer.safetensors: transformer), the default first.
export function fillBases() {
  const pick = $("train-from"), keep = pick.value;
  const names = new Set(["tinystories"]);
  for (const m of state.models) {
    const found = /^tinystories(?:-([a-z0-9-]+))?\.safetensors$/.exec(m.name);
    if (found) names.add(found[1] || "tinystories");
  }
  pick.replaceChildren(el("option", { value: "", text: "a new model" }),
    ...[...names].map((n) => el("option", { value: n, text: n })));
  pick.value = names.has(keep) ? keep : "";
}

// A fine-tuning run keeps to train's rate (3e-3): the page's 0.03 is for a new model.
export function baseChanged() {
  const lr = $("train-lr");
  if ($("train-from").value && Number(lr.value) === 0.03) lr.value = "0.003";
  if (!$("train-from").value && Number(lr.value) === 0.003) lr.value = "0.03";
}

// A stories file of the learner's own, sent to the server (POST /api/upload, the file's bytes
// as body), which checks it as storylm stories reads it and keeps it in its training folder;
// the training then reads it from there.
export async function uploadStories(file) {
  if (!file) return;
  const st = $("upload-state");
  st.textContent = `${STATIC ? "reading" : "sending"} ${file.name} (${(file.size / 1e6).toFixed(1)} MB)...`;
  try {
    const data = STATIC ? await trainApi("/api/upload?name=" + encodeURIComponent(file.name), undefined, await file.arrayBuffer()) :
      await sendUpload(file);
    $("train-stories").value = data.stories;
    // the tab's worker keeps the file as it is; its run checks it as storylm train does
    st.textContent = STATIC ? `${file.name}: ${data.bytes.toLocaleString("en")} bytes in this tab; ready to train` :
      `${file.name}: ${data.stories_count.toLocaleString("en")} stories, ${data.tokens.toLocaleString("en")} tokens; ready to train`;
    st.dataset.stories = data.stories;
    showError("train", null);
  } catch (e) { st.textContent = ""; showError("train", e); }
}

// The file to the server (POST /api/upload, its bytes as body), which checks it as storylm stories reads it.
async function sendUpload(file) {
  const res = await fetch("/api/upload?name=" + encodeURIComponent(file.name), { method: "POST", body: file });
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new Error((data && data.error ? data.error + (data.hint ? ` (${data.hint})` : "") : `the server answered ${res.status}`));
  return data;
}

export async function stopTraining() {
  try { await trainApi("/api/train/stop", {}); pollTraining(); } catch (e) { showError("train", e); }
}

// The tab's run, stopped, goes on where it stopped (the static site only: its run waits in memory).
export async function resumeTraining() {
  try { await trainApi("/api/train/resume", {}); showError("train", null); pollTraining(); } catch (e) { showError("train", e); }
}

// The tab's run and its files gone from the tab and the browser's storage (the static site only;
// the model stays in the picker until the page is reloaded).
export async function forgetTraining() {
  try {
    await trainApi("/api/train/forget", {});
    showError("train", null);
    $("train-download").hidden = true;
    $("train-use").hidden = true;
    pollTraining();
  } catch (e) { showError("train", e); }
}

// The stories the static site trains on by default: the test stories it ships (site.json's).
async function siteStories() {
  const box = $("train-stories");
  if (box.dataset.site) return;
  box.dataset.site = "1";
  try {
    const stories = (await (await fetch("site.json")).json()).stories;
    if (!box.dataset.kept) box.value = stories; /* a run kept over a reload shows its own */
  } catch (e) { showError("train", e); }
}

// The model the tab's run saved, as a file to download (named as storylm train names it), and
// in every view.
async function tabModel(t) {
  const bytes = await trainApi("/api/train/model");
  const a = $("train-download");
  if (a.href.startsWith("blob:")) URL.revokeObjectURL(a.href);
  a.href = URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" }));
  a.download = t.model;
  a.hidden = false;
  await toViews(t, bytes);
}

// The tab's model handed to the views' worker (its bytes moved, no network) as
// trained/tab-runN-stepS.safetensors (the run and the step of the model kept), with the run's
// stories beside it, where the views find its test stories as storylm serve finds a trained
// model's; then listed in the model picker, and "Use it" offered as storylm serve offers it.
async function toViews(t, bytes) {
  const kept = t.kept || { run: t.id, step: 0 }; // none yet: a fine-tuning's start, saved before its first step
  const path = `trained/tab-run${kept.run}-step${kept.step}.safetensors`;
  if (state.trainSeen !== path) {
    // without its stories (an upload of a run before a reload) the views read the site's test stories
    const stories = await trainApi("/api/train/stories").catch(() => null);
    await giveFiles({ [path]: bytes, ...(stories ? { ["trained/" + t.stories.split("/").pop()]: stories } : {}) });
    state.trainSeen = path;
    await calls.loadModels();
  }
  $("train-use").hidden = false;
  $("train-use").dataset.model = path;
}

// Whether this browser's storage holds a run of the tab's training (web/train_worker.js keeps
// it there): the training worker then starts with the page, to show it.
async function keptRun() {
  if (typeof indexedDB === "undefined") return false;
  const settled = (req) => new Promise((resolve, reject) => { req.onsuccess = () => resolve(req.result); req.onerror = () => reject(req.error); });
  try {
    // where the browser lists its databases, none is made here for a page that never trained
    if (indexedDB.databases && !(await indexedDB.databases()).some((d) => d.name === "storylm-train")) return false;
    const req = indexedDB.open("storylm-train", 1);
    req.onupgradeneeded = () => req.result.createObjectStore("run");
    const db = await settled(req);
    const n = await settled(db.transaction("run").objectStore("run").count("job"));
    db.close();
    return n > 0;
  } catch (e) { return false; } /* no storage (a private window): no run was kept */
}

// Polled every second while a run is going; once at page load to find one.
export async function pollTraining() {
  clearTimeout(state.trainTimer);
  if (STATIC) siteStories();
  // the training worker starts with the first upload or run, not with the page (whose views load first)
  const kept = STATIC && !trainer && (await keptRun());
  if (STATIC && !trainer && !kept) { drawTraining({ state: "idle", points: [] }); return; }
  let t;
  try { t = await trainApi("/api/train"); } catch (e) { showError("train", e); return; }
  if (kept && t.stories) { /* the run kept in the browser's storage: its stories file is in the tab again */
    $("train-stories").dataset.kept = "1";
    $("train-stories").value = t.stories;
  }
  drawTraining(t);
  if (t.state === "running") state.trainTimer = setTimeout(pollTraining, STATIC ? 500 : 1000);
  else if (STATIC && t.model && ["done", "stopped", "failed"].includes(t.state)) {
    await tabModel(t).catch((e) => showError("train", e));
  } else if (t.model && t.model !== state.trainSeen && (t.state === "done" || t.state === "stopped")) {
    state.trainSeen = t.model;
    await calls.loadModels().catch((e) => showError("top", e));
    $("train-use").hidden = false;
    $("train-use").dataset.model = t.model;
    const m = findModel(t.model);
    $("train-download").hidden = !m;
    if (m) $("train-download").href = downloadHref(m.path);
  }
}

export function drawTraining(t) {
  const running = t.state === "running";
  $("train-go").disabled = running;
  $("train-stop").disabled = !running;
  $("train-resume").hidden = !t.resumable;
  $("train-forget").hidden = !STATIC || running || t.state === "idle";
  if (STATIC && running) $("train-download").hidden = true; /* the tab's file changes as the run goes */
  const st = $("train-state");
  st.dataset.state = t.state;
  st.dataset.points = (t.points || []).length;
  // The server's message already says the step while it runs.
  st.textContent = running && t.message ? `running: ${t.message}` :
    `${t.state}` + (t.steps ? `: step ${t.step} of ${t.steps}` : "") +
    (t.model && !running ? `, saved as ${t.model}` : "") + (t.message ? ` (${t.message})` : "") +
    (t.storage ? `; ${t.storage}` : "");
  const pts = t.points || [];
  if (!pts.length) {
    $("train-curve").replaceChildren(el("p", { class: "muted", text: running ? "waiting for the first evaluation..." : "no training yet" }));
    state.trainHeads = t.heads || [];
    drawTrainHeads();
    return;
  }
  const series = [pts.map((p) => [p.step, p.train_loss]), pts.map((p) => [p.step, p.test_loss])];
  const chart = calls.lineChart(series, {
    xLabel: "step", yLabel: "loss", colors: ["#2563eb", "#c2410c"], names: ["training", "test stories"],
    xMax: Math.max(1, t.steps || 1), xMin: 0, W: Math.max(300, Math.min(560, $("train-curve").clientWidth || 560)), H: 320,
  });
  chart.setAttribute("data-points", pts.length);
  $("train-curve").replaceChildren(chart);
  state.trainHeads = t.heads || [];
  const snap = $("train-snap");
  const last = Math.max(0, state.trainHeads.length - 1);
  const follow = Number(snap.value) >= Number(snap.max);
  snap.max = String(last);
  if (follow) snap.value = String(last);
  drawTrainHeads();
}

// The training's heads at the step picked, in front of its first step's (outlined).
export function drawTrainHeads() {
  const list = state.trainHeads || [];
  const box = $("train-heads");
  if (!list.length) { box.replaceChildren(); $("train-snap-step").textContent = ""; return; }
  const i = Math.min(Number($("train-snap").value), list.length - 1);
  const cur = list[i], first = list[0];
  $("train-snap-step").textContent = `${cur.step} (dashed outline: step ${first.step})`;
  const chart = headPanels(cur.mass, first.mass);
  chart.setAttribute("data-step", cur.step);
  box.replaceChildren(chart);
}

// Small multiples: one panel a head, a bar a distance bin (the share of the head's
// weight), and the same shares of another moment as dashed outlines when given.
// now, before: [8][6] shares.
export function headPanels(now, before) {
  // Full height is the largest share drawn, so a head that spreads its weight
  // evenly still shows its shape.
  const top = Math.max(0.05, ...now.flat(), ...(before ? before.flat() : []));
  // as many panels a row as the box's width holds (at most 4), so the labels keep their size
  const per = Math.max(1, Math.min(4, Math.floor(($("train-heads").clientWidth || 874) / 216)));
  const PW = 200, PH = 110, G = 16, W = per * (PW + G) + 10, RH = PH + 48;
  const rowsOf = Math.ceil(now.length / per);
  const g = svg("svg", { viewBox: `0 0 ${W} ${rowsOf * RH + 20}`, role: "img", "aria-label": "each head's weight by distance back" });
  now.forEach((bins, h) => {
    const x0 = (h % per) * (PW + G) + 10, y0 = Math.floor(h / per) * RH + 20;
    const name = now.length > state.heads && state.heads ? headName(h) : String(h), color = headColor(h % (state.heads || 8));
    g.append(svg("text", { x: x0, y: y0 - 4, fill: color, style: "font-weight:600" }, `head ${name}`));
    const bw = PW / bins.length;
    bins.forEach((m, b) => {
      const hgt = PH * m / top;
      g.append(svg("rect", { x: x0 + b * bw + 2, y: y0 + PH - hgt, width: bw - 4, height: hgt, fill: color }, svg("title", {}, `head ${name}, distance ${DIST_BINS[b]}: ${pct(m)}`)),
        svg("text", { x: x0 + b * bw + bw / 2, y: y0 + PH + 16, "text-anchor": "middle", style: "font-size:13px" }, DIST_BINS[b]));
      if (before) {
        const f = PH * before[h][b] / top;
        g.append(svg("rect", { x: x0 + b * bw + 2, y: y0 + PH - f, width: bw - 4, height: f, fill: "none", stroke: "#333", "stroke-dasharray": "3 2" }));
      }
    });
  });
  g.append(svg("text", { x: 10, y: rowsOf * RH + 14 }, `bar height: share of weight (full: ${pct(top)})`));
  return g;
}
