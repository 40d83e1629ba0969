// Training in the tab, on the static site (scripts/build_web): `storylm train` compiled to
// WebAssembly (wasm/train_web.c in storylm_web.js, the module the views' worker loads too), in
// a Web Worker of its own so that the views' worker stays free. It takes a slice of steps at a
// time (about 0.1 s), so that the page's Stop is heard between slices, and answers the page in
// the shapes of `storylm serve`'s /api/train, /api/train/stop and /api/upload; Stop pauses the
// run in memory and /api/train/resume goes on with it (the same bits as a run never stopped).
// The model is written where `storylm train -o model.safetensors` writes it, in the worker's own
// file system, and GET /api/train/model sends its bytes for the page's download (and the views).
//
// The run's state is kept in the browser's storage (IndexedDB) at its start, at each evaluation
// that saves and at each Stop: its options, its uploaded stories, the model with its optimizer
// state and vocabulary (what `storylm train --resume` reads). After a reload the worker reads
// them back, shows the run stopped, and Resume goes on with `--resume` from the model saved
// last: the steps after it are taken again, the same bits. A run that fails part way gives the
// model of the run before back (its files held here until the new run ends).
/* global createStorylm, importScripts */
importScripts("storylm_web.js");

const DIR = "/train", OUT = "model.safetensors", SLICE_S = 0.1;
const MAX_UPLOAD = 20 * 1024 * 1024; // the server's limit of an upload (SERVER_MAX_UPLOAD)
const DB = "storylm-train", STORE = "run"; // the kept run (web/train.js looks for its "job")

// The module with /train as its working directory, where the runs read and write.
function makeModule() {
  return createStorylm({ print: () => {}, printErr: (t) => console.warn(t) }).then((mod) => {
    mod.FS.mkdirTree(DIR + "/uploads");
    mod.FS.chdir(DIR);
    // Emscripten 3.1.6's rename over a file leaves the file replaced in its table of names: its
    // bytes are never freed (a run's every save), and it comes back once the new one is deleted
    // (the next run then finds a model.safetensors it must not replace). The replaced file is
    // deleted first (the worker is the only one writing), so rename replaces nothing.
    const rename = mod.FS.rename;
    mod.FS.rename = (from, to) => {
      if (from !== to && mod.FS.analyzePath(to).exists && !mod.FS.isDir(mod.FS.stat(to).mode)) mod.FS.unlink(to);
      return rename(from, to);
    };
    return mod;
  });
}
let ready = makeModule(); // a new one after a slice threw (an abort leaves the module unusable)

let run = 0; // the C session (slm_train_web_open), 0: none
let paused = false;
// The job of no run (its id counts the runs started in this tab).
const idleJob = (id) => ({ state: "idle", id, step: 0, steps: 0, points: [], heads: [], model: "", message: "", said: [], kept: null, storage: "" });
let job = idleJob(0);
let options = null;  // the run's {stories, o (slm_train_web_open's options)}, to open it again after a reload
let reopen = false;  // the run was read back from storage: Resume opens it again with --resume
let previous = null; // the run before's model {kept, files: {name: bytes}}, until this run ends well

const exists = (mod, path) => mod.FS.analyzePath(path).exists;
// The files of a run's model in the working directory: the model, its optimizer state, the vocabulary.
const runFiles = (mod) => mod.FS.readdir(DIR).filter((f) => f.startsWith("model.") || f === "vocab.txt");

// Removes the run's files (a file, or a folder in a file's place).
function clearRun(mod) {
  for (const f of runFiles(mod)) {
    if (mod.FS.isDir(mod.FS.stat(f).mode)) mod.FS.rmdir(f);
    else mod.FS.unlink(f);
  }
}

// The uploaded stories files, as paths (uploads/NAME).
const uploadNames = (mod) => mod.FS.readdir("uploads").filter((f) => f !== "." && f !== "..").map((f) => "uploads/" + f);

// name -> bytes of the run's files (and, given, the stories), read from the file system.
function readFiles(mod, stories) {
  const files = {};
  for (const f of runFiles(mod)) if (!mod.FS.isDir(mod.FS.stat(f).mode)) files[f] = mod.FS.readFile(f);
  if (stories && stories.startsWith("uploads/") && exists(mod, stories)) files[stories] = mod.FS.readFile(stories);
  return files;
}

function writeFiles(mod, files) {
  for (const [name, bytes] of Object.entries(files)) {
    if (name.includes("/")) mod.FS.mkdirTree(DIR + "/" + name.slice(0, name.lastIndexOf("/")));
    mod.FS.writeFile(name, bytes);
  }
}

// ---------- the browser's storage ----------

// An IndexedDB request as a promise of its result.
const settled = (req) => new Promise((resolve, reject) => { req.onsuccess = () => resolve(req.result); req.onerror = () => reject(req.error); });

// {db} or, without storage (a private window, a browser that refuses it, node), {note: why}.
async function openStorage() {
  if (typeof indexedDB === "undefined") return { note: "this browser gives the page no storage" };
  try {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    return { db: await settled(req) };
  } catch (e) {
    return { note: `the browser's storage cannot be opened (${e.message || e})` };
  }
}
const storage = openStorage();

// The store holding entries ({key: value}) and the key kept as it is (the uploaded stories,
// written once a run), every other key deleted, in one transaction (all or nothing). A failure
// (the quota full) is said on the card; the run goes on in memory. 1 when kept.
async function keepAll(entries, unchanged) {
  const s = await storage;
  if (!s.db) { job.storage = `not kept: ${s.note}; a reload ends the run`; return 0; }
  try {
    const tx = s.db.transaction(STORE, "readwrite"), st = tx.objectStore(STORE);
    const stale = (await settled(st.getAllKeys())).filter((k) => !(k in entries) && k !== unchanged);
    for (const k of stale) st.delete(k);
    for (const [k, v] of Object.entries(entries)) st.put(v, k);
    await new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onerror = tx.onabort = () => reject(tx.error); });
    job.storage = "";
    return 1;
  } catch (e) {
    const why = e && e.name === "QuotaExceededError" ? "the browser's storage for this site is full" : `${e && (e.message || e.name) || e}`;
    job.storage = `not kept in the browser's storage (${why}); a reload ends the run`;
    return 0;
  }
}
let keptStories = ""; // the key of the run's uploaded stories once in storage

// The run as it is now into storage: its job, options and files (model, optimizer state,
// vocabulary, uploaded stories).
async function keepRun(mod) {
  const { said, ...rest } = job;
  const entries = { job: { job: rest, options, previous: previous && previous.kept } };
  const stories = options && options.stories, key = "file:" + stories;
  for (const [name, bytes] of Object.entries(readFiles(mod, keptStories === key ? null : stories))) entries["file:" + name] = bytes;
  if (previous) for (const [name, bytes] of Object.entries(previous.files)) entries["previous:" + name] = bytes;
  const unchanged = keptStories === key ? key : "";
  if (await keepAll(entries, unchanged)) keptStories = key in entries || unchanged ? key : "";
}

// The kept run read back after a reload: its files into the file system, its job shown
// stopped (Resume opens it again), or done.
async function restore() {
  const s = await storage;
  if (!s.db) { job.storage = `not kept: ${s.note}; a reload ends the run`; return; }
  try {
    const tx = s.db.transaction(STORE, "readonly"), st = tx.objectStore(STORE);
    const [keys, values] = await Promise.all([settled(st.getAllKeys()), settled(st.getAll())]);
    const kept = Object.fromEntries(keys.map((k, i) => [k, values[i]]));
    if (!kept.job) return;
    const mod = await ready;
    const files = {}, before = {};
    for (const k of keys) if (k.startsWith("file:")) files[k.slice(5)] = kept[k];
    keptStories = kept.job.options ? "file:" + kept.job.options.stories : "";
    for (const k of keys) if (k.startsWith("previous:")) before[k.slice(9)] = kept[k];
    writeFiles(mod, files);
    job = { ...kept.job.job, said: [] };
    options = kept.job.options;
    if (kept.job.previous) previous = { kept: kept.job.previous, files: before };
    if (job.state === "running" || job.state === "stopped") {
      reopen = true;
      const from = job.kept ? `the model saved at step ${job.kept.step}, the steps after it taken again` : "its first step";
      job.message = `${job.state === "running" ? "going" : "stopped"} when the page was left; Resume goes on from ${from}`;
      job.state = "stopped";
    }
    job.model = exists(mod, OUT) ? OUT : "";
  } catch (e) {
    job.storage = `the run kept in the browser's storage cannot be read (${e.message || e})`;
  }
}
const restored = restore();

// ---------- the run ----------

// A site's file (the default stories, a model to fine-tune) into the file system at path.
// A file that is not there throws with its status (404: an upload the tab no longer holds, a
// file the site does not have), which the page's answer keeps.
async function fromSite(mod, path) {
  if (exists(mod, path)) return;
  const missing = (message, status) => Object.assign(new Error(message), { status });
  if (path.startsWith("uploads/")) throw missing(`${path}: this tab no longer holds that upload; upload the file again`, 404);
  const res = await fetch(path);
  if (!res.ok) throw missing(`${path}: no such file on this site (the site answered ${res.status}); upload a stories file`, res.status === 404 ? 404 : 502);
  mod.FS.mkdirTree(DIR + "/" + path.slice(0, path.lastIndexOf("/") + 1));
  mod.FS.writeFile(path, new Uint8Array(await res.arrayBuffer()));
}

// A C function's answer (a malloc'd JSON text) as an object, the text freed.
function answerOf(mod, p) {
  const text = mod.UTF8ToString(p);
  mod._free(p);
  return JSON.parse(text);
}

// The run of options ({stories, o}) opened: the C session (0: it could not start) and its answer.
function openRun(mod, { stories, o }) {
  const outs = mod._malloc(4);
  const session = mod.ccall("slm_train_web_open", "number", ["string", "string", "string", "number"], [stories, OUT, JSON.stringify(o), outs]);
  const a = answerOf(mod, mod.getValue(outs, "i32"));
  mod._free(outs);
  return [session, a];
}

// One slice's answer folded into the job: its points, heads and lines appended; the model's
// step once it saved.
function fold(a) {
  job.points.push(...(a.points || []));
  job.heads.push(...(a.heads || []));
  job.said.push(...(a.said || []));
  for (const k of ["state", "step", "steps", "message", "hint", "summary"]) if (a[k] !== undefined) job[k] = a[k];
  if (a.heads && a.heads.length) job.kept = { run: job.id, step: a.heads[a.heads.length - 1].step, stories: options.stories };
}

// Slices until the run ends or is paused; the worker hears messages between them.
async function slice() {
  if (!run || paused) return;
  const mod = await ready;
  let a, threw = false;
  try {
    a = answerOf(mod, mod.ccall("slm_train_web_steps", "number", ["number", "number", "number"], [run, 1 << 30, SLICE_S]));
  } catch (e) {
    threw = true;
    a = { state: "failed", message: `${e.message || e}` };
  }
  fold(a);
  if (job.state === "running") {
    if (a.heads && a.heads.length) await keepRun(mod);
    setTimeout(slice, 0);
    return;
  }
  if (!threw) mod.ccall("slm_train_web_close", null, ["number"], [run]);
  run = 0;
  if (job.state === "failed") { await failed(mod, threw); return; }
  job.model = exists(mod, OUT) ? OUT : "";
  previous = null;
  await keepRun(mod);
}

// The words for a model kept before this run ended: the run before's, or this run's own.
const keptModel = (kept) => (kept && kept.run === job.id ? `its model saved at step ${kept.step}` : "the model of the run before");

// A run that failed part way (or could not start: message given): the card told what failed
// first, then its files removed and the run before's model put back (in a new module when the
// slice threw).
async function failed(mod, threw, message) {
  const why = (job.message || "an error") + (job.hint ? ` (${job.hint})` : "");
  const before = previous;
  previous = null;
  Object.assign(job, { state: "failed", kept: before ? before.kept : null, model: before ? OUT : "" });
  job.message = message || `the run failed after step ${job.step}: ${why}` + (before ? `; ${keptModel(before.kept)} stays` : "");
  if (threw) { // the uploads go to the new module; the dead one's file system is still readable
    const uploads = {};
    for (const f of uploadNames(mod)) uploads[f] = mod.FS.readFile(f);
    ready = makeModule();
    mod = await ready;
    writeFiles(mod, uploads);
  }
  clearRun(mod);
  if (before) writeFiles(mod, before.files);
  await keepRun(mod);
}

// The page's short name of a base model (train --from's: "tinystories", "transformer") as the
// site's file, fetched into the file system.
async function baseModel(mod, name) {
  const path = `models/${name === "tinystories" ? name : "tinystories-" + name}.safetensors`;
  await fromSite(mod, path);
  return path;
}

// POST /api/train: {stories, seed, eval_every, lr, steps, from}: a new run, from scratch (or
// fine-tuning from), the earlier run's model replaced once this one ends well.
async function start(body) {
  if (run && !paused) return [409, { error: "a training run is going on", hint: "stop it first" }];
  const mod = await ready;
  if (run) mod.ccall("slm_train_web_close", null, ["number"], [run]);
  run = 0, paused = false, reopen = false;
  const stories = String(body.stories || "");
  if (!stories) return [400, { error: "give a stories file", hint: "upload one, or use the site's test stories" }];
  await fromSite(mod, stories);
  const o = { threads: 1 };
  for (const k of ["seed", "eval_every", "lr", "steps"]) if (body[k] !== undefined && body[k] !== null) o[k] = body[k];
  if (body.from) o.from = await baseModel(mod, body.from);
  // a new run in a clean folder, as `storylm train` in a new one: its vocabulary learnt from its
  // stories. The last run's model waits here until this one ends, and comes back if it fails.
  if (exists(mod, OUT)) previous = { kept: job.kept, files: readFiles(mod) };
  clearRun(mod);
  const [session, a] = openRun(mod, { stories, o });
  run = session;
  job = { ...job, state: "running", id: job.id + 1, step: 0, steps: a.steps || 0, points: [], heads: [], model: "", message: "starting", hint: undefined, summary: undefined, said: a.said || [], kept: null };
  if (!run) {
    await failed(mod, false, a.error + (a.hint ? ` (${a.hint})` : "") + (previous ? "; the model of the run before stays" : ""));
    return [400, { error: a.error, hint: a.hint }];
  }
  options = { stories, o };
  keptStories = ""; // written again: another file may have the name
  await keepRun(mod);
  setTimeout(slice, 0);
  return [200, { id: job.id, model: OUT }];
}

// Resume after a reload: the kept run opened again, with --resume from the model it saved last
// (the steps after it taken again: the same bits), or from its first step when it saved none.
async function reopenRun() {
  const mod = await ready;
  await fromSite(mod, options.stories);
  if (options.o.from) await fromSite(mod, options.o.from);
  const resume = exists(mod, OUT) && job.kept;
  if (resume) previous = { kept: job.kept, files: readFiles(mod) }; // a failure gives it back
  else clearRun(mod);
  const [session, a] = openRun(mod, { stories: options.stories, o: { ...options.o, ...(resume ? { resume: true } : {}) } });
  if (!session) return [400, { error: a.error, hint: a.hint }];
  run = session, paused = false, reopen = false;
  const at = resume ? job.kept.step : 0;
  job.points = job.points.filter((p) => p.step <= at);
  job.heads = job.heads.filter((h) => h.step <= at);
  Object.assign(job, { state: "running", step: at, model: "", message: `resumed at step ${at}`, said: a.said || [] });
  setTimeout(slice, 0);
  return [200, { resumed: true, step: at }];
}

// The job as GET /api/train answers it, with "resumable" when Stop paused a run (in memory, or
// kept in storage over a reload).
function status() {
  const { said, ...rest } = job;
  return { ...rest, stories: storiesOf(), resumable: (!!run && paused) || reopen, said: said.slice(-8) };
}

// POST /api/upload?name=FILE: the file's bytes (read in the page) into uploads/, its name kept
// to letters, digits, '-', '_' and '.' as the server keeps it; the run checks it as storylm
// train does.
async function upload(url, bytes) {
  const mod = await ready;
  const given = new URL(url, "http://page/").searchParams.get("name") || "";
  let name = given.split(/[\\/]/).pop().replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 100);
  if (!name || name.startsWith(".") || name.includes("..")) return [400, { error: "give ?name=FILE.txt: a file name without '/' or '..'" }];
  if (!name.endsWith(".txt")) name += ".txt";
  if (!bytes || !bytes.byteLength) return [400, { error: "the file is empty", hint: "send a text file of stories, blank lines between them" }];
  if (bytes.byteLength > MAX_UPLOAD) return [413, { error: `the file is ${(bytes.byteLength / 1048576).toFixed(1)} MB, more than 20 MB`, hint: "train on a part of it, or with storylm train" }];
  if (run && !paused) return [409, { error: "a training run is going on", hint: "upload once it is done, or stop it" }];
  mod.FS.writeFile("uploads/" + name, new Uint8Array(bytes));
  return [200, { stories: "uploads/" + name, bytes: bytes.byteLength }];
}

// POST /api/train/stop: the run paused where it is, and kept in storage as it is.
async function stop() {
  const going = !!run && !paused && job.state === "running";
  if (!going) return [200, { stopped: false }];
  paused = true, job.state = "stopped";
  const mod = await ready;
  job.model = exists(mod, OUT) ? OUT : "";
  job.message = `at step ${job.step}; ${job.model ? "the file holds the model kept at the last evaluation; " : ""}Resume goes on from step ${job.step}`;
  await keepRun(mod);
  return [200, { stopped: true }];
}

// POST /api/train/forget: the run kept (its model, Adam's state, vocabulary, the model before
// it and the uploaded stories) gone from the tab and from the browser's storage; not while the
// run is going.
async function forget() {
  if (run && !paused) return [409, { error: "a training run is going on", hint: "stop it first" }];
  const mod = await ready;
  if (run) mod.ccall("slm_train_web_close", null, ["number"], [run]);
  run = 0, paused = false, reopen = false, options = null, previous = null, keptStories = "";
  clearRun(mod);
  for (const f of uploadNames(mod)) mod.FS.unlink(f);
  job = idleJob(job.id);
  const s = await storage;
  if (s.db && !(await keepAll({}, ""))) return [500, { error: "the run is gone from the tab, not from the browser's storage", hint: job.storage }];
  return [200, { forgotten: true }];
}

// The stories the model kept was trained on (the run before's, when its model came back).
const storiesOf = () => (job.kept && job.kept.stories) || (options ? options.stories : "");

// A file of the run as bytes: the model (GET /api/train/model) or the stories of the model kept
// (/api/train/stories; the site's own fetched again after a reload).
async function runFile(which) {
  const mod = await ready;
  const path = which === "model" ? OUT : storiesOf();
  if (which === "model" && !exists(mod, OUT)) return [404, { error: "no model saved yet", hint: "a run saves at its first evaluation" }];
  if (path && !path.startsWith("uploads/")) await fromSite(mod, path);
  if (!path || !exists(mod, path)) return [404, { error: "the stories of the model kept are not here", hint: "start a run" }];
  return [200, mod.FS.readFile(path).slice().buffer];
}

// One request of the page: [status, body (an object, or an ArrayBuffer for a file)].
async function route(req) {
  await restored;
  const path = req.url.split("?")[0];
  if (path === "/api/upload") return upload(req.url, req.bytes);
  if (path === "/api/train" && req.method === "GET") return [200, status()];
  if (path === "/api/train") return start(JSON.parse(req.body || "{}"));
  if (path === "/api/train/stop") return stop();
  if (path === "/api/train/forget") return forget();
  if (path === "/api/train/resume") {
    if (reopen && !run) return reopenRun();
    if (!run || !paused) return [409, { error: "no stopped run to resume", hint: "start a training run" }];
    paused = false, job.state = "running", job.model = "";
    setTimeout(slice, 0);
    return [200, { resumed: true, step: job.step }];
  }
  if (path === "/api/train/model" || path === "/api/train/stories") return runFile(path.split("/").pop());
  return [404, { error: `${req.method} ${path}: no such route in the tab's training` }];
}

onmessage = async (ev) => {
  const { id } = ev.data;
  let status = 500, body;
  try {
    [status, body] = await route(ev.data);
  } catch (e) {
    status = (e && e.status) || 500;
    body = { error: `the page's training worker: ${e.message || e}` };
  }
  if (body instanceof ArrayBuffer) postMessage({ id, status, bytes: body }, [body]);
  else postMessage({ id, status, body: JSON.stringify(body) });
};
