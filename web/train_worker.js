// Training in the tab, on the static site (scripts/build_web): `storylm train` compiled to
// WebAssembly (wasm/train_web.c in storylm_web.js, the module the views' worker loads too), in
// a Web Worker of its own so that the views' worker stays free. It takes a slice of steps at a
// time (about 0.1 s), so that the page's Stop is heard between slices, and answers the page in
// the shapes of `storylm serve`'s /api/train, /api/train/stop and /api/upload; Stop pauses the
// run in memory and /api/train/resume goes on with it (the same bits as a run never stopped).
// The model is written where `storylm train -o model.safetensors` writes it, in the worker's own
// file system, and GET /api/train/model sends its bytes for the page's download.
/* global createStorylm, importScripts */
importScripts("storylm_web.js");

const DIR = "/train", OUT = "model.safetensors", SLICE_S = 0.1;
const MAX_UPLOAD = 20 * 1024 * 1024; // the server's limit of an upload (SERVER_MAX_UPLOAD)

// The module with /train as its working directory, where the runs read and write.
const ready = createStorylm({ print: () => {}, printErr: (t) => console.warn(t) }).then((mod) => {
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

let run = 0; // the C session (slm_train_web_open), 0: none
let paused = false;
let job = { state: "idle", id: 0, step: 0, steps: 0, points: [], heads: [], model: "", message: "", said: [] };

const exists = (mod, path) => mod.FS.analyzePath(path).exists;

// A file of the site (the default stories, a model to fine-tune) into the file system at path.
async function fromSite(mod, path) {
  if (exists(mod, path)) return;
  const res = await fetch(path);
  if (!res.ok) throw new Error(`${path}: no such file on this site (the site answered ${res.status}); upload a stories file`);
  mod.FS.mkdirTree(DIR + "/" + path.slice(0, path.lastIndexOf("/") + 1));
  mod.FS.writeFile(path, new Uint8Array(await res.arrayBuffer()));
}

// A C function's answer (a malloc'd JSON text) as an object, the text freed.
function answerOf(mod, p) {
  const text = mod.UTF8ToString(p);
  mod._free(p);
  return JSON.parse(text);
}

// One slice's answer folded into the job: its points, heads and lines appended.
function fold(a) {
  job.points.push(...(a.points || []));
  job.heads.push(...(a.heads || []));
  job.said.push(...(a.said || []));
  for (const k of ["state", "step", "steps", "message", "summary"]) if (a[k] !== undefined) job[k] = a[k];
}

// Slices until the run ends or is paused; the worker hears messages between them.
async function slice() {
  if (!run || paused) return;
  const mod = await ready;
  fold(answerOf(mod, mod.ccall("slm_train_web_steps", "number", ["number", "number", "number"], [run, 1 << 30, SLICE_S])));
  if (job.state === "running") { setTimeout(slice, 0); return; }
  mod.ccall("slm_train_web_close", null, ["number"], [run]);
  run = 0;
  job.model = exists(mod, OUT) ? OUT : "";
}

// The page's short name of a base model (train --from's: "tinystories", "transformer") as the
// site's file, fetched into the file system.
async function baseModel(mod, name) {
  const path = `models/${name === "tinystories" ? name : "tinystories-" + name}.safetensors`;
  await fromSite(mod, path);
  return path;
}

// POST /api/train: {stories, seed, eval_every, lr, steps, from}: a new run, from scratch (or
// fine-tuning from), the earlier run's model replaced.
async function start(body) {
  if (run && !paused) return [409, { error: "a training run is going on", hint: "stop it first" }];
  const mod = await ready;
  if (run) mod.ccall("slm_train_web_close", null, ["number"], [run]);
  run = 0, paused = false;
  const stories = String(body.stories || "");
  if (!stories) return [400, { error: "give a stories file", hint: "upload one, or use the site's test stories" }];
  await fromSite(mod, stories);
  const o = { threads: 1 };
  for (const k of ["seed", "eval_every", "lr", "steps"]) if (body[k] !== undefined && body[k] !== null) o[k] = body[k];
  if (body.from) o.from = await baseModel(mod, body.from);
  // a new run in a clean folder, as `storylm train` in a new one: its vocabulary learnt from its
  // stories. The last run's files wait in old/ until this one opens, and come back if it cannot.
  if (!exists(mod, "old")) mod.FS.mkdir("old");
  for (const f of mod.FS.readdir("old")) if (f !== "." && f !== "..") mod.FS.unlink("old/" + f);
  const kept = mod.FS.readdir(DIR).filter((f) => f.startsWith("model.") || f === "vocab.txt");
  for (const f of kept) mod.FS.rename(f, "old/" + f);
  const outs = mod._malloc(4);
  run = mod.ccall("slm_train_web_open", "number", ["string", "string", "string", "number"], [stories, OUT, JSON.stringify(o), outs]);
  const a = answerOf(mod, mod.getValue(outs, "i32"));
  mod._free(outs);
  if (!run) for (const f of kept) mod.FS.rename("old/" + f, f);
  job = { state: "running", id: job.id + 1, step: 0, steps: a.steps || 0, points: [], heads: [], model: "", message: "starting", said: a.said || [] };
  if (!run) {
    job.state = "failed";
    job.message = a.error + (a.hint ? ` (${a.hint})` : "");
    return [400, { error: a.error, hint: a.hint }];
  }
  setTimeout(slice, 0);
  return [200, { id: job.id, model: OUT }];
}

// The job as GET /api/train answers it, with "resumable" when Stop paused a run in memory.
function status() {
  const { said, ...rest } = job;
  return { ...rest, resumable: !!run && paused, said: said.slice(-8) };
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

// One request of the page: [status, body (an object, or an ArrayBuffer for the model)].
async function route(req) {
  const path = req.url.split("?")[0];
  if (path === "/api/upload") return upload(req.url, req.bytes);
  if (path === "/api/train" && req.method === "GET") return [200, status()];
  if (path === "/api/train") return start(JSON.parse(req.body || "{}"));
  if (path === "/api/train/stop") {
    const going = !!run && !paused && job.state === "running";
    if (going) {
      paused = true, job.state = "stopped";
      job.model = exists(await ready, OUT) ? OUT : "";
      job.message = `at step ${job.step}; ${job.model ? "the file holds the model kept at the last evaluation; " : ""}Resume goes on from step ${job.step}`;
    }
    return [200, { stopped: going }];
  }
  if (path === "/api/train/resume") {
    if (!run || !paused) return [409, { error: "no stopped run to resume", hint: "start a training run" }];
    paused = false, job.state = "running", job.model = "";
    setTimeout(slice, 0);
    return [200, { resumed: true }];
  }
  if (path === "/api/train/model") {
    const mod = await ready;
    if (!exists(mod, OUT)) return [404, { error: "no model saved yet", hint: "a run saves at its first evaluation" }];
    return [200, mod.FS.readFile(OUT).slice().buffer];
  }
  return [404, { error: `${req.method} ${path}: no such route in the tab's training` }];
}

onmessage = async (ev) => {
  const { id } = ev.data;
  let status = 500, body;
  try {
    [status, body] = await route(ev.data);
  } catch (e) {
    body = { error: `the page's training worker: ${e.message || e}` };
  }
  if (body instanceof ArrayBuffer) postMessage({ id, status, bytes: body }, [body]);
  else postMessage({ id, status, body: JSON.stringify(body) });
};
