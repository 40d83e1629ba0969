// Runs the static site's Web Worker (web/worker.js, as scripts/build_web copied it into SITE)
// in node, with the few things a browser gives a worker stood in for (importScripts, fetch of
// the site's files, postMessage), and asks it the requests of REQUESTS.json in order.
//
//   node web_worker.mjs SITE REQUESTS.json > ANSWERS.json
//
// REQUESTS.json: [{method, url, body (a JSON value, or absent)}]; ANSWERS.json: [{status, mime,
// body (the answer's text)}], in the same order.
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { createRequire } from "node:module";

const [site, requestsFile] = process.argv.slice(2);
const requests = JSON.parse(fs.readFileSync(requestsFile, "utf8"));
const require = createRequire(import.meta.url);

// A file of the site (name relative to it, as the worker fetches it; emscripten's glue asks
// for the wasm by its full path) as fetch answers it.
function siteFetch(name) {
  const file = path.isAbsolute(name) ? name : path.join(site, name);
  if (!fs.existsSync(file)) return Promise.resolve(new Response("", { status: 404 }));
  const type = file.endsWith(".wasm") ? "application/wasm" : "application/octet-stream";
  return Promise.resolve(new Response(fs.readFileSync(file), { headers: { "Content-Type": type } }));
}

const waiting = new Map();
globalThis.importScripts = (name) => { globalThis.createStorylm = require(path.resolve(site, name)); };
globalThis.fetch = siteFetch;
globalThis.postMessage = (msg) => { waiting.get(msg.id)(msg); waiting.delete(msg.id); };
vm.runInThisContext(fs.readFileSync(path.join(site, "worker.js"), "utf8"), { filename: "worker.js" });

const answers = [];
for (const [i, r] of requests.entries()) {
  const body = r.body === undefined ? null : JSON.stringify(r.body);
  answers.push(await new Promise((resolve) => {
    waiting.set(i, resolve);
    globalThis.onmessage({ data: { id: i, method: r.method, url: r.url, body } });
  }));
}
console.log(JSON.stringify(answers.map(({ status, mime, body }) => ({ status, mime, body }))));
