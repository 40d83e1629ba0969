// Drives the playground as a static site (scripts/build_web, served by a plain static file
// server, no storylm process) in headless Chromium: the page's requests answered by its Web
// Worker (web/worker.js, storylm's server code in WebAssembly). Checks what the page shows
// against the CLI's --json, which tests/e2e_static_site.sh computed beforehand.
//
//   node static_site.mjs URL EXPECT.json SHOTS_DIR
//
// EXPECT.json: {chromium, text, pos, head, attend (storylm attend --pos --head --json),
// attend_wide (attend --pos --wide --json), exact (1: computed by the WebAssembly build's own
// CLI, the same bits; 0: the native build's, whose kernels differ in the last bits),
// generate: [{prompt, max_tokens, seed, text (storylm generate's output)}], models: the files
// the picker must list, first_ms: the most the first attention view may take}. Prints one
// line a check and the time to the first attention view; exits 1 at the first failed check.
import fs from "node:fs";
import path from "node:path";
import { check, fail, largestDifference, openPage, runChecks, until as waitFor, watchProblems } from "./frame.mjs";
import { press } from "./clicks.mjs";

const [url, expectFile, shots] = process.argv.slice(2);
const want = JSON.parse(fs.readFileSync(expectFile, "utf8"));
const TIMEOUT = 180000; // generous: the machine may be loaded; only the first view's time is reported
const TOLERANCE = want.exact ? 1e-12 : 1e-5; // another build's kernels: the same weights to float precision

async function shot(page, name) {
  const file = path.join(shots, name + ".png");
  await page.screenshot({ path: file, fullPage: false });
  console.log("screenshot: " + file);
}

// Waits until fn (run in the page) returns something truthy; returns it.
const until = (page, fn, what, ...args) => waitFor(page, fn, what, { timeout: TIMEOUT, every: 20 }, ...args);

// The rows of the attention table: one head's ({position, weight}) or every head's (wide).
const readRows = (page, head) => until(page, (h) => {
  const r = [...document.querySelectorAll('[data-testid="attn-row"]')];
  if (!r.length || r.some((x) => (h < 0 ? x.dataset.head !== undefined : x.dataset.head !== String(h)))) return null;
  return r.map((x) => ({ position: Number(x.dataset.position), weight: Number(x.dataset.weight),
    weights: [...x.querySelectorAll("[data-head]")].map((c) => ({ head: Number(c.dataset.head), weight: Number(c.dataset.weight) })) }));
}, head < 0 ? "the table of every head" : `the table of head ${head}`, head);

async function typeStory(page) {
  await page.$eval('[data-testid="story"]', (e, t) => { e.value = t; e.dispatchEvent(new Event("input")); }, want.text);
  const n = want.attend.tokens.length;
  await until(page, (n) => document.querySelectorAll('[data-testid="token"]').length === n &&
    document.querySelector(`[data-testid="token"][data-pos="${n - 1}"].reading`), `the ${n} tokens of the story`, n);
  const pieces = await page.$$eval('[data-testid="token"]', (els) => els.map((e) => e.textContent));
  check(JSON.stringify(pieces) === JSON.stringify(want.attend.tokens.map((t) => t.token)), `the worker cuts the story into the CLI's ${n} tokens`);
}

async function checkAttention(page) {
  await press(page, `[data-testid="token"][data-pos="${want.pos}"]`);
  await until(page, (p) => document.querySelector(`[data-testid="token"][data-pos="${p}"].reading`), `position ${want.pos} reading`, want.pos);
  await press(page, `[data-testid="view-head-${want.head}"]`);
  const rows = await readRows(page, want.head);
  const keys = want.attend.keys.filter((k) => k.head === want.head);
  check(rows.length === keys.length && rows.length === want.pos + 1, `the table has a row for each of the ${want.pos + 1} tokens position ${want.pos} reads`);
  const worst = largestDifference(rows, keys);
  check(worst <= TOLERANCE, `head ${want.head}'s weights from the worker equal storylm attend --json (largest difference ${worst})`);
  await shot(page, "static-1-attention");
  await press(page, '[data-testid="view-all"]');
  const cells = await readRows(page, -1);
  let worstAll = 0;
  for (const k of want.attend_wide.keys) {
    const r = cells.find((x) => x.position === k.position);
    if (!r || r.weights.length !== 8) fail(`no row of 8 weights for position ${k.position}`);
    for (const c of r.weights) worstAll = Math.max(worstAll, Math.abs(c.weight - k["weight_" + c.head]));
  }
  check(cells.length === want.attend_wide.keys.length && worstAll <= TOLERANCE,
    `all 8 heads' weights from the worker equal storylm attend --wide --json (largest difference ${worstAll})`);
}

// A generation, answered by the worker in one piece: the text of storylm generate --seed,
// names written as the CLI writes them (the worker learns them from the same stories).
async function checkGenerate(page, g) {
  await page.$eval('[data-testid="story"]', (e, t) => { e.value = t; e.dispatchEvent(new Event("input")); }, g.prompt);
  await page.$eval("#gen-n", (e, v) => { e.value = v; }, String(g.max_tokens));
  await page.$eval("#gen-seed", (e, v) => { e.value = v; }, String(g.seed));
  await press(page, '[data-testid="gen-go"]');
  const st = await until(page, () => { const s = document.querySelector('[data-testid="gen-out"]').dataset.state; return s !== "running" && s; }, "the generation to end");
  const text = await page.$eval('[data-testid="gen-out"]', (e) => e.textContent);
  check(st === "done", `the generation ended with its done event (state ${st})`);
  check(text.trim() === g.text.trim(), `the worker's text equals storylm generate --seed ${g.seed}'s, names and all: "${text.slice(-60)}"`);
}

// A model picked does not wait behind the views of the one picked before, which the worker
// would compute first (it answers one request at a time): the page drops those still waiting.
// A model with heads is picked, then, as soon as its distance scores are drawn (its
// measurements over the test stories still to come), a model without heads: the second's
// first view must come sooner than the first's statistics alone take (measured after, by
// picking the first again), which it waited for when every request was computed in turn.
async function checkSwitch(page) {
  const models = await page.evaluate(() => window.playground.state.models.map((m) => ({ path: m.path, heads: m.heads })));
  const start = await page.evaluate(() => window.playground.state.model);
  const slow = models.find((m) => m.heads > 0 && m.path !== start), quick = models.find((m) => m.heads === 0);
  if (!slow || !quick) fail("the site has no second model with heads and no model without");
  await page.select("#model", slow.path);
  await until(page, (m) => document.querySelector('[data-testid="from-dist-card"]').dataset.model === m, `${slow.path}'s distance scores`, slow.path);
  const t0 = Date.now();
  await page.select("#model", quick.path);
  await until(page, (m) => window.playground.state.model === m && document.querySelector('[data-testid="from-trace-card"]').dataset.model === m,
    `${quick.path}'s guesses`, quick.path);
  const switched = Date.now() - t0;
  const t1 = Date.now();
  await page.select("#model", slow.path);
  await until(page, (m) => window.playground.state.model === m && !/^Measuring/.test(document.querySelector('[data-testid="stats-corr"]').textContent),
    `${slow.path}'s statistics`, slow.path);
  const stats = Date.now() - t1;
  check(switched < stats, `picked right after ${slow.path}, ${quick.path} shows its first view in ${switched} ms, ` +
    `without waiting for the ${stats} ms of ${slow.path}'s statistics`);
}

// Every model of the picker loads in the worker: its distance scores (or, with no heads, its
// next-token guesses) drawn, no error shown.
async function checkModels(page) {
  const listed = await page.$$eval("#model option", (els) => els.map((e) => e.value));
  check(want.models.every((m) => listed.includes(m)), `the picker lists the site's models: ${listed.join(", ")}`);
  for (const m of [...listed.slice(1), listed[0]]) {
    const t0 = Date.now();
    await page.select("#model", m);
    const how = await until(page, (m) => {
      const s = window.playground.state;
      if (s.model !== m) return null;
      const dist = document.querySelector('[data-testid="from-dist-card"]');
      if (dist && dist.dataset.model === m) return "its distance scores";
      const guesses = document.querySelector('[data-testid="from-trace-card"]');
      if (s.heads === 0 && guesses && guesses.dataset.model === m) return "its guesses (no heads)";
      return null;
    }, `the model ${m} to load`, m);
    const errors = await page.$$eval(".error:not([hidden])", (els) => els.map((x) => x.id + ": " + x.textContent));
    check(errors.length === 0, `${m} loads in the worker: ${how} drawn in ${Date.now() - t0} ms` + (errors.length ? `; errors: ${errors.join(" | ")}` : ""));
  }
}

async function main() {
  const { browser, page } = await openPage(want.chromium);
  const problems = watchProblems(page, new URL(url).origin);
  await runChecks({ browser, problems, name: "static site", shoot: () => shot(page, "static-failure") }, async () => {
      const t0 = Date.now();
      await page.goto(url, { timeout: TIMEOUT });
      await until(page, () => document.querySelector('[data-testid="attn-row"]'), "the first attention view");
      const first = Date.now() - t0;
      console.log(`time to the first attention view: ${first} ms (from opening the page)`);
      check(first <= want.first_ms, `the first attention view within ${want.first_ms} ms`);
      check(await page.evaluate(() => document.querySelector('meta[name="storylm-mode"]').content) === "static", "the page is marked as the static site");
      await shot(page, "static-0-loaded");
      // training runs in the tab (tests/browser/static_train.mjs): the card has no note sending it to a server
      check(!(await page.$('[data-testid="note-train-card"]:not([hidden])')), "the training card is offered, not sent to storylm serve");
      const stories = await until(page, () => document.querySelectorAll('[data-testid="story-pick"] option').length - 1, "the test stories in the picker");
      check(stories >= 10, `the story picker offers the site's ${stories} test stories`);
      await typeStory(page);
      await checkAttention(page);
      for (const g of want.generate) await checkGenerate(page, g);
      await checkSwitch(page);
      await checkModels(page);
      await shot(page, "static-2-models");
  });
}

main();
