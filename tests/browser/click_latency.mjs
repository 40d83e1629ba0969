// How long a click on a token takes in the playground, in headless Chromium:
// the page's own clock from the click to every view drawn and laid out (and to
// the next frame), for a 256-position story ([EOS] + 255 tokens of the server's
// held-out test stories), with one head in view and with all 8.
//
//   node click_latency.mjs URL CHROMIUM CLICKS PRESS_MS [json]
//
// Every click is on a position not clicked before in that view, so none is
// answered from what the page already holds when the button goes down; PRESS_MS
// is how long it is held (0: down and up at once; the page asks for the numbers
// at the press). Run by scripts/click_latency.
import puppeteer from "puppeteer-core";
import { press, summary, timeClicks, untilDrawn } from "./clicks.mjs";

const [url, chromium, clicksArg, pressArg, asJson] = process.argv.slice(2);
const CLICKS = Number(clicksArg), PRESS = Number(pressArg);
const WARM = 3;

async function post(path, body) {
  const res = await fetch(new URL(path, url), { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  return res.json();
}

// The most words of the test stories (joined) whose tokens fit in n.
async function storyOf(n) {
  const stories = (await (await fetch(new URL("/api/stories", url))).json()).stories.map((s) => s.text);
  const words = stories.join(" ").split(/\s+/);
  let lo = 1, hi = Math.min(words.length, 4 * n);
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((await post("/api/tokenize", { text: words.slice(0, mid).join(" ") })).length <= n) lo = mid;
    else hi = mid - 1;
  }
  const text = words.slice(0, lo).join(" ");
  return { text, positions: (await post("/api/tokenize", { text })).length + 1 };
}

// CLICKS + WARM distinct positions of 1..T-1, spread over the story (a fixed shuffle).
function positions(T, seed) {
  const p = [...Array(T - 1).keys()].map((i) => i + 1);
  let s = seed;
  for (let i = p.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2147483648;
    const j = s % (i + 1);
    [p[i], p[j]] = [p[j], p[i]];
  }
  return p.slice(0, CLICKS + WARM);
}

async function main() {
  const browser = await puppeteer.launch({
    // no DevTools watching the network: a user's browser has none, and its events
    // cost every request about 2 ms here
    networkEnabled: false,
    executablePath: chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  });
  const errors = [];
  try {
    const page = await browser.newPage();
    page.on("pageerror", (e) => errors.push(e.message));
    await page.setViewport({ width: 1280, height: 900 });
    await page.goto(url, { waitUntil: "networkidle0", timeout: 60000 });
    await page.waitForFunction(() => document.body.dataset.ready === "1", { timeout: 60000 });
    const story = await storyOf(255);
    await page.$eval('[data-testid="story"]', (e, v) => { e.value = v; e.dispatchEvent(new Event("input")); }, story.text);
    await untilDrawn(page, story.positions - 1);
    const views = [];
    for (const [name, sel, seed] of [["one head (head 3)", '[data-testid="view-head-3"]', 1], ["all 8 heads", '[data-testid="view-all"]', 2]]) {
      await press(page, sel);
      const ps = positions(story.positions, seed);
      await timeClicks(page, ps.slice(0, WARM), PRESS);
      views.push({ view: name, ...summary(await timeClicks(page, ps.slice(WARM), PRESS)) });
    }
    if (errors.length) throw new Error("the page failed: " + errors.join("; "));
    const out = { story_positions: story.positions, press_ms: PRESS, views };
    if (asJson === "json") { console.log(JSON.stringify(out, null, 2)); return; }
    console.log(`a click on a token of a ${story.positions}-position story, ${CLICKS} clicks a view (after ${WARM} not counted), each on a position not clicked before, the button held ${PRESS} ms:`);
    console.log("");
    console.log("view                to drawn: median      p90  slowest   of which drawing (median)   to the next frame: median      p90");
    for (const v of views)
      console.log(`${v.view.padEnd(20)}${v.click.median.toFixed(1).padStart(13)} ms ${v.click.p90.toFixed(1).padStart(5)} ms ${v.click.slowest.toFixed(1).padStart(5)} ms ` +
        `${v.draw.median.toFixed(1).padStart(20)} ms ${v.paint.median.toFixed(1).padStart(30)} ms ${v.paint.p90.toFixed(1).padStart(5)} ms`);
  } finally {
    await browser.close();
  }
}

main().catch((e) => { console.error("click_latency: " + e.message); process.exit(1); });
