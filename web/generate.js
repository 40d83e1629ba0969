// Let the network write on: /api/generate read as a stream of Server-Sent Events (the page's
// worker, on the static site, answers with the same events in one piece).
import { send } from "./site.js";
import { state } from "./state.js";
import { $, ablation, api, keep, showError } from "./util.js";

// ---------- let the network write on: a POST read as a stream of SSE events ----------

// The sampler's defaults are the server's (GET /api/views, "generate"): one
// place for them, shared with the CLI and the Python package.
export async function loadGenerateDefaults() {
  const d = (await api("/api/views")).generate;
  $("gen-t").value = d.temperature;
  $("gen-k").value = d.top_k;
  $("gen-p").value = d.top_p;
}

export async function runGenerate() {
  if (state.gen) return;
  const ctrl = new AbortController();
  state.gen = ctrl;
  const prompt = $("story").value;
  const body = {
    model: state.model, prompt,
    max_tokens: Number($("gen-n").value), temperature: Number($("gen-t").value),
    top_k: Number($("gen-k").value), top_p: Number($("gen-p").value), seed: Number($("gen-seed").value),
    ...ablation(),
  };
  const out = $("gen-out");
  out.replaceChildren();
  out.dataset.state = "running";
  out.dataset.tokens = "0";
  $("gen-go").disabled = true; $("gen-stop").disabled = false;
  $("gen-status").textContent = "writing...";
  showError("gen", null);
  const t0 = performance.now();
  let count = 0;
  try {
    const res = await send("/api/generate", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal: ctrl.signal });
    if (!res.ok) {
      let msg = `the server answered ${res.status}`;
      try {
        const d = await res.json();
        msg = (d.error || msg) + (d.hint ? ` (${d.hint})` : "");
      } catch (e) { /* keep the status */ }
      throw new Error(msg);
    }
    await readEvents(res.body, (event, data) => {
      if (event === "done") {
        showGenText(data.text);
        out.dataset.state = "done";
        out.dataset.doneTokens = String(data.tokens);
        $("gen-status").textContent = `${data.tokens} tokens, seed ${data.seed}, stopped: ${data.stop_reason}; ${rate(count, t0)}`;
      } else if (event === "error") {
        throw new Error(data.error || "generation failed");
      } else {
        count++;
        showGenText(data.text);
        out.dataset.tokens = String(count);
        $("gen-status").textContent = `writing... ${count} tokens, ${rate(count, t0)}`;
      }
    });
    if (out.dataset.state === "running") out.dataset.state = "ended";
  } catch (e) {
    if (e.name === "AbortError") {
      out.dataset.state = "stopped";
      $("gen-status").textContent = `stopped after ${count} tokens`;
    } else {
      out.dataset.state = "failed";
      showError("gen", e);
      $("gen-status").textContent = "";
    }
  } finally {
    state.gen = null;
    $("gen-go").disabled = false; $("gen-stop").disabled = true;
  }
}

export const rate = (n, t0) => `${(n / Math.max(1e-3, (performance.now() - t0) / 1000)).toFixed(0)} tokens/s`;

export function showGenText(text) {
  $("gen-out").textContent = text;
}

// Server-Sent Events from a fetch body: events are separated by a blank line,
// each line "event: NAME" or "data: JSON".
export async function readEvents(stream, onEvent) {
  const reader = stream.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let event = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
      }
      if (data) onEvent(event, JSON.parse(data));
    }
  }
}
