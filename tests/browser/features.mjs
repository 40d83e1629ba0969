// The page's Features section in headless Chromium, for a model with an SAE beside it: at each
// width the panel lists the CLI's latents (sae features --json: latent, density, each context
// token's value and the firing one), hover and the keyboard (Tab to a context, the arrow keys
// along it) say a token's value, axe-core finds no serious or critical violation, the page does
// not scroll sideways; a model without an SAE says so and offers no button.
//
//   node features.mjs URL CHROMIUM SHOTS_DIR SAE_MODEL PLAIN_MODEL CLI.json WIDTH...
// One line a check; exit 1 at the first failed one.
import puppeteer from "puppeteer-core";
import { axe, check, fail, until as waitFor } from "./frame.mjs";
import fs from "node:fs";
import path from "node:path";

const [url, chromium, shots, saeModel, plainModel, cliFile, ...widths] = process.argv.slice(2);
const cli = JSON.parse(fs.readFileSync(cliFile, "utf8"));
const TIMEOUT = 180000; // a wait, not a measure: the machine may be loaded, the build sanitized


const until = (page, fn, what, ...args) => waitFor(page, fn, what, { timeout: TIMEOUT, every: 100 }, ...args);

// The panel's latents, contexts and tokens as the page holds them.
const shown = (page) => page.$$eval('[data-testid="feature"]', (items) => items.map((li) => ({
  latent: Number(li.dataset.latent), density: Number(li.dataset.density),
  contexts: [...li.querySelectorAll('[data-testid="features-context"]')].map((p) => ({
    story: Number(p.dataset.story), position: Number(p.dataset.position),
    tokens: [...p.querySelectorAll('[data-testid="features-token"]')].map((t) => ({
      position: Number(t.dataset.position), value: Number(t.dataset.value), fire: t.classList.contains("fire"), text: t.textContent })),
  })),
})));

function sameAsCli(got, what) {
  check(got.length === cli.features.length, `${what}: ${got.length} latents listed, as sae features --json`);
  got.forEach((f, i) => {
    const want = cli.features[i];
    if (f.latent !== want.latent || f.density !== want.density) fail(`${what}: latent ${f.latent} (${f.density}) where the CLI has ${want.latent} (${want.density})`);
    f.contexts.forEach((c, k) => {
      const wc = want.contexts[k];
      if (c.story !== wc.story || c.position !== wc.position || c.tokens.length !== wc.tokens.length) fail(`${what}: latent ${f.latent}'s context ${k} differs`);
      c.tokens.forEach((t, j) => {
        const wt = wc.tokens[j];
        if (t.position !== wt.position || t.value !== wt.value || t.fire !== (wt.position === wc.position))
          fail(`${what}: latent ${f.latent}, story ${c.story}, position ${t.position}: the page shows ${t.value}, the CLI ${wt.value}`);
      });
    });
  });
  console.log(`ok: ${what}: every latent's density and every context token's value are the CLI's`);
}


async function atWidth(browser, width) {
  const page = await browser.newPage();
  await page.setViewport({ width, height: 900 });
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  page.on("request", (r) => { if (!r.url().startsWith(url)) problems.push("fetched from outside: " + r.url()); });
  const what = `at ${width} px`;
  try {
    await page.goto(url, { waitUntil: "networkidle0", timeout: TIMEOUT });
    await until(page, () => document.body.dataset.ready === "1", "the page to load");
    await page.select('[data-testid="model"]', saeModel);
    await until(page, () => !document.querySelector('[data-testid="features-go"]').disabled, "the Features button");
    await page.click('[data-testid="features-go"]');
    await until(page, () => document.querySelectorAll('[data-testid="feature"]').length > 0, "the features");
    sameAsCli(await shown(page), what);
    const f0 = cli.features[0], c0 = f0.contexts[0], firing = c0.tokens.findIndex((t) => t.position === c0.position);

    // hover: the pointer on the firing token says its value
    const tok = (await page.$$('[data-testid="features-context"]'))[0];
    const spans = await tok.$$('[data-testid="features-token"]');
    await spans[firing].hover();
    const hover = await page.$eval('[data-testid="features-hover"]', (e) => e.textContent);
    check(hover.includes(c0.tokens[firing].value.toFixed(3)) && hover.includes(`latent ${f0.latent}`),
      `${what}: hovering the firing token says "${hover}"`);

    // the keyboard: Tab from the button reaches the first context's first token, the arrows move along it
    await page.focus('[data-testid="features-go"]');
    await page.keyboard.press("Tab");
    let focus = await page.evaluate(() => [document.activeElement.dataset.testid, Number(document.activeElement.dataset.position)]);
    check(focus[0] === "features-token" && focus[1] === c0.tokens[0].position, `${what}: Tab reaches the first context's first token`);
    for (let i = 0; i < firing; i++) await page.keyboard.press("ArrowRight");
    focus = await page.evaluate(() => Number(document.activeElement.dataset.position));
    const said = await page.$eval('[data-testid="features-hover"]', (e) => e.textContent);
    check(focus === c0.position && said.includes(c0.tokens[firing].value.toFixed(3)), `${what}: the arrow keys reach the firing token and say "${said}"`);
    await page.keyboard.press("Tab");
    focus = await page.evaluate(() => Number(document.activeElement.dataset.position));
    check(focus === f0.contexts[1 % f0.contexts.length].tokens[0].position || f0.contexts.length === 1, `${what}: one tab stop a context`);

    const [sw, cw] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    check(sw <= cw, `${what}: the page is ${sw} px wide at ${cw} (no sideways scroll)`);
    await axe(page, what, "features-card");
    await page.$eval("#heads-bar", (e) => { e.style.position = "static"; }); // not pinned over the pictures
    await (await page.$("#features-card")).screenshot({ path: path.join(shots, `features-${width}.png`) });
    await (await page.$('[data-testid="feature"]')).screenshot({ path: path.join(shots, `features-${width}-latent.png`) });
    await page.$eval("#heads-bar", (e) => { e.style.position = ""; });

    // a model without an SAE: said, no button
    await page.select('[data-testid="model"]', plainModel);
    await until(page, () => document.querySelector('[data-testid="features-go"]').disabled &&
      /no SAE beside it/.test(document.querySelector('[data-testid="features-status"]').textContent) &&
      !document.querySelector('[data-testid="feature"]'), "the panel of a model without an SAE");
    console.log(`ok: ${what}: a model without an SAE says so`);
    check(problems.length === 0, `${what}: no script errors or outside fetches` + (problems.length ? ": " + problems.join("; ") : ""));
  } catch (e) {
    await page.screenshot({ path: path.join(shots, `features-${width}-failure.png`), fullPage: true }).catch(() => {});
    throw e;
  } finally { await page.close(); }
}

async function main() {
  const browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"] });
  try {
    for (const w of widths) await atWidth(browser, Number(w));
  } catch (e) {
    console.error("FAILED: " + e.message);
    await browser.close();
    process.exit(1);
  }
  await browser.close();
  console.log("features: all checks passed");
}

main();
