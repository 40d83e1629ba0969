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

// Asked for before the glue below is read, so that the WebAssembly, the list and the files
// download while it is: {site (site.json), files (their bytes), wasm (its Response)}.
const site = fetch("site.json").then((res) => {
  if (!res.ok) throw new Error(`site.json: the site answered ${res.status}`);
  return res.json();
});
const early = { site, files: site.then((s) => Promise.all(s.files.map(siteFile))), wasm: fetch("storylm_web.wasm") };
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
// server opened on them: {mod, server, outs (8 bytes: an answer's status and type), names}.
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
  const server = mod.ccall("slm_web_open", "number", ["string", "string", "number"], [listed.model, listed.stories, outs]);
  if (!server) {
    const p = mod.getValue(outs, "i32");
    const msg = p ? mod.UTF8ToString(p) : "out of memory";
    mod._free(p);
    throw new Error(msg);
  }
  return { mod, server, outs, names: listed.names ? null : Promise.resolve() };
}

// name (a path of the site) written into /site.
function writeFile(mod, name, bytes) {
  const path = "/site/" + name;
  mod.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
  mod.FS.writeFile(path, bytes);
}

// The stories `storylm generate` learns which words are names from (data/stories.txt, which
// the site has gzipped: site.json's "names"), fetched once, before the first generation: the
// server finds the file where the CLI does, so the worker writes names as the CLI does.
async function namesFile(w) {
  const { names } = await early.site;
  const res = await fetch(names);
  if (!res.ok) throw new Error(`${names}: the site answered ${res.status}`);
  const text = await new Response(res.body.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
  writeFile(w.mod, names.replace(/\.gz$/, ""), new Uint8Array(text));
}

// The names file in place (fetched at the first call; again at the next after a failure).
function names(w) {
  if (!w.names) w.names = namesFile(w).catch((e) => { w.names = null; throw e; });
  return w.names;
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

async function reply(req) {
  const { id } = req;
  try {
    const w = await ready;
    if (req.url.startsWith("/api/generate")) await names(w);
    postMessage({ id, ...answer(w, req) });
  } catch (e) {
    postMessage({ id, status: 500, mime: "application/json", body: JSON.stringify({ error: `the page's worker: ${e.message || e}` }) });
  }
}

const ready = open();
let line = ready.catch(() => {});

// Requests are answered in the order they came, one at a time (the module has one thread).
onmessage = (ev) => { line = line.then(() => reply(ev.data)); };
