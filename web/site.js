// Where the page's requests go: to `storylm serve` (fetch), or, on the static site that
// scripts/build_web writes, to the page's Web Worker (worker.js: storylm's server code in
// WebAssembly), which answers them in the same shapes. The mode is what scripts/build_web marks
// in index.html (<meta name="storylm-mode" content="static">), never guessed from a failed request.
export const STATIC = document.querySelector('meta[name="storylm-mode"]')?.content === "static";

let worker = null, last = 0;
const waiting = new Map(); // request id -> its answer's resolve

// Every request waiting fails with message (the worker could not run).
function failAll(message) {
  const body = JSON.stringify({ error: `the page's worker failed: ${message}` });
  for (const done of waiting.values()) done({ status: 500, mime: "application/json", body });
  waiting.clear();
}

function startWorker() {
  worker = new Worker("worker.js");
  worker.onmessage = (ev) => {
    const done = waiting.get(ev.data.id);
    waiting.delete(ev.data.id);
    if (done) done(ev.data);
  };
  worker.onerror = (ev) => failAll(ev.message || "it did not start");
}

// fetch's shape, answered by the worker: a Response for path and init ({method, body: a
// JSON text, signal}). An aborted request's answer is dropped (the worker finishes it).
function workerFetch(path, init = {}) {
  if (!worker) startWorker();
  const id = ++last, signal = init.signal;
  return new Promise((resolve, reject) => {
    const aborted = () => { waiting.delete(id); reject(new DOMException("the request was stopped", "AbortError")); };
    if (signal && signal.aborted) return aborted();
    if (signal) signal.addEventListener("abort", aborted);
    waiting.set(id, (a) => resolve(new Response(a.body, { status: a.status, headers: { "Content-Type": a.mime } })));
    worker.postMessage({ id, method: init.method || "GET", url: path, body: typeof init.body === "string" ? init.body : null });
  });
}

// Started with the page, so that the WebAssembly and the models load while the page's modules do.
if (STATIC) startWorker();

// A request of the page's API: fetch on a server, the worker on the static site.
export const send = (path, init) => (STATIC ? workerFetch(path, init) : fetch(path, init));

// Where a model file is downloaded from: the server's /api/download, or the static site's own file.
export const downloadHref = (path) => (STATIC ? path : "/api/download?model=" + encodeURIComponent(path));
