// The tokenizer peer of scripts/bench: @huggingface/tokenizers from npm (the
// package tests/compat pins and scripts/setup_npm installs), set up as a
// standard BERT WordPiece tokenizer with storylm's vocab.txt, exactly as
// tests/compat/encode.mjs does.
//
//   node scripts/tokenizer_peer.mjs VOCAB TEXT            encode every line once, print MB/s
//   node scripts/tokenizer_peer.mjs VOCAB TEXT --serve    for scripts/bench: each stdin line
//                                                         "encode" is answered with one JSON
//                                                         line {bytes, seconds, ids}
//
// Every line of TEXT is encoded on its own (as `storylm bench encode` does);
// reading the file and decoding it into strings is done once, before timing.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const entry = join(root, "tests/compat/node_modules/@huggingface/tokenizers/dist/tokenizers.mjs");
let Tokenizer;
try {
  ({ Tokenizer } = await import(pathToFileURL(entry).href));
} catch {
  process.stderr.write("tokenizer_peer: @huggingface/tokenizers is missing: run scripts/setup_npm\n");
  process.exit(1);
}

function bertTokenizer(vocabText) {
  const lines = vocabText.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const vocab = {};
  lines.forEach((line, id) => {
    vocab[line.replace(/\r$/, "")] = id;
  });
  return new Tokenizer(
    {
      normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
      pre_tokenizer: { type: "BertPreTokenizer" },
      model: { type: "WordPiece", vocab, unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100 },
      post_processor: null,
      decoder: null,
      added_tokens: [],
    },
    {},
  );
}

const [vocabPath, textPath, mode] = process.argv.slice(2);
if (!vocabPath || !textPath) {
  process.stderr.write("usage: node scripts/tokenizer_peer.mjs VOCAB TEXT [--serve]\n");
  process.exit(2);
}
const tokenizer = bertTokenizer(readFileSync(vocabPath, "utf-8"));
const bytes = readFileSync(textPath);
const lines = new TextDecoder("utf-8").decode(bytes).split("\n");

function encodeAll() {
  const start = process.hrtime.bigint();
  let ids = 0;
  for (const line of lines) ids += tokenizer.encode(line, { add_special_tokens: false }).ids.length;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { bytes: bytes.length, seconds, ids };
}

if (mode === "--serve") {
  encodeAll(); // warm up: the JIT compiles the hot paths
  process.stdout.write(JSON.stringify({ ready: true, node: process.version }) + "\n");
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() === "quit") break;
    const reply = line.trim() === "encode" ? encodeAll() : { error: `unknown command ${line}` };
    process.stdout.write(JSON.stringify(reply) + "\n");
  }
} else {
  const r = encodeAll();
  process.stdout.write(`${(r.bytes / r.seconds / 1e6).toFixed(2)} MB/s (${r.ids} ids, ${r.seconds.toFixed(2)} s)\n`);
}
