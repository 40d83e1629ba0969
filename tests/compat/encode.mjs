// The reference tokenizer for storylm's compatibility test: a standard BERT
// WordPiece tokenizer (BertNormalizer + BertPreTokenizer + WordPiece) of the
// npm package @huggingface/tokenizers (pinned in package.json), built from our
// vocab.txt. A vocabulary holding [CASED] is storylm's cased one: BERT-cased
// (lowercase and strip_accents off), and the normalised text composed to NFC
// as storylm composes it.
//
//   node encode.mjs VOCAB LINES            ids of every line of LINES, one line each
//   node encode.mjs --words LINES          the normalised words of every line
//
// LINES is read as bytes, split on "\n", and each line decoded as a browser
// does (TextDecoder: every invalid sequence becomes U+FFFD), the same lines as
// `storylm tokenize --ids --lossy --lines LINES` reads. No added tokens: the
// text "[UNK]" is plain text here, as it is for storylm.
import { readFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

function bertTokenizer(vocabText, cased) {
  const lines = vocabText.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const vocab = {};
  lines.forEach((line, id) => {
    vocab[line.replace(/\r$/, "")] = id;
  });
  const json = {
    normalizer: {
      type: "BertNormalizer",
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: cased ? false : null,
      lowercase: !cased,
    },
    pre_tokenizer: { type: "BertPreTokenizer" },
    model: {
      type: "WordPiece",
      vocab,
      unk_token: "[UNK]",
      continuing_subword_prefix: "##",
      max_input_chars_per_word: 100,
    },
    post_processor: null,
    decoder: null,
    added_tokens: [],
  };
  return new Tokenizer(json, {});
}

function readLines(path) {
  const bytes = readFileSync(path);
  const decoder = new TextDecoder("utf-8");
  const lines = [];
  let start = 0;
  while (start < bytes.length) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) end = bytes.length;
    lines.push(decoder.decode(bytes.subarray(start, end)));
    start = end + 1;
  }
  return lines;
}

const args = process.argv.slice(2);
const out = [];
if (args[0] === "--words" && args.length === 2) {
  // The normaliser and pre-tokenizer alone: any vocabulary will do.
  const t = bertTokenizer("[UNK]\n");
  for (const line of readLines(args[1])) {
    const normalized = t.normalizer(line);
    out.push(normalized.length ? t.pre_tokenizer(normalized).join(" ") : "");
  }
} else if (args.length === 2) {
  const text = readFileSync(args[0], "utf-8");
  const cased = text.split(/\r?\n/).includes("[CASED]");
  const t = bertTokenizer(text, cased);
  for (const line of readLines(args[1])) {
    // cased: cleaned, then NFC, then encoded (normalising again changes nothing but spaces)
    const input = cased ? t.normalizer(line).normalize("NFC") : line;
    out.push(t.encode(input, { add_special_tokens: false }).ids.join(" "));
  }
} else {
  process.stderr.write("usage: node encode.mjs VOCAB LINES | node encode.mjs --words LINES\n");
  process.exit(2);
}
process.stdout.write(out.map((l) => l + "\n").join(""));
