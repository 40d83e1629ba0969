// Runs the static site's training worker (web/train_worker.js, as scripts/build_web copied it
// into SITE) in node, with what a browser gives a worker stood in for (importScripts, fetch of
// the site's files, postMessage), and drives a run as the page's training card does: the
// stories uploaded, a run started, stopped part way (its step must stay put), resumed to its
// end, and the model's bytes asked for; then, when given, a second run that fine-tunes a model
// of the site (the card's "start from"). Then runs that cannot start, and one that fails part
// way (its optimizer state cannot be written where a folder stands in its file's place): each
// keeps the model of the run before. Node gives the worker no storage (IndexedDB): the status
// says that a reload would end the run, and the run goes on in memory.
//
//   node train_worker.mjs SITE STORIES OPTIONS.json OUT.safetensors [TUNE.json OUT2.safetensors]
//
// OPTIONS.json: the card's body of POST /api/train ({steps, seed, lr, eval_every}). Writes the
// model to OUT.safetensors and prints the last status as JSON; exits 1 at a failed check.
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { runWorker } from "./worker_env.mjs";

const [site, stories, optionsFile, out, tuneFile, out2] = process.argv.slice(2);
const options = JSON.parse(fs.readFileSync(optionsFile, "utf8"));
const waiting = new Map();
let asked = 0;
const post = runWorker(site, "train_worker.js", (msg) => { waiting.get(msg.id)(msg); waiting.delete(msg.id); });

// One request as the page sends it: {status, body (parsed) or bytes}.
function ask(method, url, body, bytes) {
  const id = ++asked;
  return new Promise((resolve) => {
    waiting.set(id, (a) => resolve({ status: a.status, bytes: a.bytes, body: a.body && JSON.parse(a.body) }));
    post({ data: { id, method, url, body: body === undefined ? null : JSON.stringify(body), bytes } });
  });
}
const check = (ok, what) => { if (!ok) { console.error("FAILED: " + what); process.exit(1); } console.error("ok: " + what); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function poll(until) {
  for (;;) {
    const t = (await ask("GET", "/api/train")).body;
    if (until(t)) return t;
    await sleep(20);
  }
}

const bytes = fs.readFileSync(stories);
const up = await ask("POST", "/api/upload?name=" + encodeURIComponent(path.basename(stories)), undefined, bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
check(up.status === 200 && up.body.bytes === bytes.length, `the upload is kept (${JSON.stringify(up.body)})`);
const busy = await ask("GET", "/api/train/model");
check(busy.status === 404, "no model before a run");
const started = await ask("POST", "/api/train", { ...options, stories: up.body.stories });
check(started.status === 200, `the run starts (${JSON.stringify(started.body)})`);
const again = await ask("POST", "/api/train", { ...options, stories: up.body.stories });
check(again.status === 409, "a second run is refused while one goes on");
const going = await poll((t) => t.state !== "running" || t.step >= 10);
check(going.state === "running", `the run is going at step ${going.step} of ${going.steps}`);
await ask("POST", "/api/train/stop", {});
const stopped = (await ask("GET", "/api/train")).body;
await sleep(500);
const still = (await ask("GET", "/api/train")).body;
check(stopped.state === "stopped" && stopped.resumable && still.step === stopped.step && stopped.step < options.steps,
  `Stop pauses the run at step ${stopped.step}, and it stays there`);
const resumed = await ask("POST", "/api/train/resume", {});
check(resumed.status === 200, "Resume goes on");
const done = await poll((t) => t.state !== "running");
check(done.state === "done" && done.step === options.steps && done.model === "model.safetensors",
  `the run ends at step ${done.step}: ${done.message}`);
const sum = done.summary || {};
check(/no storage/.test(done.storage || ""), `without storage the card says so: "${done.storage}"`);
check(sum.model && sum.model.file === "model.safetensors" && sum.stories.file === up.body.stories && sum.kept.step > 0,
  `its summary is train --json's for the files the run read and wrote (kept: step ${sum.kept && sum.kept.step})`);
check(done.points.length >= options.steps / options.eval_every && done.heads.length >= 1,
  `its status has ${done.points.length} points of the loss curve and ${done.heads.length} of the heads`);
const model = await ask("GET", "/api/train/model");
check(model.status === 200 && model.bytes.byteLength > 0, `the model is sent (${model.bytes.byteLength} bytes)`);
fs.writeFileSync(out, new Uint8Array(model.bytes));
if (tuneFile) {
  const tune = JSON.parse(fs.readFileSync(tuneFile, "utf8"));
  const st2 = await ask("POST", "/api/train", { ...tune, stories: up.body.stories });
  check(st2.status === 200, `a run from ${tune.from} starts (${JSON.stringify(st2.body)})`);
  const tuned = await poll((t) => t.state !== "running");
  check(tuned.state === "done" && tuned.summary.from.file === `${tune.from}.safetensors`, `it fine-tunes ${tune.from}: ${tuned.message}`);
  fs.writeFileSync(out2, new Uint8Array((await ask("GET", "/api/train/model")).bytes));
}
const bad = await ask("POST", "/api/train", { ...options, stories: "models/no-such-stories.txt" });
check(bad.status >= 400 && /no-such-stories/.test(bad.body.error), `a missing stories file is refused: ${bad.body.error}`);
// a writer's own file that cannot train: too few stories, or not UTF-8; refused with a message, the model kept
for (const [name, body, why] of [["three.txt", "One day.\n\nThe end.\n\nHi.\n", /stor/i],
                                 ["latin1.txt", "Caf\xe9 story.\n\n".repeat(30), /UTF-8/i]]) {
  const b = Buffer.from(body, "latin1");
  const u = await ask("POST", "/api/upload?name=" + name, undefined, b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
  const r = u.status === 200 ? await ask("POST", "/api/train", { ...options, stories: u.body.stories }) : u;
  const t = r.status === 200 ? await poll((x) => x.state !== "running") : null;
  const said = (t ? t.error || t.message : r.body.error) || "";
  check((t ? t.state === "failed" : r.status >= 400) && why.test(said), `${name} is refused: ${said}`);
}
const kept = await ask("GET", "/api/train/model");
check(kept.status === 200, "the last run's model is still there after the refusals");
// A run that opens, then fails at its first save: a folder stands where its optimizer state goes.
const before = Buffer.from(kept.bytes);
const mod = await vm.runInThisContext("ready"); // the worker's module (its script's global)
const failing = await ask("POST", "/api/train", { steps: 10, seed: 2, lr: 0.03, eval_every: 5, stories: up.body.stories });
check(failing.status === 200, "a run that will fail starts");
mod.FS.mkdir("/train/model.adam.safetensors");
const fell = await poll((t) => t.state !== "running");
check(fell.state === "failed" && fell.step === 4 && /after step 4/.test(fell.message) && /model.adam.safetensors/.test(fell.message) &&
  /model of the run before/.test(fell.message), `the run failing at its first save says so: ${fell.message}`);
const after = await ask("GET", "/api/train/model");
check(after.status === 200 && Buffer.from(after.bytes).equals(before) && fell.model === "model.safetensors" && fell.kept.run === done.id + (tuneFile ? 1 : 0),
  `the model of the run before is kept, byte for byte (run ${fell.kept.run}, step ${fell.kept.step})`);
// A slice that throws (as an out-of-memory abort does, which leaves the module unusable): the
// worker goes on in a new module, the model of the run before given back there.
const thrown = await ask("POST", "/api/train", { steps: 10, seed: 2, lr: 0.03, eval_every: 5, stories: up.body.stories });
check(thrown.status === 200, "a run whose slice will throw starts");
const ccall = mod.ccall;
mod.ccall = (name, ...rest) => { if (name === "slm_train_web_steps") throw new Error("Aborted(OOM)"); return ccall(name, ...rest); };
const fell2 = await poll((t) => t.state !== "running");
const after2 = await ask("GET", "/api/train/model");
check(fell2.state === "failed" && /Aborted\(OOM\)/.test(fell2.message) && after2.status === 200 && Buffer.from(after2.bytes).equals(before) &&
  (await vm.runInThisContext("ready")) !== mod, `a slice that throws: "${fell2.message}"; the model before is kept in a new module`);
const again2 = await ask("POST", "/api/train", { steps: 2, seed: 2, lr: 0.03, eval_every: 1, stories: up.body.stories });
const ran = again2.status === 200 ? await poll((t) => t.state !== "running") : again2.body;
check(ran.state === "done" && ran.step === 2, `the new module trains the upload again (${ran.message || ran.error})`);
// Forget this run: the model, its stories and the upload gone; a new run needs a new upload.
const forgot = await ask("POST", "/api/train/forget", {});
const idle = (await ask("GET", "/api/train")).body;
const gone = await ask("GET", "/api/train/model");
const noUpload = await ask("POST", "/api/train", { steps: 2, seed: 2, lr: 0.03, eval_every: 1, stories: up.body.stories });
check(forgot.status === 200 && idle.state === "idle" && !idle.model && !idle.resumable && gone.status === 404 && noUpload.status === 404 && /upload the file again/.test(noUpload.body.error),
  `forget: ${forgot.status}, then the state ${idle.state}, the model ${gone.status}, a run on the forgotten upload ${noUpload.status}`);
const { points, heads, ...rest } = done;
console.log(JSON.stringify(rest));
