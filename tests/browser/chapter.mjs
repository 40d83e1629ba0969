// Drives every section of the playground page (the chapter, whole) on every model of the
// picker at one width, in headless Chromium: no horizontal scroll, no script error, no error
// banner, no serious or critical accessibility violation (axe-core, injected), and, with
// --numbers, each section's numbers against the CLI's --json (storylm repeats, stats, guess,
// lookup; Secrets 1-4 run on every model; --exact: the same doubles, not within 1e-9) and the toy
// against seed 000's worked example.
//
//   node chapter.mjs URL WIDTH STORYLM CHROMIUM SHOTS_DIR [--numbers [--exact]]
// Run in the server's folder (its models/ and data/stories.txt; for the static site, a folder
// with the site's models/ and the stories its data/stories.txt.gz holds). STORYLM: the CLI
// whose numbers the page's must be (the native binary for storylm serve; for the static site,
// the WebAssembly build's, whose kernels its worker runs). One line a check; exit 1 at the
// first failed one.
import puppeteer from "puppeteer-core";
import { axe, check, fail, until as waitFor } from "./frame.mjs";
import { execFileSync } from "node:child_process";
import path from "node:path";

const [url, widthArg, storylm, chromium, shots, ...flags] = process.argv.slice(2);
const width = Number(widthArg), numbers = flags.includes("--numbers"), exact = flags.includes("--exact");
const TIMEOUT = 180000; // a wait, not a measure: sanitized builds on a loaded machine are slow
const QUESTION = "NAME had a red ball. She liked to throw it high in the sky. One day the ball went over the fence.";

const cli = (...args) => JSON.parse(execFileSync(storylm, [...args, "--threads", "1", "--json"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
// Within 1e-9, or (--exact) the same double; a number the page does not show is NaN, close to nothing.
const TOLERANCE = exact ? 0 : 1e-9;
const close = (a, b, what) => { if (!(Math.abs(Number(a) - Number(b)) <= TOLERANCE)) fail(`${what}: the page shows ${a}, the CLI ${b}`); };

const until = (page, fn, what, ...args) => waitFor(page, fn, what, { timeout: TIMEOUT, every: 100 }, ...args);

// Every section drawn for the model picked: its numbers from this model (each card's "Numbers
// from" line names it), or its note saying why the section does not apply.
async function sectionsDrawn(page, m) {
  return until(page, (m) => {
    const from = (card) => (document.querySelector(`[data-testid="from-${card}"]`) || {}).dataset?.model === m.path;
    const heads = m.heads > 0, txt = (id) => document.getElementById(id).textContent;
    const ok = {
      problem: from("problem-card") && document.getElementById("problem-count").dataset.far !== undefined,
      diff: heads ? from("diff-card") : /no heads/.test(txt("diff-status")),
      toy: !!document.querySelector('[data-testid="toy-answer"]'),
      film: heads ? from("film-card") && !!document.querySelector('[data-testid="film-row"]') : /no heads/.test(txt("film-says")),
      question: document.querySelectorAll('[data-testid="question-model"]').length >= 1 &&
        [...document.querySelectorAll('[data-testid="question-model"]')].some((e) => e.dataset.model === m.path),
      tool1: heads ? !/Measuring/.test(txt("stats-corr")) && (from("attend-card") || m.layers > 1) : true,
      tool2: heads ? from("dist-card") : true,
      tool3: from("trace-card") || (m.layers > 1 && m.arch !== "window8"),
      loss: document.querySelector('[data-testid="loss"]').dataset.loss !== undefined,
      tf: !!document.querySelector("#tf-anim svg") && document.querySelectorAll('[data-testid="tf-size-row"]').length >= 5,
      words: document.querySelectorAll(".words dt").length === 11,
      algo: document.querySelectorAll('[data-testid="algo-piece"]').length >= 1,
    };
    const missing = Object.keys(ok).filter((k) => !ok[k]);
    return missing.length ? null : "all";
  }, `every section of ${m.path}`, m);
}

async function noScrollNoErrors(page, what) {
  const [sw, cw, wide] = await page.evaluate(() => {
    const W = document.documentElement.clientWidth, out = [];
    for (const e of document.querySelectorAll("body *")) {
      const r = e.getBoundingClientRect();
      let inside = false;
      for (let p = e.parentElement; p && !inside; p = p.parentElement) inside = /auto|scroll|hidden/.test(getComputedStyle(p).overflowX);
      if (r.width && r.right > W + 0.5 && !inside) out.push(`${e.tagName.toLowerCase()}#${e.id}.${String(e.className.baseVal ?? e.className)} ends at ${Math.round(r.right)}`);
    }
    return [document.documentElement.scrollWidth, W, out.slice(0, 4)];
  });
  if (sw > cw || wide.length) fail(`${what}: the page is ${sw} px wide at ${cw}` + (wide.length ? `; too wide: ${wide.join(", ")}` : ""));
  const errors = await page.$$eval(".error:not([hidden])", (els) => els.map((x) => x.id + ": " + x.textContent));
  if (errors.length) fail(`${what}: error banners: ${errors.join(" | ")}`);
}

// At this width: chart text at least 11 px as drawn, the pinned bar at most 15% of the height,
// touch targets on a phone at least 24 px.
async function layout(page, what) {
  const r = await page.evaluate(() => {
    let small = [];
    for (const t of document.querySelectorAll(".chart svg text, #tf-anim svg text, .toy-plane svg text")) {
      const svg = t.ownerSVGElement, vb = svg.viewBox.baseVal, sw = svg.getBoundingClientRect().width;
      if (!vb || !vb.width || !sw || !t.getClientRects().length) continue;
      const px = parseFloat(getComputedStyle(t).fontSize) * sw / vb.width;
      if (px < 11) small.push(`${t.textContent.slice(0, 20)} ${px.toFixed(1)}px`);
    }
    const bar = document.getElementById("heads-bar").getBoundingClientRect().height;
    const targets = [...document.querySelectorAll("button, select, input, .tok, a.term")].filter((e) => e.getClientRects().length && getComputedStyle(e).visibility !== "hidden")
      .map((e) => [e, e.getBoundingClientRect()]).filter(([, b]) => b.width && (b.height < 23.5 || b.width < 23.5))
      .map(([e, b]) => `${e.tagName.toLowerCase()}#${e.id}[${e.dataset.testid || e.textContent.slice(0, 12)}] ${Math.round(b.width)}x${Math.round(b.height)}`);
    return { small: small.slice(0, 5), bar, H: window.innerHeight, targets: targets.slice(0, 5) };
  });
  if (r.small.length) fail(`${what}: chart text below 11 px: ${r.small.join(", ")}`);
  if (r.bar > 0.15 * r.H + 1) fail(`${what}: the pinned bar is ${Math.round(r.bar)} px of ${r.H}`);
  if (width <= 400 && r.targets.length) fail(`${what}: touch targets below 24 px: ${r.targets.join(", ")}`);
}


// ---------- the numbers of each section against the CLI ----------

async function checkNumbers(page, m) {
  const story = Number(await page.$eval('[data-testid="problem-pick"]', (e) => e.value || 0));
  const rep = cli("repeats", "data/stories.txt", "--model", m.path, "--story", String(story));
  const file = await page.$eval("#story-file", (e) => e.textContent); // "(30 from stories.txt)"
  if (file !== `(${rep.stories.test_stories} from ${path.basename(rep.stories.file)})`)
    fail(`${m.name}: the page's test stories are ${file}, the CLI's the ${rep.stories.test_stories} of ${rep.stories.file}`);
  const shown = await page.evaluate(() => ({ far: document.getElementById("problem-count").dataset.far, share: document.getElementById("problem-share").dataset.share,
    marks: [...document.querySelectorAll('[data-testid="problem-token"]')].map((e) => [Number(e.dataset.pos), e.dataset.far, e.dataset.name]) }));
  close(shown.far, rep.far_repeats, `${m.name}: the problem's marked tokens`);
  close(shown.share, rep.test.far_repeat_share, `${m.name}: the problem's share over the test stories`);
  for (const [p, far, name] of shown.marks) {
    const t = rep.tokens[p];
    if (String(t.far) !== far || String(t.name) !== name) fail(`${m.name}: token ${p} is marked far=${far} name=${name} on the page, ${t.far} ${t.name} by repeats`);
  }
  let line = `${m.name}: the problem equals repeats --json (${rep.far_repeats} marked, ${(100 * rep.test.far_repeat_share).toFixed(1)}% over the test stories)`;
  if (m.heads > 0) {
    let st = null;
    try { st = cli("stats", "data/stories.txt", "--model", m.path); } catch (e) { st = null; }
    const corr = await page.$eval('[data-testid="stats-corr"]', (e) => ({ ...e.dataset, text: e.textContent }));
    if (st) {
      close(rep.test.far_repeat_share, st.far_repeat_share, `${m.name}: repeats' share against stats'`);
      close(corr.lo, Math.min(...st.heads.map((h) => h.correlation)), `${m.name}: Tool 1's lowest correlation`);
      close(corr.hi, Math.max(...st.heads.map((h) => h.correlation)), `${m.name}: Tool 1's highest correlation`);
      const cl = await page.$eval('[data-testid="stats-closest"]', (e) => ({ ...e.dataset }));
      close(cl.lo, Math.min(...st.heads.map((h) => h.closest_not_largest)), `${m.name}: Tool 1's lowest 'closest is not largest'`);
      line += `; Tool 1's statistics equal stats --json and its far repeats equal stats'`;
    } else check(/not measured/.test(corr.text), `${m.name}: Tool 1 says why its statistics are not measured`);
    // the film: every row against lookup --json at the page's position and head
    const [pos, g] = await page.evaluate(() => [document.getElementById("film-pos").value, Number(document.getElementById("film-head").value)]);
    const story = await page.evaluate((k) => window.playground.state.tests[k].text, Number(await page.$eval('[data-testid="problem-pick"]', (e) => e.value || 0)));
    const look = cli("lookup", story, "--model", m.path, "--pos", pos, "--head", String(g % m.heads), "--layer", String(Math.floor(g / m.heads) + 1));
    const rows = await page.$$eval('[data-testid="film-row"]', (els) => els.map((e) => ({ ...e.dataset })));
    check(rows.length === look.keys.length, `${m.name}: the film shows the ${look.keys.length} keys position ${pos} reads`);
    look.keys.forEach((k, i) => { for (const f of ["dot", "score", "weight"]) close(rows[i][f], k[f], `${m.name}: the film's row ${i} ${f}`); close(rows[i].distanceScore, k.distance_score, `${m.name}: row ${i} distance score`); });
    const blend = JSON.parse(await page.$eval('[data-testid="film-blend"]', (e) => e.dataset.values));
    blend.forEach((x, i) => close(x, look.reading[0].blend[i], `${m.name}: the film's blend ${i}`));
    line += `; the film equals lookup --json (position ${pos}, head ${g})`;
  }
  // the question: each network's guesses and the name's probability and rank
  const cards = await page.$$eval('[data-testid="question-model"]', (els) => els.map((e) => ({ model: e.dataset.model, p: e.dataset.probability, rank: e.dataset.rank,
    guesses: [...e.querySelectorAll('[data-testid="question-guess"]')].map((g) => [g.dataset.token, g.dataset.probability]) })));
  for (const c of cards) {
    const g = cli("guess", QUESTION.replace("NAME", "Lily"), "data/stories.txt", "--model", c.model, "--word", "lily", "--top-k", "5");
    close(c.p, g.word.probability, `${m.name}: the question's p(lily) on ${c.model}`);
    close(c.rank, g.word.rank, `${m.name}: the question's rank of lily on ${c.model}`);
    g.guesses.forEach((x, i) => { if (c.guesses[i][0] !== x.token) fail(`${c.model}: guess ${i} ${c.guesses[i][0]} vs ${x.token}`); close(c.guesses[i][1], x.probability, `${c.model}: guess ${i}`); });
  }
  console.log(`ok: ${line}; the question equals guess --json on ${cards.map((c) => c.model.split("/").pop()).join(" and ")}`);
}

// Secrets 1-4 run on the model: each draws its numbers (or says it does not apply).
async function secrets(page, m) {
  const press = async (id) => { await page.$eval(`[data-testid="${id}"]`, (e) => e.scrollIntoView({ block: "center" })); await page.click(`[data-testid="${id}"]`); };
  if (m.heads > 0) {
    await press("jobs-go");
    await until(page, () => document.querySelector('[data-testid="jobs-grid"]'), `${m.name}: Secret 1's moments`);
    await press("ablate-go");
    await until(page, (n) => document.querySelectorAll('[data-testid="ablate-row"]').length === n && /next tokens/.test(document.getElementById("ablate-status").textContent), `${m.name}: Secret 3's ranking`, m.layers * m.heads);
  }
  await press("swap-go");
  await until(page, () => document.querySelector('[data-testid="swap-row"]') || document.getElementById("swap-out").textContent, `${m.name}: Secret 2`);
  await press("pieces-go");
  await until(page, () => document.querySelector('[data-testid="pieces-model"]'), `${m.name}: Secret 4`);
  const moments = m.heads > 0 ? await page.$eval('[data-testid="jobs-grid"]', (e) => e.dataset.moments) : 0;
  console.log(`ok: ${m.name}: Secrets 1-4 drawn${m.heads > 0 ? ` (Secret 1: ${moments} moments side by side)` : " (window8: Secrets 2 and 4)"}`);
}

// The toy against seed 000, section 3: query (2,0) -> shares 0.446, 0.108, 0.446, answer (1.337, 0.663);
// all three queries -> the 3x3 matrix.
async function checkToy(page) {
  await page.click('[data-testid="toy-seed"]');
  const got = await page.evaluate(() => ({
    shares: [0, 1, 2].map((j) => Number(document.querySelector(`[data-testid="toy-share-${j}"]`).dataset.value)),
    answer: JSON.parse(document.querySelector('[data-testid="toy-answer"]').dataset.value),
    matrix: [...document.querySelectorAll('[data-testid="toy-cell"]')].map((c) => Number(c.dataset.value)) }));
  const r3 = (xs) => xs.map((x) => x.toFixed(3)).join(" ");
  check(r3(got.shares) === "0.446 0.108 0.446" && r3(got.answer) === "1.337 0.663", `the toy's worked example: shares ${r3(got.shares)}, answer (${r3(got.answer)}), as seed 000 works them by hand`);
  check(r3(got.matrix) === "0.446 0.108 0.446 0.108 0.446 0.446 0.248 0.248 0.503", `all three queries give seed 000's matrix: ${r3(got.matrix)}`);
  // dragging an arrow recomputes every number
  const tip = await page.$('[data-testid="toy-tip-k1"]');
  const b = await tip.boundingBox();
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2);
  await page.mouse.down(); await page.mouse.move(b.x + b.width / 2 + 40, b.y + b.height / 2 + 20, { steps: 4 }); await page.mouse.up();
  const after = await page.evaluate(() => Number(document.querySelector('[data-testid="toy-share-1"]').dataset.value));
  check(Math.abs(after - got.shares[1]) > 1e-3, `dragging key 2 changes its share (${got.shares[1].toFixed(3)} -> ${after.toFixed(3)})`);
  await page.click('[data-testid="toy-chapter"]');
}

// Clearing the story clears its tokens, the loss and the guesses; typing it again brings them back.
async function checkClear(page) {
  const text = await page.$eval('[data-testid="story"]', (e) => e.value);
  await page.$eval('[data-testid="story"]', (e) => { e.value = ""; e.dispatchEvent(new Event("input")); });
  await until(page, () => !document.querySelector('[data-testid="token"]') && !document.querySelector('[data-testid="guess"]') &&
    document.querySelector('[data-testid="loss"]').dataset.loss === undefined && !document.querySelector('[data-testid="loss"]').textContent, "the tokens, loss and guesses of a cleared story to go");
  console.log("ok: clearing the story clears its tokens, the loss and the guesses");
  await page.$eval('[data-testid="story"]', (e, t) => { e.value = t; e.dispatchEvent(new Event("input")); }, text);
  await until(page, () => document.querySelector('[data-testid="guess"]') && document.querySelector('[data-testid="loss"]').dataset.loss !== undefined, "the story's views again");
}

async function main() {
  const browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"] });
  const page = await browser.newPage();
  await page.setViewport({ width, height: width <= 400 ? 850 : 900 });
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  // a request refused is reported with its address (stats refuses a model it is not written for,
  // which the page says in Tool 1: that answer is expected), not as the console's bare line
  page.on("console", (msg) => { if (msg.type() === "error" && !/^Failed to load resource/.test(msg.text())) problems.push("console: " + msg.text()); });
  page.on("response", (r) => { if (r.status() >= 400 && !r.url().endsWith("/api/stats")) problems.push(`${r.status()} from ${r.url()}`); });
  page.on("request", (r) => { if (!r.url().startsWith(url)) problems.push("fetched from outside: " + r.url()); });
  try {
    await page.goto(url, { waitUntil: "networkidle0", timeout: TIMEOUT });
    await until(page, () => document.body.dataset.ready === "1", "the page to load");
    const models = await page.evaluate(() => window.playground.state.models.map((m) => ({ path: m.path, name: m.name, arch: m.arch, layers: m.layers, heads: m.heads })));
    check(models.length >= 3, `at ${width} px, the picker lists ${models.length} models`);
    if (numbers) {
      // once the model in view has drawn every section: answers arriving later (the static site's
      // worker is slower than a server) would move the toy under the mouse while it drags
      const shown = await page.$eval('[data-testid="model"]', (e) => e.value);
      await sectionsDrawn(page, models.find((m) => m.path === shown) || models[0]);
      await checkToy(page);
      await checkClear(page);
    }
    const axed = new Set(), shot = new Set();
    for (const m of models) {
      await page.select('[data-testid="model"]', m.path);
      await sectionsDrawn(page, m);
      await noScrollNoErrors(page, `${m.name} at ${width} px`);
      await layout(page, `${m.name} at ${width} px`);
      const kind = `${m.arch}-${m.layers}`;
      if (!axed.has(kind)) { axed.add(kind); await axe(page, `${m.name} at ${width} px`); }
      if (numbers) { await checkNumbers(page, m); await secrets(page, m); await noScrollNoErrors(page, `${m.name} at ${width} px after the Secrets`); }
      console.log(`ok: ${m.name} at ${width} px: every section drawn from it, no horizontal scroll, no error`);
      // a whole page is some 12,000 px tall: one picture a kind of model, not one a model
      if (!m.path.includes("snapshots/") && !shot.has(kind)) {
        shot.add(kind);
        await page.screenshot({ path: path.join(shots, `chapter-${width}-${m.name.replace(".safetensors", "")}.png`), fullPage: true });
      }
    }
    check(problems.length === 0, "no script errors or outside fetches" + (problems.length ? ": " + problems.join("; ") : ""));
  } catch (e) {
    await page.screenshot({ path: path.join(shots, `chapter-${width}-failure.png`), fullPage: true }).catch(() => {});
    console.error("FAILED: " + e.message);
    if (problems.length) console.error(problems.join("\n"));
    await browser.close();
    process.exit(1);
  }
  await browser.close();
  console.log(`chapter at ${width} px: all checks passed`);
}

main();
