// Every Unicode character through the reference normaliser and pre-tokenizer
// and through storylm's, to find where their Unicode tables differ (utf8proc
// and PCRE2 are a few Unicode versions behind Node's ICU).
//
//   node unicode_sweep.mjs lines OUT          writes one line per code point X:
//                                             "X aXb AΣX AΣXb XΣ aXΣ x<U+1D16D>X<U+1D165>"
//                                             (the Σ contexts test Cased and
//                                             Case_Ignorable, the last NFD's order)
//   node unicode_sweep.mjs check LINES OURS   compares OURS (the output of
//                                             `storylm tokenize --words --lossy --lines LINES`)
//                                             with the reference; on a difference,
//                                             prints it and the entries src/text.c's
//                                             override tables need, and exits 1.
import { readFileSync, writeFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

const NEWLINE = 0x0a;

function sweepLine(cp) {
  const x = String.fromCodePoint(cp);
  // Σ contexts, and between two kept marks of classes 226 and 216 (does NFD reorder across X?)
  return `${x} a${x}b A\u03a3${x} A\u03a3${x}b ${x}\u03a3 a${x}\u03a3 x\u{1D16D}${x}\u{1D165}`;
}

function codePoints() {
  const cps = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp === NEWLINE || (cp >= 0xd800 && cp <= 0xdfff)) continue;
    cps.push(cp);
  }
  return cps;
}

function referenceWords() {
  const t = new Tokenizer(
    {
      normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
      pre_tokenizer: { type: "BertPreTokenizer" },
      model: { type: "WordPiece", vocab: { "[UNK]": 0 }, unk_token: "[UNK]", continuing_subword_prefix: "##" },
      post_processor: null,
      decoder: null,
      added_tokens: [],
    },
    {},
  );
  return (line) => {
    const n = t.normalizer(line);
    return n.length ? t.pre_tokenizer(n).join(" ") : "";
  };
}

const hex = (cp) => "0x" + cp.toString(16).toUpperCase();

// Canonical combining class of x, as far as NFD's order tells: 0 when x
// never moves past a mark; else placed among probe marks of known classes.
const PROBES = [[1, "\u0334"], [6, "\u{16FF0}"], [7, "\u093C"], [9, "\u094D"], [202, "\u0327"], [216, "\u031B"],
  [220, "\u0316"], [224, "\u302E"], [226, "\u{1D16D}"], [230, "\u0300"], [232, "\u0315"], [233, "\u035C"],
  [234, "\u035D"], [240, "\u0345"]];
function combiningClass(ch) {
  const nfd = (s) => s.normalize("NFD");
  const x = [...nfd(ch)][0]; // a character that decomposes starts with its base
  let above = 0, below = 255, tie = -1;
  for (const [ccc, p] of PROBES) {
    if (nfd(x + p) !== nfd(x) + p) above = Math.max(above, ccc); // x sorts after p
    else if (nfd(p + x) !== p + nfd(x)) below = Math.min(below, ccc); // x sorts before p
    else if (tie < 0) tie = ccc;
  }
  if (above === 0 && below === 255) return 0;
  return tie >= 0 && tie > above && tie < below ? tie : above + 1;
}

// The entries src/text.c needs for cp: what lower-case + NFD + dropping Mn
// give, the combining class and the Cased / Case_Ignorable flags; or a
// punctuation range.
function suggestion(cp, ours) {
  const x = String.fromCodePoint(cp);
  const lines = [];
  const oursKeepsWhole = ours.split(" ").includes(`a${x}b`);
  if (/\p{P}/u.test(x) && oursKeepsWhole) lines.push(`PUNCT_NEWER += "\\\\x{${cp.toString(16).toUpperCase()}}"`);
  const to = [...x.toLowerCase().normalize("NFD").replace(/\p{Mn}/gu, "")].map((c) => hex(c.codePointAt(0)));
  const flags = [];
  if (/\p{Cased}/u.test(x)) flags.push("OV_CASED");
  if (/\p{Case_Ignorable}/u.test(x)) flags.push("OV_IGNORABLE");
  if (lines.length === 0 || to.join() !== hex(cp))
    lines.push(`{${hex(cp)}, ${flags.join(" | ") || "0"}, ${to.length}, ${combiningClass(x)}, {${to.join(", ")}}},`);
  return lines;
}

const [mode, a, b] = process.argv.slice(2);
if (mode === "lines" && a) {
  writeFileSync(a, codePoints().map((cp) => sweepLine(cp) + "\n").join(""));
} else if (mode === "check" && a && b) {
  const words = referenceWords();
  const cps = codePoints();
  const lines = readFileSync(a, "utf-8").split("\n");
  const ours = readFileSync(b, "utf-8").split("\n");
  let bad = 0;
  for (let i = 0; i < cps.length; i++) {
    const want = words(lines[i]);
    if (ours[i] === want) continue;
    if (++bad <= 2000) {
      process.stdout.write(`${hex(cps[i])}: reference "${want}", storylm "${ours[i]}"\n`);
      for (const s of suggestion(cps[i], ours[i] ?? "")) process.stdout.write(`    ${s}\n`);
    }
  }
  process.stdout.write(`${cps.length} code points, ${bad} differ\n`);
  process.exit(bad ? 1 : 0);
} else {
  process.stderr.write("usage: node unicode_sweep.mjs lines OUT | check LINES OURS\n");
  process.exit(2);
}
