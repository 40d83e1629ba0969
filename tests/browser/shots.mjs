// The pictures of docs/playground.md: each section of the chapter's page, as headless
// Chromium draws it at 1280 x 900, from a running `storylm serve`:
//   node tests/browser/shots.mjs http://127.0.0.1:8080/ docs/
import puppeteer from "puppeteer-core";
import path from "node:path";

const [url, dir] = process.argv.slice(2);
const SECTIONS = [["problem-card", "chapter-problem"], ["diff-card", "chapter-differently"], ["toy-card", "chapter-toy"],
  ["film-card", "chapter-film"], ["question-card", "chapter-question"], ["attend-card", "chapter-tool1"], ["tf-card", "chapter-transformer"],
  ["words-card", "chapter-words"], ["jobs-card", "chapter-secret1"], ["algo-card", "chapter-algorithm"]];
const b = await puppeteer.launch({ executablePath: process.env.STORYLM_CHROMIUM || "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
const p = await b.newPage();
await p.setViewport({ width: 1280, height: 900 });
await p.goto(url, { waitUntil: "networkidle0", timeout: 90000 });
await p.waitForFunction(() => document.querySelector('[data-testid="film-row"]') && !/Measuring/.test(document.getElementById("stats-corr").textContent), { timeout: 90000 });
await p.click('[data-testid="toy-seed"]');
for (let i = 0; i < 6; i++) await p.click('[data-testid="film-step"]');
await p.click('[data-testid="jobs-go"]');
await p.waitForFunction(() => document.querySelector('[data-testid="jobs-grid"]'), { timeout: 90000 });
await p.click('[data-testid="tf-next"]'); await p.click('[data-testid="tf-next"]');
await new Promise((r) => setTimeout(r, 800));
await p.addStyleTag({ content: ".sticky { position: static !important; } .code pre { max-height: 360px; }" });
for (const [id, name] of SECTIONS) {
  await (await p.$("#" + id)).screenshot({ path: path.join(dir, name + ".png") });
  console.log(path.join(dir, name + ".png"));
}
await b.close();
