// The page's API on the static site (scripts/build_web), where no server is behind the page:
// storylm's own server code compiled to WebAssembly (storylm_web.js, wasm/web.c) answers the
// page's requests here, in a Web Worker, with the routes and answers of `storylm serve`. The
// files the models and views read (site.json lists them) are fetched from the site's own folder,
// so no request leaves the page's origin, into the worker's file system. A classic worker
// (importScripts), which every browser runs.
/* global createStorylm, importScripts */

// A file of the site as bytes.
async function siteFile(name) {
  const res = await fetch(name);
  if (!res.ok) throw new Error(`${name}: the site answered ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

// The models other than the default: no first view reads them, so the server opens once their
// header is in (all the model list reads of them), and a request that names one waits for
// the rest of its file (needAll).
const later = (s, name) => name.endsWith(".safetensors") && name !== s.model;

// A safetensors file fetched once: {head: its header (8 bytes of the JSON's length, the
// JSON) followed by zeros for the tensors, as soon as the header is in; whole: all its bytes}.
function siteModel(name) {
  let told = null;
  const head = new Promise((resolve, reject) => { told = { resolve, reject }; });
  const whole = (async () => {
    const res = await fetch(name);
    if (!res.ok) throw new Error(`${name}: the site answered ${res.status}`);
    const reader = res.body.getReader(), chunks = [];
    let got = 0, need = 0;
    for (let part = await reader.read(); !part.done; part = await reader.read()) {
      chunks.push(part.value);
      got += part.value.length;
      if (!need && got >= 8) need = 8 + Number(new DataView(join(chunks, 8).buffer).getBigUint64(0, true));
      if (need && got >= need && told) { told.resolve(headOnly(join(chunks, need))); told = null; }
    }
    if (told) throw new Error(`${name}: the file ends within its header`);
    return join(chunks, got);
  })();
  whole.catch((e) => told && told.reject(e));
  return { head, whole };
}

// A safetensors header as a file of the whole file's size, its tensors zeros.
function headOnly(head) {
  const tensors = Object.values(JSON.parse(new TextDecoder().decode(head.subarray(8))));
  const bytes = new Uint8Array(head.length + Math.max(0, ...tensors.map((t) => (t.data_offsets ? t.data_offsets[1] : 0))));
  bytes.set(head);
  return bytes;
}

// The first n bytes of chunks as one array.
function join(chunks, n) {
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) {
    if (at >= n) break;
    out.set(c.subarray(0, n - at), at);
    at += Math.min(c.length, n - at);
  }
  return out;
}

// Asked for before the glue below is read, so that the WebAssembly, the list and the files
// download while it is: {site (site.json), files (their bytes; a later model's header only),
// whole (a later model's bytes, by name), wasm (its Response)}.
const site = fetch("site.json").then((res) => {
  if (!res.ok) throw new Error(`site.json: the site answered ${res.status}`);
  return res.json();
});
const early = { site, wasm: fetch("storylm_web.wasm"), whole: {} };
early.files = site.then((s) => Promise.all(s.files.map((name) => {
  if (!later(s, name)) return siteFile(name);
  const m = siteModel(name);
  early.whole[name] = m.whole;
  return m.head;
})));
early.files.catch(() => {}); // its failure is open()'s to report
early.wasm.catch(() => {});
importScripts("storylm_web.js");

// The WebAssembly instantiated from the early fetch: compiled while it downloads when the
// site serves it as application/wasm (as common servers do), else once it is in.
async function instantiate(imports) {
  const res = await early.wasm;
  if (!res.ok) throw new Error(`storylm_web.wasm: the site answered ${res.status}`);
  const streams = WebAssembly.instantiateStreaming && /^application\/wasm/.test(res.headers.get("Content-Type") || "");
  return streams ? WebAssembly.instantiateStreaming(res, imports) : WebAssembly.instantiate(await res.arrayBuffer(), imports);
}

// The WebAssembly module with the site's files in /site (its working directory) and the
// server opened on them: {mod, server, outs (8 bytes: an answer's status and type), stories
// (the stories file's fetch, once begun), whole}.
async function open() {
  let failed = null;
  const wasmFailed = new Promise((_, reject) => { failed = reject; });
  const made = createStorylm({
    print: () => {}, printErr: (t) => console.warn(t),
    instantiateWasm(imports, done) {
      instantiate(imports).then((r) => done(r.instance, r.module), failed);
      return {};
    },
  });
  const [mod, files, listed] = await Promise.all([Promise.race([made, wasmFailed]), early.files, early.site]);
  listed.files.forEach((name, i) => writeFile(mod, name, files[i]));
  mod.FS.chdir("/site");
  const outs = mod._malloc(8);
  const server = mod.ccall("slm_web_open", "number", ["string", "string", "number"], [listed.model, listed.serve_stories, outs]);
  if (!server) {
    const p = mod.getValue(outs, "i32");
    const msg = p ? mod.UTF8ToString(p) : "out of memory";
    mod._free(p);
    throw new Error(msg);
  }
  const w = { mod, server, outs, stories: null, whole: {} };
  for (const [name, bytes] of Object.entries(early.whole)) wholeFile(w, name, bytes);
  return w;
}

// A later model's whole file written in place once bytes (a promise) are in; fetched again
// at the next request that needs it after a failure.
function wholeFile(w, name, bytes) {
  w.whole[name] = bytes.then((b) => writeFile(w.mod, name, b));
  w.whole[name].catch(() => { w.whole[name] = null; });
}

// The whole files of the models req names (by their file name, however their folder is
// spelt) in place.
function needAll(w, req) {
  let url = req.url;
  try { url = decodeURIComponent(url); } catch (e) { /* a malformed query: the server says so */ }
  const text = url + (req.body || "");
  return Promise.all(Object.keys(w.whole).filter((name) => text.includes(name.split("/").pop())).map((name) => {
    if (!w.whole[name]) wholeFile(w, name, siteFile(name));
    return w.whole[name];
  }));
}

// name (a path of the site) written into /site.
function writeFile(mod, name, bytes) {
  const path = "/site/" + name;
  mod.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
  mod.FS.writeFile(path, bytes);
}

// The server's stories file (site.json's serve_stories: data/stories.txt, as `storylm serve`
// reads by default; the site has it gzipped), fetched once: `storylm generate` learns which
// words are names from it, and a model with no teaching stories of its own (the held-out
// stories beside a shipped model) reads its test stories there, as the CLI does. The first view
// does not wait for it: it is fetched from the warm-up on, a download the answers do not wait for.
async function storiesFile(w) {
  const { serve_stories: path } = await early.site;
  const res = await fetch(path + ".gz");
  if (!res.ok) throw new Error(`${path}.gz: the site answered ${res.status}`);
  const text = await new Response(res.body.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
  writeFile(w.mod, path, new Uint8Array(text));
}

// The stories file in place (fetched at the first call; again at the next after a failure).
function stories(w) {
  if (!w.stories) w.stories = storiesFile(w).catch((e) => { w.stories = null; throw e; });
  return w.stories;
}

// Whether the server's stories file is in place.
async function storiesIn(w) {
  return w.mod.FS.analyzePath("/site/" + (await early.site).serve_stories).exists;
}

// req answered; one that failed while the stories file was not in place yet is answered again
// once it is: which stories a request reads is the server's to find (a model's teaching
// stories, else its stories file), and only a request that reads the file can fail for want of it.
async function answerWithStories(w, req) {
  const first = answer(w, req);
  if (first.status < 400 || (await storiesIn(w))) return first;
  await stories(w);
  return answer(w, req);
}

// One request: {method, url, body (a JSON text or null)} -> {status, mime, body}.
function answer(w, req) {
  const { mod, server, outs } = w;
  const p = mod.ccall("slm_web_answer", "number", ["number", "string", "string", "string", "number", "number"],
    [server, req.method, req.url, req.body, outs, outs + 4]);
  const body = mod.UTF8ToString(p);
  mod._free(p);
  return { status: mod.getValue(outs, "i32"), mime: mod.UTF8ToString(mod.getValue(outs + 4, "i32")), body };
}

// PUT /worker/files: files the page hands over ({path: ArrayBuffer}: the model trained in the
// tab and its stories) written into /site/trained/, where the server lists and reads the models
// it trained (storylm serve's --train-dir).
function takeFiles(w, files) {
  const names = Object.keys(files), json = "application/json";
  if (names.some((n) => !/^trained\/[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(n))) return { status: 400, mime: json, body: JSON.stringify({ error: "files go into trained/ only, a name not starting with '.'" }) };
  for (const n of names) writeFile(w.mod, n, new Uint8Array(files[n]));
  return { status: 200, mime: json, body: JSON.stringify({ written: names }) };
}

async function reply(req) {
  const { id } = req;
  try {
    const w = await ready;
    if (req.files) { postMessage({ id, ...takeFiles(w, req.files) }); return; }
    if (req.url.startsWith("/api/generate")) await stories(w);
    await needAll(w, req);
    postMessage({ id, ...(await answerWithStories(w, req)) });
  } catch (e) {
    postMessage({ id, status: 500, mime: "application/json", body: JSON.stringify({ error: `the page's worker: ${e.message || e}` }) });
  }
}

// What the attention view asks, on one word of the default model, asked by the worker itself
// once it has had nothing to answer for IDLE_MS (the page busy starting, between its first
// requests and its views): the model is loaded and its runs made ready before the first view
// asks, which then takes a tenth of the time.
const IDLE_MS = 30;
function warmUp(w, model) {
  const views = [["/api/attend", { wide: true }], ["/api/trace", {}], ["/api/loss", {}]];
  const requests = views.map(([url, more]) => ({ url, body: { model, text: "Once", ...more } }));
  answer(w, { method: "POST", url: "/api/batch", body: JSON.stringify({ requests }) });
}

const ready = open();
const queue = { line: ready.catch(() => {}), waiting: 0, warm: false, timer: 0 };

// The warm-up, once, when no request has come for IDLE_MS.
function warmSoon() {
  clearTimeout(queue.timer);
  if (queue.warm) return;
  queue.timer = setTimeout(() => {
    if (queue.waiting || queue.warm) return;
    queue.warm = true;
    queue.line = queue.line.then(async () => warmUp(await ready, (await early.site).model)).catch(() => {});
    ready.then((w) => stories(w)).catch(() => {}); // in the background: a request that needs it waits
  }, IDLE_MS);
}

// Requests are answered in the order they came, one at a time (the module has one thread).
onmessage = (ev) => {
  queue.waiting++;
  clearTimeout(queue.timer);
  queue.line = queue.line.then(() => reply(ev.data)).then(() => { if (!--queue.waiting) warmSoon(); });
};
