// Times clicks on the playground's tokens with the page's own clock: from the
// click (its event's time) to the attention, its table, the trace and the
// guesses drawn and laid out (body.dataset.clickMs, set by web/app.js), and to
// the next frame after that (paintMs). Shared by tests/browser/playground.mjs
// (which reports the times, never checks them) and scripts/click_latency.

// A real mouse click, with the element first scrolled to the middle of the window
// (the page's heads bar stays on top while it scrolls and would catch the click).
export async function press(page, selector) {
  await page.$eval(selector, (e) => e.scrollIntoView({ block: "center" }));
  await page.click(selector);
}

// Resolves once the page has drawn a click on position p and painted the frame
// after (web/app.js sets body's data-paint-ms then): a MutationObserver in the page,
// no polling, so that the waiting takes no time from the page it measures.
function drawnPromise(page, p) {
  return page.evaluate((p) => {
    const d = document.body.dataset;
    window.__drawn = new Promise((resolve) => {
      const done = () => d.paintMs !== undefined && d.clickPos === String(p);
      if (done()) { resolve(); return; }
      const mo = new MutationObserver(() => { if (done()) { mo.disconnect(); resolve(); } });
      mo.observe(document.body, { attributes: true, attributeFilter: ["data-paint-ms"] });
    });
  }, p);
}

// Waits until position p is the one reading and every view of the click is drawn.
export async function untilDrawn(page, p, timeout = 60000) {
  await page.waitForFunction((p) => document.querySelector(`[data-testid="token"][data-pos="${p}"].reading`) &&
    document.querySelector('[data-testid="guesses"]').dataset.position === String(p) &&
    document.body.dataset.clickPos === String(p) && document.body.dataset.paintMs !== undefined,
  { timeout, polling: 50 }, p);
}

// Clicks each position in turn, holding the button down pressMs (0: press and
// release at once, as scripts do; a hand's click lasts about 100 ms, and the page
// asks for the numbers at the press); returns {click, draw, paint, cached}: per
// click its milliseconds from the click (the release) to drawn, of which drawing,
// to the next frame, and whether the page had the numbers already (no request).
export async function timeClicks(page, positions, pressMs = 0) {
  const out = { click: [], draw: [], paint: [], cached: [] };
  for (const p of positions) {
    await page.$eval(`[data-testid="token"][data-pos="${p}"]`, (e) => e.scrollIntoView({ block: "center" }));
    await page.evaluate(() => { delete document.body.dataset.paintMs; delete document.body.dataset.clickPos; });
    await drawnPromise(page, p);
    await page.click(`[data-testid="token"][data-pos="${p}"]`, { delay: pressMs });
    await page.evaluate(() => window.__drawn);
    await untilDrawn(page, p);
    const d = await page.evaluate(() => ({ ...document.body.dataset }));
    out.click.push(Number(d.clickMs));
    out.draw.push(Number(d.drawMs));
    out.paint.push(Number(d.paintMs));
    out.cached.push(d.clickCached === "1");
  }
  return out;
}

// The q-quantile of xs (nearest rank).
export const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.round(q * (xs.length - 1))];

// {median, p90, slowest} of each list of times, in ms to 0.1.
export function summary(t) {
  const s = (xs) => ({ median: +quantile(xs, 0.5).toFixed(1), p90: +quantile(xs, 0.9).toFixed(1), slowest: +quantile(xs, 1).toFixed(1) });
  return { clicks: t.click.length, cached: t.cached.filter(Boolean).length, click: s(t.click), draw: s(t.draw), paint: s(t.paint) };
}
