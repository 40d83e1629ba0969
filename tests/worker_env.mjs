// What a browser gives the static site's Web Workers, stood in for in node: importScripts (of
// the site's emscripten glue), fetch of the site's files, and postMessage. The tests run
// web/worker.js and web/train_worker.js, as scripts/build_web copied them into a site, in node
// with it (tests/web_worker.mjs, tests/train_worker.mjs).
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

// A file of the site (name relative to it, as a worker fetches it; emscripten's glue asks
// for the wasm by its full path) as fetch answers it.
function siteFetch(site, name) {
  const file = path.isAbsolute(name) ? name : path.join(site, name);
  if (!fs.existsSync(file)) return Promise.resolve(new Response("", { status: 404 }));
  const type = file.endsWith(".wasm") ? "application/wasm" : "application/octet-stream";
  return Promise.resolve(new Response(fs.readFileSync(file), { headers: { "Content-Type": type } }));
}

// Starts SITE/worker (a worker's file name) in this process; each message it posts goes to
// onPost. Returns the worker's onmessage, which takes {data}.
export function runWorker(site, worker, onPost) {
  globalThis.importScripts = (name) => { globalThis.createStorylm = require(path.resolve(site, name)); };
  globalThis.fetch = (name) => siteFetch(site, name);
  globalThis.postMessage = onPost;
  vm.runInThisContext(fs.readFileSync(path.join(site, worker), "utf8"), { filename: worker });
  return (ev) => globalThis.onmessage(ev);
}
