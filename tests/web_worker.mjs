// Runs the static site's Web Worker (web/worker.js, as scripts/build_web copied it into SITE)
// in node, with the few things a browser gives a worker stood in for (importScripts, fetch of
// the site's files, postMessage), and asks it the requests of REQUESTS.json in order.
//
//   node web_worker.mjs SITE REQUESTS.json > ANSWERS.json
//
// REQUESTS.json: [{method, url, body (a JSON value, or absent)}]; ANSWERS.json: [{status, mime,
// body (the answer's text)}], in the same order.
import fs from "node:fs";
import { runWorker } from "./worker_env.mjs";

const [site, requestsFile] = process.argv.slice(2);
const requests = JSON.parse(fs.readFileSync(requestsFile, "utf8"));
const waiting = new Map();
const ask = runWorker(site, "worker.js", (msg) => { waiting.get(msg.id)(msg); waiting.delete(msg.id); });

const answers = [];
for (const [i, r] of requests.entries()) {
  const body = r.body === undefined ? null : JSON.stringify(r.body);
  answers.push(await new Promise((resolve) => {
    waiting.set(i, resolve);
    ask({ data: { id: i, method: r.method, url: r.url, body } });
  }));
}
console.log(JSON.stringify(answers.map(({ status, mime, body }) => ({ status, mime, body }))));
