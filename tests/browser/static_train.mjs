// Training in the tab on the static site (scripts/build_web, served by a plain static file
// server, no storylm process), in headless Chromium: a stories file uploaded through the
// training card, a run of a fixed seed started, stopped in the middle (the steps must stay put),
// resumed to its end, the loss curve and the heads drawn as it went, and the model downloaded.
// tests/e2e_static_train.sh compares the downloaded bytes with the node build's own train.
//
//   node static_train.mjs URL EXPECT.json SHOTS_DIR OUT.safetensors
//
// EXPECT.json: {chromium, stories (the file to upload), steps, seed, lr, eval_every}. Writes the
// downloaded model to OUT.safetensors; exits 1 at the first failed check.
import fs from "node:fs";
import path from "node:path";
import { check, openPage, runChecks, until as waitFor, watchProblems } from "./frame.mjs";
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

async function setFields(page) {
  for (const [id, v] of [["train-steps", want.steps], ["train-seed", want.seed], ["train-lr", want.lr], ["train-every", want.eval_every]])
    await page.$eval(`[data-testid="${id}"]`, (e, v) => { e.value = v; }, String(v));
  await page.select('[data-testid="train-from"]', "");
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

// The downloaded model's bytes (the link's blob), written to out.
async function download(page) {
  const link = await until(page, () => { const a = document.querySelector('[data-testid="train-download"]'); return !a.hidden && a.href.startsWith("blob:") && { href: a.href, name: a.download }; }, "the download link");
  check(link.name === "model.safetensors", `the download is named as storylm train names its model (${link.name})`);
  const b64 = await page.evaluate(async (href) => {
    const bytes = new Uint8Array(await (await fetch(href)).arrayBuffer());
    let s = "";
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(s);
  }, link.href);
  fs.writeFileSync(out, Buffer.from(b64, "base64"));
  console.log(`downloaded ${fs.statSync(out).size} bytes to ${out}`);
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
    const end = await until(page, () => { const e = document.querySelector('[data-testid="train-state"]'); return !["running", "stopped", undefined].includes(e.dataset.state) && e.dataset.state; }, "the run to end");
    const s = await cardState(page);
    check(end === "done" && stepOf(s.text) === want.steps, `resumed from step ${stoppedAt}, the run ends at step ${want.steps}: "${s.text}" (${Date.now() - t0} ms with the stop)`);
    check(s.points >= want.steps / want.eval_every, `the loss curve has ${s.points} points`);
    const heads = await until(page, () => { const g = document.querySelector('[data-testid="train-heads"] svg'); return g && g.getAttribute("data-step"); }, "the heads' panels");
    check(Number(heads) > 0, `the heads' weight by distance is drawn (step ${heads})`);
    await shot(page, "static-train-2-done");
    await download(page);
  });
}

main();
