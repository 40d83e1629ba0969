// Where the page's requests go: to `storylm serve` (fetch), or, on the static site that
// scripts/build_web writes, to the page's Web Worker (worker.js: storylm's server code in
// WebAssembly), which answers them in the same shapes. The mode is what scripts/build_web marks
// in index.html (<meta name="storylm-mode" content="static">), never guessed from a failed request.
export const STATIC = document.querySelector('meta[name="storylm-mode"]')?.content === "static";

// The worker computes one request at a time, and a request it has begun cannot be stopped;
// so the page keeps the requests waiting here and sends the next only once the one before
// is answered. That lets the page choose: a request that has gone stale while it waited
// (its stale() says so: asked for a model picked before) is never sent; what a click on the
// story asks for (a batch of its views) goes first, and the measurements over all the test
// stories (the heads' reach, Tool 1's statistics: seconds each) go after everything else.
const FIRST = new Set(["/api/batch", "/api/attend", "/api/trace"]), LAST = new Set(["/api/heads", "/api/stats"]);
const worker = { w: null, last: 0, busy: null, queue: [], soon: 0 }; // busy: the request being answered

// A request that was not computed: {name: "AbortError", stale} so that the views drop it.
function stopped(message, stale) {
  const err = new DOMException(message, "AbortError");
  err.stale = stale;
  return err;
}

// Every request waiting, and every one after, fails with message (the worker could not run).
function failAll(message) {
  worker.failed = message;
  const body = JSON.stringify({ error: `the page's worker failed: ${message}` });
  for (const r of [worker.busy, ...worker.queue]) if (r) r.resolve({ status: 500, mime: "application/json", body });
  worker.busy = null;
  worker.queue = [];
}

// The next request to send: the first of the click's views waiting, else the oldest that is
// not a measurement, else the oldest; those gone stale are answered as stopped on the way.
function nextRequest() {
  const stale = (x) => x.stale && x.stale();
  for (const r of worker.queue.filter(stale)) r.reject(stopped("another model was picked before it was computed", true));
  worker.queue = worker.queue.filter((x) => !stale(x));
  const pick = (test) => worker.queue.findIndex((x) => test(x.msg.url));
  let i = pick((url) => FIRST.has(url));
  if (i < 0) i = pick((url) => !LAST.has(url));
  return worker.queue.splice(Math.max(i, 0), 1)[0];
}

function sendNext() {
  if (worker.busy || !worker.queue.length) return;
  worker.busy = nextRequest();
  if (worker.busy) worker.w.postMessage(worker.busy.msg, worker.busy.msg.files ? Object.values(worker.busy.msg.files) : []);
}

// A request asked while the worker is idle is sent once the page's code of the moment has
// run, so that the requests a change asks for together (a model picked: its distance scores,
// its attention view, its measurements) are all waiting to be put in order.
function sendSoon() {
  if (worker.busy || worker.soon) return;
  worker.soon = setTimeout(() => { worker.soon = 0; sendNext(); }, 0);
}

// Started as soon as the page runs, so that the WebAssembly and the models load while the
// page's modules do; a worker index.html started already (scripts/build_web) is taken over.
function startWorker() {
  worker.w = window.storylmWorker || new Worker("worker.js");
  worker.w.onmessage = (ev) => {
    const r = worker.busy;
    worker.busy = null;
    if (r && r.msg.id === ev.data.id) r.resolve(ev.data);
    sendNext();
  };
  worker.w.onerror = (ev) => failAll(ev.message || "it did not start");
  if (worker.w.failed) failAll(worker.w.failed); // before this module ran (index.html's line keeps it)
}

// fetch's shape, answered by the worker: a Response for path and init ({method, body: a
// JSON text, signal, stale: () => true once its answer is no longer wanted}). A request
// aborted or gone stale before it is sent is never computed; one aborted after is dropped
// when answered (the worker finishes it).
function workerFetch(path, init = {}) {
  if (!worker.w) startWorker();
  const msg = { id: ++worker.last, method: init.method || "GET", url: path, body: typeof init.body === "string" ? init.body : null };
  if (init.files) msg.files = init.files;
  const signal = init.signal;
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) return reject(stopped("the request was stopped", false));
    const r = { msg, stale: init.stale, reject, resolve: (a) => resolve(new Response(a.body, { status: a.status, headers: { "Content-Type": a.mime } })) };
    if (signal) {
      signal.addEventListener("abort", () => {
        worker.queue = worker.queue.filter((x) => x !== r);
        r.resolve = () => {};
        reject(stopped("the request was stopped", false));
      });
    }
    worker.queue.push(r);
    if (worker.failed) failAll(worker.failed);
    else sendSoon();
  });
}

if (STATIC) startWorker();

// A request of the page's API: fetch on a server, the worker on the static site.
export const send = (path, init) => (STATIC ? workerFetch(path, init) : fetch(path, init));

// The models the page handed to the worker (the tab's trained ones): path -> a blob: URL of their bytes.
const handed = new Map();

// Files into the worker's file system ({path in trained/: an ArrayBuffer, moved there}): the
// tab's trained model and its stories, which the worker then lists and reads as the server
// lists and reads the models it trained. Answered in turn with the page's requests.
export async function giveFiles(files) {
  for (const [name, bytes] of Object.entries(files))
    if (name.endsWith(".safetensors")) handed.set(name, URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" })));
  const res = await workerFetch("/worker/files", { method: "PUT", files });
  if (!res.ok) throw new Error(`the page's worker did not take the files: ${await res.text()}`);
}

// Where a model file is downloaded from: the server's /api/download, or the static site's own
// file (a model trained in the tab: its bytes in the page).
export const downloadHref = (path) => (STATIC ? handed.get(path) || path : "/api/download?model=" + encodeURIComponent(path));
