// The page's API on the static site (scripts/build_web), where no server is behind the page:
// storylm's own server code compiled to WebAssembly (storylm_web.js, wasm/web.c) answers the
// page's requests here, in a Web Worker, with the routes and answers of `storylm serve`. The
// files the models and views read (site.json lists them) are fetched from the site's own folder,
// so no request leaves the page's origin, into the worker's file system. A classic worker
// (importScripts), which every browser runs.
/* global createStorylm, importScripts */
importScripts("storylm_web.js");

// A file of the site as bytes.
async function siteFile(name) {
  const res = await fetch(name);
  if (!res.ok) throw new Error(`${name}: the site answered ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

// The WebAssembly module with the site's files in /site (its working directory) and the
// server opened on them: {mod, server, outs (8 bytes: an answer's status and type)}.
async function open() {
  const site = await (await fetch("site.json")).json();
  const [mod, files] = await Promise.all([
    createStorylm({ print: () => {}, printErr: (t) => console.warn(t) }),
    Promise.all(site.files.map(siteFile)),
  ]);
  site.files.forEach((name, i) => {
    const path = "/site/" + name;
    mod.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    mod.FS.writeFile(path, files[i]);
  });
  mod.FS.chdir("/site");
  const outs = mod._malloc(8);
  const server = mod.ccall("slm_web_open", "number", ["string", "string", "number"], [site.model, site.stories, outs]);
  if (!server) {
    const p = mod.getValue(outs, "i32");
    const msg = p ? mod.UTF8ToString(p) : "out of memory";
    mod._free(p);
    throw new Error(msg);
  }
  return { mod, server, outs };
}

const ready = open();

// One request: {method, url, body (a JSON text or null)} -> {status, mime, body}.
function answer(w, req) {
  const { mod, server, outs } = w;
  const p = mod.ccall("slm_web_answer", "number", ["number", "string", "string", "string", "number", "number"],
    [server, req.method, req.url, req.body, outs, outs + 4]);
  const body = mod.UTF8ToString(p);
  mod._free(p);
  return { status: mod.getValue(outs, "i32"), mime: mod.UTF8ToString(mod.getValue(outs + 4, "i32")), body };
}

// Requests are answered in the order they came, one at a time (the module has one thread).
onmessage = async (ev) => {
  const { id } = ev.data;
  try {
    postMessage({ id, ...answer(await ready, ev.data) });
  } catch (e) {
    postMessage({ id, status: 500, mime: "application/json", body: JSON.stringify({ error: `the page's worker: ${e.message || e}` }) });
  }
};
