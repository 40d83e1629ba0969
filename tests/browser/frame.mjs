// The frame the browser tests share: headless Chromium with one page of a desktop's size, the
// checks and waits that fail loudly, and the end of a run (on a failure a screenshot, the
// message, the page's problems and exit 1).
import puppeteer from "puppeteer-core";
import { createRequire } from "node:module";

export function fail(msg) { throw new Error(msg); }
export function check(ok, msg) { if (!ok) fail(msg); console.log("ok: " + msg); }

// The largest difference between the weights of the page's table (rows: {position, weight})
// and the CLI's (keys: {position, weight}); fails on a key the table has no row for.
export function largestDifference(rows, keys) {
  let worst = 0;
  for (const k of keys) {
    const r = rows.find((x) => x.position === k.position);
    if (!r) fail(`no row for position ${k.position}`);
    worst = Math.max(worst, Math.abs(r.weight - k.weight));
  }
  return worst;
}

// Waits (at most timeout ms, polling every 'every') until fn (run in the page) returns
// something truthy, and returns it; else fails naming what and the errors the page shows.
export async function until(page, fn, what, { timeout, every }, ...args) {
  try {
    const h = await page.waitForFunction(fn, { timeout, polling: every }, ...args);
    return await h.jsonValue();
  } catch (e) {
    const errors = await page.$$eval(".error:not([hidden])", (els) => els.map((x) => x.id + ": " + x.textContent)).catch(() => []);
    fail(`timed out waiting for ${what}` + (errors.length ? `; the page shows: ${errors.join(" | ")}` : ""));
  }
}

// axe-core (injected once a page) over the element of id root (the whole page: null) finds no
// serious or critical violation; else fails with the first three places of each.
export async function axe(page, what, root = null) {
  if (!(await page.evaluate(() => !!window.axe))) await page.addScriptTag({ path: createRequire(import.meta.url).resolve("axe-core/axe.min.js") });
  const v = await page.evaluate(async (root) => (await window.axe.run(root ? document.getElementById(root) : document, { resultTypes: ["violations"] })).violations
    .filter((x) => x.impact === "serious" || x.impact === "critical").map((x) => `${x.id} (${x.impact}): ${x.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`), root);
  check(v.length === 0, `${what}: axe-core finds no serious or critical violation${root ? " in the section" : ""}` + (v.length ? `: ${v.join(" | ")}` : ""));
}

// {browser, page}: Chromium (the test's executable) with a 1280 x 900 page open.
export async function openPage(chromium) {
  const browser = await puppeteer.launch({
    executablePath: chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  return { browser, page };
}

// The problems page has as it runs, gathered into the array returned: script errors, console
// errors, answers of 400 or more, failed requests, and fetches that leave origin (a worker's
// fetches are the page's too and must stay on it; the blob: URLs the page makes are its own).
export function watchProblems(page, origin) {
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  page.on("console", (m) => { if (m.type() === "error") problems.push("console: " + m.text()); });
  page.on("response", (r) => { if (r.status() >= 400) problems.push(`${r.status()} from ${r.url()}`); });
  page.on("requestfailed", (r) => problems.push("request failed: " + r.url()));
  page.on("request", (r) => { if (!r.url().startsWith(origin + "/") && !r.url().startsWith("blob:")) problems.push("fetched from outside: " + r.url()); });
  return problems;
}

// A failed check e: shoot() (the page as it was), the message and the problems the page had
// gathered, then Chromium closed and the test's exit 1.
async function failRun(browser, e, problems, shoot) {
  await shoot().catch(() => {});
  console.error("FAILED: " + e.message);
  if (problems.length) console.error(problems.join("\n"));
  await browser.close();
  process.exit(1);
}

// Runs checks (which throw at the first failed one); then the page must have had no problem
// (script errors, failed requests, fetches from outside) but those allowed(problem) lets pass.
// On success Chromium closes and the test named name says all passed; else failRun.
export async function runChecks({ browser, problems, name, shoot, allowed = () => false }, checks) {
  try {
    await checks();
    const real = problems.filter((p) => !allowed(p));
    if (real.length) throw new Error("the page had script errors, failed requests or outside fetches: " + real.join("; "));
    console.log("ok: no script errors, failed requests or outside fetches");
  } catch (e) {
    await failRun(browser, e, problems, shoot);
  }
  await browser.close();
  console.log(`${name}: all checks passed`);
}
