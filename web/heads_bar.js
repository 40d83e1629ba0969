// The heads bar: view one head or all, switch any off.
import { calls, headColor, state } from "./state.js";
import { $, el, headName } from "./util.js";

// ---------- the heads bar ----------

export function drawHeadsBar() {
  const box = $("heads");
  const cols = [headColumn(-1)];
  for (let g = 0; g < state.layers * state.heads; g++) cols.push(headColumn(g));
  box.classList.toggle("compact", state.layers > 1);
  box.replaceChildren(...cols);
}

// A head's column: its view button and its on switch; h numbered over every layer
// (-1: the view of all heads), named as the CLI names it ("3", or "2:3").
export function headColumn(h) {
  const viewing = state.head === h, name = h < 0 ? "" : headName(h);
  const view = el("input", {
    type: "radio", name: "view-head", id: `view-${h}`, value: h, checked: viewing,
    "aria-label": h < 0 ? `view all ${state.layers * state.heads} heads` : `view head ${name}`,
    "data-testid": h < 0 ? "view-all" : `view-head-${name}`,
    onchange: () => calls.viewHead(h),
  });
  const label = el("label", { for: `view-${h}` }, h < 0 ? `all ${state.layers * state.heads}` : el("span", { class: "swatch", style: `background:${headColor(h % state.heads)}` }),
    h < 0 ? "" : el("span", { class: "word", text: "head " }), h < 0 ? "" : name);
  const col = el("div", { class: "head" + (viewing ? " viewing" : "") + (state.off.has(h) ? " off" : "") }, el("span", {}, view, label));
  if (h >= 0) {
    const sw = el("input", {
      type: "checkbox", id: `on-${h}`, checked: !state.off.has(h), "data-testid": `switch-head-${name}`,
      "aria-label": `head ${name} switched on`,
      onchange: (ev) => { if (ev.target.checked) state.off.delete(h); else state.off.add(h); drawHeadsBar(); calls.refreshStory(); calls.savePermalink(); },
    });
    col.append(el("label", { for: `on-${h}` }, sw, " on"));
  } else {
    col.append(el("span", { class: "muted", text: "view" }));
  }
  return col;
}
