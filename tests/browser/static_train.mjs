// Training in the tab on the static site (scripts/build_web, served by a plain static file
// server, no storylm process), in headless Chromium: a stories file uploaded through the
// training card, a run of a fixed seed started, stopped in the middle (the steps must stay put),
// resumed, the page reloaded part way (the run kept in the browser's storage shows stopped) and
// resumed again to its end, the loss curve and the heads drawn as it went, and the model
// downloaded; then "Use the new model": the views read the tab's model, and the attention view
// must equal the CLI's `attend --json` on the downloaded file. tests/e2e_static_train.sh
// compares the downloaded bytes with the node build's own train.
//
//   node static_train.mjs URL EXPECT.json SHOTS_DIR OUT.safetensors
//
// EXPECT.json: {chromium, stories (the file to upload), steps, seed, lr, eval_every, cli (the
// command line of the WebAssembly build's CLI, as an array: the same bits as the views)}.
// Writes the downloaded model to OUT.safetensors; exits 1 at the first failed check.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { check, largestDifference, openPage, runChecks, until as waitFor, watchProblems } from "./frame.mjs";
import { press } from "./clicks.mjs";

const [url, expectFile, shots, out] = process.argv.slice(2);
const want = JSON.parse(fs.readFileSync(expectFile, "utf8"));
const TIMEOUT = 300000; // generous: a loaded machine trains slower

async function shot(page, name) {
  const file = path.join(shots, name + ".png");
  await page.screenshot({ path: file, fullPage: false });
  console.log("screenshot: " + file);
}

const until = (page, fn, what, ...args) => waitFor(page, fn, what, { timeout: TIMEOUT, every: 20 }, ...args);

// The card's state: {state, text, points} as drawTraining marks it.
const cardState = (page) => page.$eval('[data-testid="train-state"]', (e) => ({ state: e.dataset.state, text: e.textContent, points: Number(e.dataset.points) }));
const stepOf = (text) => Number((/step (\d+)/.exec(text) || [0, -1])[1]);

async function upload(page) {
  const input = await page.$('[data-testid="train-file"]');
  await input.uploadFile(want.stories);
  const said = await until(page, () => { const t = document.querySelector('[data-testid="upload-state"]').textContent; return /ready to train/.test(t) && t; }, "the upload to be read");
  const box = await page.$eval('[data-testid="train-stories"]', (e) => e.value);
  check(box === "uploads/" + path.basename(want.stories), `the upload is the run's stories (${box}): "${said}"`);
}

// The card's fields set to run's ({steps, seed, lr, eval_every, from: "" or a shipped model's short name}).
async function setFields(page, run = { ...want, from: "" }) {
  await page.select('[data-testid="train-from"]', run.from);
  for (const [id, v] of [["train-steps", run.steps], ["train-seed", run.seed], ["train-lr", run.lr], ["train-every", run.eval_every]])
    await page.$eval(`[data-testid="${id}"]`, (e, v) => { e.value = v; }, String(v));
}

// Stop once the run is part way; its step must not move while stopped.
async function stopInTheMiddle(page) {
  const at = await until(page, () => {
    const e = document.querySelector('[data-testid="train-state"]');
    const m = /step (\d+)/.exec(e.textContent);
    return e.dataset.state === "running" && m && Number(m[1]) >= 10 && Number(m[1]);
  }, "the run to pass step 10");
  check(at < want.steps, `the run is going (step ${at} of ${want.steps})`);
  await press(page, '[data-testid="train-stop"]');
  const st = await until(page, () => { const e = document.querySelector('[data-testid="train-state"]'); return e.dataset.state !== "running" && e.dataset.state; }, "the run to stop");
  const s1 = await cardState(page);
  check(st === "stopped" && stepOf(s1.text) < want.steps, `Stop stops the run part way: "${s1.text}"`);
  check(await page.$eval('[data-testid="train-resume"]', (e) => !e.hidden), "Resume is offered");
  await new Promise((r) => setTimeout(r, 1500));
  const s2 = await cardState(page);
  check(stepOf(s2.text) === stepOf(s1.text), `no step is taken while stopped (step ${stepOf(s2.text)})`);
  await shot(page, "static-train-1-stopped");
  return stepOf(s1.text);
}

// The downloaded model's bytes (the link's blob), written to file.
async function download(page, file = out) {
  const link = await until(page, () => { const a = document.querySelector('[data-testid="train-download"]'); return !a.hidden && a.href.startsWith("blob:") && { href: a.href, name: a.download }; }, "the download link");
  check(link.name === "model.safetensors", `the download is named as storylm train names its model (${link.name})`);
  const b64 = await page.evaluate(async (href) => {
    const bytes = new Uint8Array(await (await fetch(href)).arrayBuffer());
    let s = "";
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(s);
  }, link.href);
  fs.writeFileSync(file, Buffer.from(b64, "base64"));
  console.log(`downloaded ${fs.statSync(file).size} bytes to ${file}`);
}

// Reloads the page once the run ({steps, eval_every}) has passed two evaluations and gone on:
// after the reload the card shows the run stopped (read back from the browser's storage) at
// step atLeast or later, and Resume goes on from the model saved last.
async function reloadMidRun(page, run = want, atLeast = want.eval_every) {
  const past = 2 * run.eval_every + 3;
  const at = await until(page, (n) => {
    const e = document.querySelector('[data-testid="train-state"]');
    const m = /step (\d+)/.exec(e.textContent);
    return e.dataset.state === "running" && m && Number(m[1]) >= n && Number(m[1]);
  }, `the run to pass step ${past}`, past);
  check(at < run.steps, `the run is going (step ${at} of ${run.steps})`);
  await page.reload({ timeout: TIMEOUT });
  await until(page, () => document.querySelector('[data-testid="attn-row"]'), "the page to load again");
  const st = await until(page, () => { const e = document.querySelector('[data-testid="train-state"]'); return e.dataset.state === "stopped" && e.textContent; }, "the kept run to show stopped");
  check(/page was left/.test(st) && stepOf(st) >= atLeast, `after the reload the card shows the run kept: "${st}"`);
  const box = await page.$eval('[data-testid="train-stories"]', (e) => e.value);
  check(box === "uploads/" + path.basename(want.stories), `the card's stories are the kept run's again (${box})`);
  check(await page.$eval('[data-testid="train-resume"]', (e) => !e.hidden), "Resume is offered after the reload");
  const points = (await cardState(page)).points;
  check(points >= 2, `the loss curve kept ${points} points over the reload`);
  await shot(page, "static-train-2-reloaded");
}

// "Use the new model": the picker's model is the tab's, the story one of its test stories, and
// the attention view's weights those of the CLI's attend --json on the downloaded file.
async function useInViews(page) {
  await until(page, () => !document.querySelector('[data-testid="train-use"]').hidden, "the Use button");
  const name = await page.$eval('[data-testid="train-use"]', (e) => e.dataset.model);
  check(/^trained\/tab-run\d+-step\d+\.safetensors$/.test(name), `the tab's model joins the picker as ${name}`);
  await press(page, '[data-testid="train-use"]');
  await until(page, (n) => document.querySelector('[data-testid="model"]').value === n && document.querySelector('[data-testid="train-state"]').dataset.story === "test", "the views to read the tab's model", name);
  const text = await page.$eval('[data-testid="story"]', (e) => e.value);
  const pos = 9, head = 2;
  const cli = JSON.parse(execFileSync(want.cli[0], [...want.cli.slice(1), "attend", text, "--model", out, "--pos", String(pos), "--head", String(head), "--json"], { encoding: "utf8" }));
  const n = cli.tokens.length;
  await until(page, (n) => document.querySelectorAll('[data-testid="token"]').length === n, `the ${n} tokens of the CLI`, n);
  await press(page, `[data-testid="token"][data-pos="${pos}"]`);
  await until(page, (p) => document.querySelector(`[data-testid="token"][data-pos="${p}"].reading`), `position ${pos} reading`, pos);
  await press(page, `[data-testid="view-head-${head}"]`);
  const rows = await until(page, (h) => {
    const r = [...document.querySelectorAll('[data-testid="attn-row"]')];
    return r.length && r.every((x) => x.dataset.head === String(h)) && r.map((x) => ({ position: Number(x.dataset.position), weight: Number(x.dataset.weight) }));
  }, `the table of head ${head}`, head);
  const keys = cli.keys.filter((k) => k.head === head);
  const worst = largestDifference(rows, keys);
  check(rows.length === keys.length && worst <= 1e-12, `the tab's model in the attention view equals storylm attend --json on the downloaded file (${rows.length} rows, largest difference ${worst})`);
  await shot(page, "static-train-4-in-the-views");
  // a seeded generation on it: storylm generate's text, run from the source folder, where the
  // CLI learns names from data/stories.txt as the page's worker does
  const prompt = "Lily found a", count = 20, seed = 7;
  const cliText = execFileSync(want.cli[0], [...want.cli.slice(1), "generate", prompt, "--model", path.resolve(out), "-n", String(count), "--seed", String(seed)],
    { cwd: want.src, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  await page.$eval('[data-testid="story"]', (e, t) => { e.value = t; e.dispatchEvent(new Event("input")); }, prompt);
  await page.$eval("#gen-n", (e, v) => { e.value = v; }, String(count));
  await page.$eval("#gen-seed", (e, v) => { e.value = v; }, String(seed));
  await press(page, '[data-testid="gen-go"]');
  await until(page, () => { const s = document.querySelector('[data-testid="gen-out"]').dataset.state; return s !== "running" && s; }, "the generation to end");
  const written = await page.$eval('[data-testid="gen-out"]', (e) => e.textContent);
  check(written.trim() === cliText.trim(), `the tab's model writes storylm generate --seed ${seed}'s text on the downloaded file: "${written.trim()}"`);
  return name;
}

// A fine-tuning (the card's "start from") reloaded part way and resumed: its model must be
// node train --from's (tests/e2e_static_train.sh compares the file written to want.tune.out).
async function fineTuneOverReload(page) {
  const tune = want.tune;
  await setFields(page, tune);
  await press(page, '[data-testid="train-go"]');
  await reloadMidRun(page, tune, tune.eval_every);
  await press(page, '[data-testid="train-resume"]');
  const end = await until(page, () => { const e = document.querySelector('[data-testid="train-state"]'); return !["running", "stopped", undefined].includes(e.dataset.state) && e.dataset.state; }, "the fine-tuning to end");
  const s = await cardState(page);
  check(end === "done" && stepOf(s.text) === tune.steps, `the fine-tuning of ${tune.from}, reloaded and resumed, ends at step ${tune.steps}: "${s.text}"`);
  await download(page, tune.out);
}

// The keys of the browser's storage that the tab's training keeps its run in (0: none).
function keptKeys(page) {
  return page.evaluate(() => new Promise((resolve, reject) => {
    const r = indexedDB.open("storylm-train");
    r.onerror = () => reject(r.error);
    r.onsuccess = () => {
      const db = r.result;
      if (!db.objectStoreNames.contains("run")) { db.close(); resolve(0); return; }
      const q = db.transaction("run").objectStore("run").count();
      q.onsuccess = () => { db.close(); resolve(q.result); };
      q.onerror = () => reject(q.error);
    };
  }));
}

// Forget this run: the card idle, nothing left in the browser's storage, and after a reload
// neither the run nor its model.
async function forgetRun(page, name) {
  check(await keptKeys(page) > 0, "the run is in the browser's storage before Forget");
  await press(page, '[data-testid="train-forget"]');
  await until(page, () => document.querySelector('[data-testid="train-state"]').dataset.state === "idle", "the card idle after Forget");
  check(await keptKeys(page) === 0, "Forget this run leaves nothing in the browser's storage");
  await page.reload({ timeout: TIMEOUT });
  await until(page, () => document.querySelector('[data-testid="attn-row"]'), "the page to load after Forget");
  await until(page, () => document.querySelector('[data-testid="train-state"]').dataset.state === "idle", "the card idle after the reload");
  const left = await page.evaluate((n) => ({
    forget: !document.querySelector('[data-testid="train-forget"]').hidden,
    resume: !document.querySelector('[data-testid="train-resume"]').hidden,
    model: [...document.querySelectorAll('[data-testid="model"] option')].some((o) => o.value === n),
  }), name);
  check(!left.forget && !left.resume && !left.model, `after Forget and a reload no run is offered and ${name} is not in the picker`);
}

async function main() {
  const { browser, page } = await openPage(want.chromium);
  const problems = watchProblems(page, new URL(url).origin);
  await runChecks({ browser, problems, name: "static training", shoot: () => shot(page, "static-train-failure") }, async () => {
    await page.goto(url, { timeout: TIMEOUT });
    await until(page, () => document.querySelector('[data-testid="attn-row"]'), "the page to load");
    const note = await page.$('[data-testid="note-train-card"]:not([hidden])');
    check(!note, "the training card is offered on the static site");
    const box = await until(page, () => { const v = document.querySelector('[data-testid="train-stories"]').value; return v.startsWith("models/") && v; }, "the site's stories as the default");
    check(box === "models/tinystories-test.txt", `the default stories are the site's test stories (${box})`);
    await upload(page);
    await setFields(page);
    const t0 = Date.now();
    await press(page, '[data-testid="train-go"]');
    const stoppedAt = await stopInTheMiddle(page);
    await press(page, '[data-testid="train-resume"]');
    await reloadMidRun(page);
    await press(page, '[data-testid="train-resume"]');
    const end = await until(page, () => { const e = document.querySelector('[data-testid="train-state"]'); return !["running", "stopped", undefined].includes(e.dataset.state) && e.dataset.state; }, "the run to end");
    const s = await cardState(page);
    check(end === "done" && stepOf(s.text) === want.steps, `resumed from step ${stoppedAt} and after the reload, the run ends at step ${want.steps}: "${s.text}" (${Date.now() - t0} ms with the stop and the reload)`);
    check(s.points >= want.steps / want.eval_every, `the loss curve has ${s.points} points`);
    const heads = await until(page, () => { const g = document.querySelector('[data-testid="train-heads"] svg'); return g && g.getAttribute("data-step"); }, "the heads' panels");
    check(Number(heads) > 0, `the heads' weight by distance is drawn (step ${heads})`);
    await shot(page, "static-train-3-done");
    await download(page);
    const name = await useInViews(page);
    // reloaded once done, the page shows the run done and its model in the picker again
    await page.reload({ timeout: TIMEOUT });
    const again = await until(page, (n) => { const e = document.querySelector('[data-testid="train-state"]');
      return e.dataset.state === "done" && [...document.querySelectorAll('[data-testid="model"] option')].some((o) => o.value === n) && e.textContent; }, "the done run and its model after a reload", name);
    check(stepOf(again) === want.steps, `reloaded once done, the card shows "${again}" and the picker holds ${name}`);
    if (want.tune) await fineTuneOverReload(page);
    await forgetRun(page, name);
  });
}

main();
