// storylm serve's OpenAI-compatible routes driven by the official OpenAI
// client (npm "openai", pinned in package-lock.json), run by
// tests/e2e_openai.sh in a folder with models/ and data/stories.txt:
//   node client_check.mjs STORYLM
// Completions with and without streaming (the same text, byte for byte),
// generated tokens' log-probabilities against generate --json, echo +
// logprobs + max_tokens 0 against eval --text --json (bit for bit), a list
// of prompts, n > 1, stop strings, errors for bad fields (OpenAI's shape
// through the client's APIError), /tokenize and /detokenize, /metrics with
// and without --metrics, the Host rule, and 32 concurrent identical seeded
// requests (with other requests on another model between them) that all
// give the same text. Any difference throws: the test fails.
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import assert from "node:assert/strict";
import OpenAI from "openai";

const STORYLM = process.argv[2];
const MODEL = "models/tinystories.safetensors";
const OTHER = "models/tinystories-window8.safetensors";

function cli(args) {
  return JSON.parse(execFileSync(STORYLM, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
}

// storylm serve on a free port; resolves to {proc, port}.
function startServer(extra) {
  return new Promise((resolve, reject) => {
    const proc = spawn(STORYLM, ["serve", "--port", "0", "--model", MODEL, ...extra], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/http:\/\/[\d.]+:(\d+)\//);
      if (m) resolve({ proc, port: Number(m[1]) });
    });
    proc.on("exit", (code) => reject(new Error(`storylm serve exited (${code}) before printing its address`)));
  });
}

function stopServer(server) {
  return new Promise((resolve) => {
    server.proc.removeAllListeners("exit");
    server.proc.on("exit", (code, sig) => resolve(code ?? sig));
    server.proc.kill("SIGTERM");
  });
}

// One raw request (node:http lets a test set Host); resolves to {status, headers, body}.
function raw(port, method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
    const req = http.request(
      { host: "127.0.0.1", port, method, path, headers: { "Content-Type": "application/json", ...headers } },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    req.on("error", reject);
    if (data !== undefined) req.write(data);
    req.end();
  });
}

function same(a, b, what) {
  try {
    assert.deepStrictEqual(a, b);
  } catch (e) {
    throw new Error(`${what}: ${e.message.slice(0, 1500)}`);
  }
}

const story = "Lily found a big red ball in the park. She smiled and ran to her mom.";

async function checkModels(client) {
  const list = await client.models.list();
  const ids = list.data.map((m) => m.id);
  assert.ok(ids.includes(MODEL) && ids.includes(OTHER), `/v1/models lists ${MODEL} and ${OTHER}: ${ids}`);
}

// A completion's text and new tokens' log-probabilities equal generate --json's.
async function checkAgainstGenerate(client) {
  const c = await client.completions.create({ model: MODEL, prompt: "Lily found a", max_tokens: 30, seed: 7, logprobs: 3 });
  const g = cli(["generate", "Lily found a", "--model", MODEL, "--tokens", "30", "--seed", "7", "--temperature", "1",
    "--top-p", "1", "--top-k", "0", "--json", "--n-probs", "3"]).samples[0];
  const choice = c.choices[0], n = g.tokens.length, lp = choice.logprobs;
  same("Lily found a" + choice.text, g.text, "the completion's text differs from generate's");
  same(lp.tokens.length, n + (g.stop_reason === "end"), "a story's end is listed as its [EOS] token");
  same(lp.tokens.slice(0, n), g.tokens.map((t) => t.piece), "the new tokens differ from generate's");
  same(lp.token_logprobs.slice(0, n), g.tokens.map((t) => t.logprob), "new tokens' log-probabilities differ from generate --json's");
  same(lp.top_logprobs.slice(0, n), g.tokens.map((t) => Object.fromEntries(t.top_logprobs.map((a) => [a.piece, a.logprob]))),
    "top_logprobs differ from generate --json's");
  same(c.usage, { prompt_tokens: 3, completion_tokens: g.new_tokens, total_tokens: 3 + g.new_tokens }, "usage");
  assert.equal(choice.finish_reason, g.stop_reason === "max_tokens" ? "length" : "stop");
  const offsets = choice.logprobs.text_offset;
  assert.ok(offsets.every((o, i) => i === 0 || o > offsets[i - 1]), `text_offset rises: ${offsets}`);
}

// Streamed text equals the text without stream, byte for byte; the stream ends with [DONE].
async function checkStream(client) {
  const cases = [
    { prompt: "Tom had a dog", max_tokens: 60, seed: 3 },
    { prompt: "Once upon a time", max_tokens: 80, seed: 11, stop: ["."], logprobs: 2 },
    { prompt: ["Mia saw a bird", "The sun was"], max_tokens: 40, seed: 5, n: 2, echo: true },
    { prompt: "Sue said \"", max_tokens: 50, seed: 9, temperature: 1.5 },
    { prompt: ["Lily found a", "Tom ran"], max_tokens: 10, seed: 2, n: 2, echo: true, logprobs: 2 },
  ];
  for (const body of cases) {
    const plain = await client.completions.create({ model: MODEL, ...body });
    const stream = await client.completions.create({ model: MODEL, ...body, stream: true });
    const texts = [], tokens = [];
    const finish = [];
    for await (const chunk of stream)
      for (const ch of chunk.choices) {
        texts[ch.index] = (texts[ch.index] ?? "") + ch.text;
        if (ch.logprobs) tokens[ch.index] = [...(tokens[ch.index] ?? []), ...ch.logprobs.token_logprobs];
        if (ch.finish_reason) finish[ch.index] = ch.finish_reason;
      }
    same(texts, plain.choices.map((c) => c.text), `streamed text differs from the answer without stream (${JSON.stringify(body)})`);
    same(finish, plain.choices.map((c) => c.finish_reason), "streamed finish_reason");
    if (body.logprobs !== undefined)
      same(tokens, plain.choices.map((c) => c.logprobs.token_logprobs), "streamed log-probabilities");
  }
}

// echo + logprobs + max_tokens 0: the prompt's log-probabilities, eval --text's numbers bit for bit.
async function checkEcho(client, port) {
  const ev = cli(["eval", "--text", story, "--model", MODEL, "--json"]);
  const c = await client.completions.create({ model: MODEL, prompt: story, max_tokens: 0, echo: true, logprobs: 5 });
  const lp = c.choices[0].logprobs;
  same(c.choices[0].text, story, "echo gives the prompt as typed");
  same(c.choices[0].finish_reason, "length", "max_tokens 0 finishes at its length");
  same(c.usage.completion_tokens, 0, "max_tokens 0 writes nothing");
  same(lp.tokens, ev.tokens.map((t) => t.target), "echoed tokens differ from eval --text's");
  assert.equal(lp.token_logprobs[0], null, "the first token's log-probability is null");
  // the JSON numbers as written: eval's loss and the echo's log-probability, the same digits
  const rawBody = (await raw(port, "POST", "/v1/completions", { model: MODEL, prompt: story, max_tokens: 0, echo: true, logprobs: 1 })).body;
  const written = rawBody.match(/"token_logprobs":\[null,([^\]]*)\]/)[1].split(",");
  const evRaw = execFileSync(STORYLM, ["eval", "--text", story, "--model", MODEL, "--json"], { encoding: "utf8" });
  const losses = [...evRaw.matchAll(/"loss":\s*([-0-9.e+]+)/g)].map((m) => m[1]).slice(0, ev.tokens.length);
  same(written, losses.slice(1).map((x) => (x.startsWith("-") ? x.slice(1) : "-" + x)),
    "the prompt's log-probabilities are not eval --text's numbers bit for bit");
  for (let k = 1; k < ev.tokens.length; k++) {
    assert.equal(lp.token_logprobs[k], -ev.tokens[k].loss, `token ${k}: ${lp.token_logprobs[k]} vs eval's loss ${ev.tokens[k].loss}`);
    const top = Object.values(lp.top_logprobs[k]);
    assert.equal(top.length, 5);
    if (ev.tokens[k].rank === 1) assert.equal(Math.max(...top), lp.token_logprobs[k], `token ${k} is eval's top guess`);
  }
  // the same prompt as token ids: the same numbers
  const ids = JSON.parse((await raw(port, "POST", "/tokenize", { model: MODEL, content: story })).body).tokens;
  const byIds = await client.completions.create({ model: MODEL, prompt: ids, max_tokens: 0, echo: true, logprobs: 5 });
  same(byIds.choices[0].logprobs.token_logprobs, lp.token_logprobs, "a token-id prompt's log-probabilities");
  // lm-evaluation-harness's loglikelihood request: ids, max_tokens 1, temperature 0, echo, logprobs 1
  const ll = await client.completions.create({ model: MODEL, prompt: [ids, ids.slice(0, 5)], max_tokens: 1, temperature: 0, logprobs: 1, echo: true, seed: 1234 });
  same(ll.choices.length, 2, "a list of token-id prompts");
  same(ll.choices[0].logprobs.token_logprobs.slice(0, ids.length), lp.token_logprobs, "the prompt's log-probabilities with a new token");
  // a whole story: its next token is [EOS], listed (the harness drops the last token listed as the new one)
  const stories = readFileSync("data/stories.txt", "utf8").split("<|endoftext|>").map((x) => x.trim()).filter((x) => x && x.length < 2000);
  let ended = 0;
  for (const text of stories.slice(0, 12)) {
    const sids = JSON.parse((await raw(port, "POST", "/tokenize", { content: text })).body).tokens;
    const one = await client.completions.create({ model: MODEL, prompt: [sids], max_tokens: 1, temperature: 0, logprobs: 1, echo: true });
    const l = one.choices[0].logprobs;
    same(l.tokens.length, sids.length + 1, "max_tokens 1 lists one token past the prompt, the story's end included");
    if (one.choices[0].finish_reason !== "stop") continue;
    ended++;
    same(l.tokens.at(-1), "[EOS]", "a story's end is its [EOS] token");
    assert.ok(l.token_logprobs.at(-1) < 0 && l.token_logprobs.at(-1) === Math.max(...Object.values(l.top_logprobs.at(-1))), "[EOS] was the likeliest");
  }
  assert.ok(ended > 0, "no story of the first 12 ended at temperature 0");
  // storylm's ablation: the prompt's numbers are eval --text --ablate's
  const ab = cli(["eval", "--text", story, "--model", MODEL, "--ablate", "3,5", "--json"]);
  const abc = await client.completions.create({ model: MODEL, prompt: story, max_tokens: 0, echo: true, logprobs: 1, ablate: [3, 5] });
  for (let k = 1; k < ab.tokens.length; k++)
    assert.equal(abc.choices[0].logprobs.token_logprobs[k], -ab.tokens[k].loss, `ablated token ${k}`);
  assert.notDeepEqual(abc.choices[0].logprobs.token_logprobs, lp.token_logprobs, "the ablation changed nothing");
  const abg = cli(["generate", "Lily found a", "--model", MODEL, "--tokens", "30", "--seed", "5", "--temperature", "1",
    "--top-p", "1", "--top-k", "0", "--ablate", "3,5", "--json"]).samples[0];
  const abt = await client.completions.create({ model: MODEL, prompt: "Lily found a", max_tokens: 30, seed: 5, ablate: "3,5" });
  same("Lily found a" + abt.choices[0].text, abg.text, "an ablated completion differs from generate --ablate's");
}

// A list of prompts, n > 1: prompt p's choice i is choice p * n + i, drawn with seed + i.
async function checkListAndN(client) {
  const prompts = ["Ben had a red car", "The cat sat"];
  const c = await client.completions.create({ model: MODEL, prompt: prompts, max_tokens: 25, seed: 40, n: 3 });
  same(c.choices.map((x) => x.index), [0, 1, 2, 3, 4, 5], "choices' indexes");
  for (let p = 0; p < 2; p++)
    for (let i = 0; i < 3; i++) {
      const one = await client.completions.create({ model: MODEL, prompt: prompts[p], max_tokens: 25, seed: 40 + i });
      same(c.choices[p * 3 + i].text, one.choices[0].text, `prompt ${p}'s choice ${i} is the seed + ${i} completion`);
    }
  assert.ok(new Set(c.choices.slice(0, 3).map((x) => x.text)).size > 1, "n choices differ from each other");
  const g = cli(["generate", prompts[1], "--model", MODEL, "--tokens", "25", "--seed", "42", "--temperature", "1",
    "--top-p", "1", "--top-k", "0", "--json"]).samples[0];
  same(prompts[1] + c.choices[5].text, g.text, "choice 2 of prompt 1 differs from generate --seed 42");
}

// stop strings: the text ends before them, as generate --stop ends it.
async function checkStop(client) {
  for (const [stop, seed] of [[["."], 1], [[" she", "!"], 2], ["ball", 3]]) {
    const c = await client.completions.create({ model: MODEL, prompt: "Lily found a ball", max_tokens: 80, seed, stop });
    const stops = Array.isArray(stop) ? stop : [stop];
    const args = ["generate", "Lily found a ball", "--model", MODEL, "--tokens", "80", "--seed", String(seed), "--temperature", "1",
      "--top-p", "1", "--top-k", "0", "--json"];
    for (const s of stops) args.push("--stop", s);
    const g = cli(args).samples[0];
    same("Lily found a ball" + c.choices[0].text, g.text, `stop ${JSON.stringify(stop)}: the text differs from generate --stop's`);
    for (const s of stops) assert.ok(!c.choices[0].text.includes(s), `the text holds its stop ${s}`);
    same(c.choices[0].finish_reason, g.stop_reason === "max_tokens" ? "length" : "stop", "finish_reason with stop");
  }
}

// Bad fields: 4xx in OpenAI's shape, through the client's APIError, naming the field.
async function checkErrors(client, port) {
  const bad = [
    [{ temperature: 200 }, 400, "temperature"],
    [{ tempreature: 0.5 }, 400, "tempreature"],
    [{ logprobs: 21 }, 400, "logprobs"],
    [{ n: 0 }, 400, "n"],
    [{ n: 17 }, 400, "n"],
    [{ max_tokens: 2001 }, 400, "max_tokens"],
    [{ max_tokens: -1 }, 400, "max_tokens"],
    [{ seed: 1.5 }, 400, "seed"],
    [{ echo: "yes" }, 400, "echo"],
    [{ stream: 1 }, 400, "stream"],
    [{ stop: "" }, 400, "stop"],
    [{ stop: Array(17).fill("x") }, 400, "stop"],
    [{ prompt: [99999] }, 400, "prompt"],
    [{ prompt: [1.5] }, 400, "prompt"],
    [{ prompt: [1e300, -1e300] }, 400, "prompt"],
    [{ prompt: [[3], [-1]] }, 400, "prompt"],
    [{ prompt: [] }, 400, "prompt"],
    [{ prompt: ["a", [1]] }, 400, "prompt"],
    [{ prompt: { text: "a" } }, 400, "prompt"],
    [{ prompt: Array(9).fill("a"), n: 2 }, 400, "prompt"],
    [{ prompt: "a".repeat(70000) }, 413, "prompt"],
    [{ top_k: -1 }, 400, "top_k"],
    [{ repeat_penalty: 0 }, 400, "repeat_penalty"],
    [{ ablate: [99] }, 400, null],
    [{ presence_penalty: 0.5 }, 400, "presence_penalty"],
    [{ model: "nope.safetensors" }, 404, "model"],
  ];
  for (const [fields, status, param] of bad) {
    let err;
    try {
      await client.completions.create({ model: MODEL, prompt: "Lily", max_tokens: 5, ...fields });
    } catch (e) {
      err = e;
    }
    const what = JSON.stringify(fields).slice(0, 80);
    assert.ok(err instanceof OpenAI.APIError, `${what}: no APIError (${err})`);
    assert.equal(err.status, status, `${what}: status ${err.status}`);
    assert.equal(typeof err.error?.message, "string", `${what}: no message in ${JSON.stringify(err.error)}`);
    assert.equal(typeof err.error?.type, "string", `${what}: no type`);
    assert.ok("param" in err.error && "code" in err.error, `${what}: no param or code`);
    if (param) assert.equal(err.error.param, param, `${what}: param ${err.error.param}`);
  }
  let chat;
  try {
    await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Tell me a story" }] });
  } catch (e) {
    chat = e;
  }
  assert.ok(chat instanceof OpenAI.BadRequestError && chat.error.code === "chat_not_supported", `chat: ${chat}`);
  assert.match(chat.error.message, /no chat format/);
  // a body that is no JSON object, a GET's unknown query field, a wrong method: OpenAI's shape too
  for (const [method, path, body, status] of [
    ["POST", "/v1/completions", "[1, 2]", 400],
    ["POST", "/v1/completions", "{\"prompt\": \"a\u0000b\"}", 400],
    ["GET", "/v1/models?x=1", undefined, 400],
    ["GET", "/v1/completions", undefined, 405],
    ["POST", "/v1/nothing", "{}", 404],
  ]) {
    const r = await raw(port, method, path, body);
    assert.equal(r.status, status, `${method} ${path}: ${r.status} ${r.body}`);
    const e = JSON.parse(r.body).error;
    assert.ok(typeof e.message === "string" && typeof e.type === "string" && "param" in e && "code" in e, `${path}: ${r.body}`);
  }
  // the server's Host and Origin rules hold for /v1 as for /api
  const host = await raw(port, "GET", "/v1/models", undefined, { Host: `evil.example:${port}` });
  assert.equal(host.status, 403, `a foreign Host: ${host.status}`);
  const origin = await raw(port, "POST", "/v1/completions", { prompt: "a" }, { Origin: "http://evil.example" });
  assert.equal(origin.status, 403, `a foreign Origin: ${origin.status}`);
  const big = await raw(port, "POST", "/v1/completions", JSON.stringify({ prompt: "a".repeat(300 * 1024) }));
  assert.equal(big.status, 413, `a body over 256 KiB: ${big.status}`);
}

async function checkTokenize(port) {
  const t = JSON.parse((await raw(port, "POST", "/tokenize", { content: story, model: MODEL })).body);
  const api = JSON.parse((await raw(port, "POST", "/api/tokenize", { text: story, model: MODEL })).body);
  same(t.tokens, api.map((x) => x.id), "/tokenize's ids differ from /api/tokenize's");
  const pieces = JSON.parse((await raw(port, "POST", "/tokenize", { content: "Lily ran", with_pieces: true })).body);
  same(pieces.tokens.map((x) => x.piece), ["lily", "ran"], "with_pieces");
  const special = JSON.parse((await raw(port, "POST", "/tokenize", { prompt: "Lily ran", add_special_tokens: true })).body);
  same(special.tokens.slice(1), pieces.tokens.map((x) => x.id), "vLLM's names");
  const d = JSON.parse((await raw(port, "POST", "/detokenize", { tokens: t.tokens })).body);
  same(d.content, story, "/detokenize gives the text back");
  same(d.prompt, story, "/detokenize's vLLM name");
  const info = JSON.parse((await raw(port, "GET", "/tokenizer_info")).body);
  same(info.eos_token, "[EOS]", "tokenizer_info");
  for (const [path, body] of [["/tokenize", {}], ["/tokenize", { content: "a", colour: 1 }], ["/detokenize", { tokens: [-1] }], ["/detokenize", { tokens: "1" }]]) {
    const r = await raw(port, "POST", path, body);
    assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.status}`);
    assert.equal(typeof JSON.parse(r.body).error.message, "string");
  }
}

// 32 concurrent identical seeded requests (and others, on another model, between them): one text.
async function checkConcurrent(client) {
  const body = { model: MODEL, prompt: "Max and Sue went to the park", max_tokens: 60, seed: 123, temperature: 1.2, logprobs: 1 };
  const alone = await client.completions.create(body);
  const others = Array.from({ length: 8 }, (_, i) =>
    client.completions.create({ model: i % 2 ? OTHER : MODEL, prompt: `Story ${i}: the dog`, max_tokens: 80, seed: i, stream: i % 3 === 0 })
      .then(async (r) => { if (r[Symbol.asyncIterator]) for await (const _ of r); }));
  const same32 = Array.from({ length: 32 }, () => client.completions.create(body));
  const all = await Promise.all([...same32, ...others]);
  for (let i = 0; i < 32; i++) {
    same(all[i].choices[0].text, alone.choices[0].text, `concurrent request ${i}: another text`);
    same(all[i].choices[0].logprobs.token_logprobs, alone.choices[0].logprobs.token_logprobs, `concurrent request ${i}: other numbers`);
  }
}

// /metrics counts the requests, tokens and latencies (with --metrics).
async function checkMetrics(port) {
  const r = await raw(port, "GET", "/metrics");
  assert.equal(r.status, 200, `/metrics: ${r.status}`);
  assert.match(r.headers["content-type"], /^text\/plain/);
  const value = (re) => Number((r.body.match(re) || [])[1] ?? NaN);
  assert.ok(value(/storylm_requests_total\{route="\/v1\/completions",status="200"\} (\d+)/) >= 40, "completions counted");
  assert.ok(value(/storylm_requests_total\{route="\/v1\/completions",status="400"\} (\d+)/) >= 20, "refusals counted");
  assert.ok(value(/storylm_tokens_generated_total (\d+)/) > 1000, "tokens generated");
  assert.ok(value(/storylm_prompt_tokens_total (\d+)/) > 100, "prompt tokens");
  const count = value(/storylm_request_duration_seconds_count\{route="\/v1\/completions"\} (\d+)/);
  const inf = value(/storylm_request_duration_seconds_bucket\{route="\/v1\/completions",le="\+Inf"\} (\d+)/);
  assert.ok(count > 0 && count === inf, `the latency histogram: count ${count}, +Inf ${inf}`);
  for (const line of r.body.split("\n"))
    if (line && !line.startsWith("#")) assert.match(line, /^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [0-9.e+]+$/, `exposition line: ${line}`);
}

async function main() {
  let server = await startServer(["--metrics"]);
  try {
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: "none", maxRetries: 0, timeout: 300000 });
    const steps = [
      ["models", () => checkModels(client)],
      ["generate --json", () => checkAgainstGenerate(client)],
      ["stream", () => checkStream(client)],
      ["echo", () => checkEcho(client, server.port)],
      ["list and n", () => checkListAndN(client)],
      ["stop", () => checkStop(client)],
      ["errors", () => checkErrors(client, server.port)],
      ["tokenize", () => checkTokenize(server.port)],
      ["concurrent", () => checkConcurrent(client)],
      ["metrics", () => checkMetrics(server.port)],
    ];
    for (const [name, step] of steps) {
      const t0 = Date.now();
      await step();
      console.log(`ok ${name} (${Date.now() - t0} ms)`);
    }
    const health = await raw(server.port, "GET", "/api/health");
    assert.equal(health.status, 200, "the server is up after it all");
  } finally {
    const code = await stopServer(server);
    assert.equal(code, 0, `storylm serve --metrics exited ${code}`);
  }
  server = await startServer([]);
  try {
    const r = await raw(server.port, "GET", "/metrics");
    assert.equal(r.status, 404, `/metrics without --metrics: ${r.status}`);
    assert.match(JSON.parse(r.body).error.message, /--metrics/);
    console.log("ok metrics off");
  } finally {
    await stopServer(server);
  }
}

main().catch((e) => {
  console.error(`FAILED: ${e.stack || e}`);
  process.exit(1);
});
