// Looks at storylm's SVG pictures the way a reader does: each one is opened in
// headless Chromium (puppeteer-core over the DevTools protocol), saved as a PNG
// and measured by the browser's own layout of it:
//   - nothing is drawn outside the picture (every element's box inside the viewBox);
//   - no two labels overlap (the boxes of text, rotated as drawn, tested pairwise);
//   - no text is smaller than MIN_FONT pixels;
//   - a chart whose marks have more than one colour (several series, a heat
//     map) has a legend: an element of class "legend", naming the colours or a
//     colour scale with its values (a chart is what an element of class "frame"
//     encloses; one colour a chart needs none, its title says what it is);
//   - the picture has some text and shapes at all (a blank page is a failure).
//
//   node pictures.mjs CHROMIUM PNG_DIR FILE.svg...
//
// Prints one line a check and a summary; exits 1 when any picture fails a check.
import puppeteer from "puppeteer-core";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [chromium, shots, ...files] = process.argv.slice(2);
const MIN_FONT = 10;
const SLACK = 0.75; // pixels: anti-aliasing and rounding of the coordinates, not a real overflow

// Runs in the page: everything the checks need, measured by the browser.
function measure(minFont) {
  const root = document.documentElement;
  const vb = root.viewBox.baseVal;
  const toRoot = root.getScreenCTM().inverse();
  // The four corners of an element's box, in the picture's coordinates (rotation kept).
  const corners = (el) => {
    const b = el.getBBox();
    const m = toRoot.multiply(el.getScreenCTM());
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]].map(([x, y]) => {
      const p = new DOMPoint(x, y).matrixTransform(m);
      return [p.x, p.y];
    });
  };
  const shapes = [...root.querySelectorAll("rect, line, polyline, polygon, circle, path, text")];
  const outside = [];
  for (const el of shapes) {
    const c = corners(el);
    const xs = c.map((p) => p[0]), ys = c.map((p) => p[1]);
    const lo = [Math.min(...xs), Math.min(...ys)], hi = [Math.max(...xs), Math.max(...ys)];
    if (lo[0] < vb.x - SLACK_ || lo[1] < vb.y - SLACK_ || hi[0] > vb.x + vb.width + SLACK_ || hi[1] > vb.y + vb.height + SLACK_)
      outside.push(`${el.tagName} "${(el.textContent || "").slice(0, 40)}" spans ${lo.map((v) => v.toFixed(1))} to ${hi.map((v) => v.toFixed(1))}`);
  }
  const texts = [...root.querySelectorAll("text")].filter((t) => t.textContent.trim() !== "");
  const small = texts.filter((t) => parseFloat(getComputedStyle(t).fontSize) < minFont - 1e-6)
    .map((t) => `"${t.textContent.slice(0, 30)}" at ${getComputedStyle(t).fontSize}`);
  // A label's box is its line height; the letters fill about its middle 80%
  // (ascenders and descenders of a neighbouring row may meet, not overlap).
  const boxes = texts.map((t) => {
    const b = t.getBBox(), m = toRoot.multiply(t.getScreenCTM()), inset = b.height * 0.12;
    const pts = [[b.x, b.y + inset], [b.x + b.width, b.y + inset], [b.x + b.width, b.y + b.height - inset], [b.x, b.y + b.height - inset]];
    return { text: t.textContent, quad: pts.map(([x, y]) => { const p = new DOMPoint(x, y).matrixTransform(m); return [p.x, p.y]; }) };
  });
  // Separating axes of two convex quadrilaterals: the depth they overlap by (0: apart).
  const depth = (a, b) => {
    let least = Infinity;
    for (const q of [a, b]) for (let i = 0; i < 4; i++) {
      const [x1, y1] = q[i], [x2, y2] = q[(i + 1) % 4];
      let nx = y1 - y2, ny = x2 - x1;
      const len = Math.hypot(nx, ny);
      if (len === 0) continue;
      nx /= len; ny /= len;
      const pa = a.map((p) => p[0] * nx + p[1] * ny), pb = b.map((p) => p[0] * nx + p[1] * ny);
      const d = Math.min(Math.max(...pa), Math.max(...pb)) - Math.max(Math.min(...pa), Math.min(...pb));
      if (d <= 0) return 0;
      least = Math.min(least, d);
    }
    return least;
  };
  // Sweep along x over the boxes' extents: only labels whose extents meet are tested.
  for (const b of boxes) {
    b.x0 = Math.min(...b.quad.map((p) => p[0])); b.x1 = Math.max(...b.quad.map((p) => p[0]));
    b.y0 = Math.min(...b.quad.map((p) => p[1])); b.y1 = Math.max(...b.quad.map((p) => p[1]));
  }
  boxes.sort((a, b) => a.x0 - b.x0);
  const overlaps = [];
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length && boxes[j].x0 < boxes[i].x1; j++) {
      if (boxes[j].y0 >= boxes[i].y1 || boxes[i].y0 >= boxes[j].y1) continue;
      const d = depth(boxes[i].quad, boxes[j].quad);
      if (d > 1) overlaps.push(`"${boxes[i].text.slice(0, 30)}" and "${boxes[j].text.slice(0, 30)}" by ${d.toFixed(1)} px`);
    }
  // The colours of each chart's marks (bars, cells, curves; not legends, frames or the background).
  const frames = [...root.querySelectorAll(".frame")].filter((f) => !f.closest(".legend")).map((f) => {
    const c = corners(f);
    return { x0: c[0][0], y0: c[0][1], x1: c[2][0], y1: c[2][1], colors: new Set() };
  });
  for (const el of root.querySelectorAll("rect, polyline, path, circle")) {
    if (el.closest(".legend") || el.classList.contains("frame") || el === root.querySelector("rect")) continue;
    const color = el.tagName === "polyline" ? el.getAttribute("stroke") : el.getAttribute("fill");
    if (!color || color === "none" || color === "white") continue;
    const c = corners(el), cx = (c[0][0] + c[2][0]) / 2, cy = (c[0][1] + c[2][1]) / 2;
    for (const f of frames) if (cx >= f.x0 - 1 && cx <= f.x1 + 1 && cy >= f.y0 - 1 && cy <= f.y1 + 1) f.colors.add(color);
  }
  return {
    width: vb.width, height: vb.height, outside, small, overlaps,
    colors: Math.max(0, ...frames.map((f) => f.colors.size)),
    legends: root.querySelectorAll(".legend").length,
    n_text: texts.length, n_shapes: shapes.length - texts.length,
  };
}

const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});
let failed = 0;
try {
  const page = await browser.newPage();
  for (const file of files) {
    const name = path.basename(file, ".svg");
    // generous: a long story's attention maps are tens of thousands of squares, on a loaded machine
    await page.goto(pathToFileURL(path.resolve(file)).href, { waitUntil: "load", timeout: 300000 });
    const m = await page.evaluate(`(${measure.toString().replaceAll("SLACK_", String(SLACK))})(${MIN_FONT})`);
    await page.setViewport({ width: Math.ceil(m.width), height: Math.ceil(m.height) });
    const png = path.join(shots, name + ".png");
    await page.screenshot({ path: png, clip: { x: 0, y: 0, width: m.width, height: m.height } });
    const problems = [];
    if (m.n_text === 0 || m.n_shapes === 0) problems.push(`nearly blank: ${m.n_text} labels, ${m.n_shapes} shapes`);
    for (const o of m.outside) problems.push("outside the picture: " + o);
    for (const o of m.overlaps) problems.push("labels overlap: " + o);
    for (const o of m.small) problems.push(`text below ${MIN_FONT} px: ` + o);
    if (m.legends === 0 && m.colors > 1) problems.push(`a chart of ${m.colors} colours and no legend (nothing of class "legend")`);
    if (problems.length) {
      failed++;
      console.log(`FAILED ${name} (${m.width}x${m.height}, ${png}):`);
      for (const p of problems.slice(0, 12)) console.log("  " + p);
      if (problems.length > 12) console.log(`  ... and ${problems.length - 12} more`);
    } else {
      console.log(`ok ${name}: ${m.width}x${m.height}, ${m.n_text} labels, ${m.n_shapes} shapes, ${m.colors} colour(s) in a chart, ${m.legends} legend(s), none outside or overlapping -> ${png}`);
    }
  }
} finally {
  await browser.close();
}
console.log(failed ? `${failed} of ${files.length} pictures failed` : `all ${files.length} pictures passed`);
process.exit(failed ? 1 : 0);
