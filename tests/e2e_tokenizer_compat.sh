#!/usr/bin/env bash
# SPEC section 2: a standard BERT WordPiece tokenizer loaded with our vocab.txt
# gives exactly our ids. The reference is @huggingface/tokenizers (pinned in
# tests/compat/package.json; BertNormalizer + BertPreTokenizer + WordPiece).
#
# 1. trains a 2,000-piece vocabulary with `storylm vocab`
#    (STORYLM_COMPAT_VOCAB=FILE uses FILE instead);
# 2. takes the first 300 stories of data/stories.txt, 300 TinyStories stories
#    (../shared/data/tinystories-train.txt beside the project, when there) and
#    the hand-written hard text of tests/fixtures/tokenizer_hard.txt, one text a line;
# 3. requires identical words (after normalisation) and identical ids for every text;
#    and the same for a cased vocabulary (vocab --cased: BERT-cased on the text in NFC);
# 4. puts every Unicode character through both normalisers and pre-tokenizers
#    (tests/compat/unicode_sweep.mjs) and requires the same words.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
src="$STORYLM_SOURCE_DIR"
compat="$src/tests/compat"
tmp="$STORYLM_TEST_TMP"

if [[ ! -d "$compat/node_modules/@huggingface/tokenizers" ]]; then
    skip "tests/compat/node_modules is missing: run scripts/setup first (or scripts/setup_npm)"
fi
if ! command -v node >/dev/null; then
    skip "node is not installed: run scripts/setup first"
fi

# stories_as_lines FILE MAX: the first MAX stories of FILE, each on one line
# (its newlines become spaces, which the normalisation does anyway).
stories_as_lines() {
    local file="$1" max="$2"
    if grep -qx '<|endoftext|>' "$file"; then
        LC_ALL=C awk -v max="$max" '
            $0 == "<|endoftext|>" { if (s != "") { print s; n++ } s = ""; if (n >= max) exit; next }
            { s = (s == "") ? $0 : s " " $0 }
            END { if (s != "" && n < max) print s }' "$file"
    else # stories separated by blank lines
        LC_ALL=C awk -v max="$max" 'BEGIN { RS = "" } n < max { gsub(/\n/, " "); print; n++ }' "$file"
    fi
}

: > "$tmp/texts.txt"
sources=()
for corpus in "$src/data/stories.txt" "$src/../shared/data/tinystories-train.txt"; do
    if [[ -f "$corpus" ]]; then
        stories_as_lines "$corpus" 300 >> "$tmp/texts.txt"
        sources+=("$corpus")
    else
        echo "note: $corpus not found, not compared"
    fi
done
if [[ ${#sources[@]} -eq 0 ]]; then
    echo "FAILED: no stories to compare (neither data/stories.txt nor ../shared/data/tinystories-train.txt)" >&2
    exit 1
fi
# Train the vocabulary on these stories, as storylm vocab reads them.
sed 's/$/\n<|endoftext|>/' "$tmp/texts.txt" > "$tmp/stories.txt"
cat "$src/tests/fixtures/tokenizer_hard.txt" >> "$tmp/texts.txt"
n_texts=$(wc -l < "$tmp/texts.txt")

if [[ -n "${STORYLM_COMPAT_VOCAB:-}" ]]; then
    cp "$STORYLM_COMPAT_VOCAB" "$tmp/vocab.txt"
elif ! "$STORYLM" vocab --help >/dev/null 2>&1; then
    echo "FAILED: this storylm has no vocab verb (STORYLM_COMPAT_VOCAB=FILE tests with a vocab.txt of your own)" >&2
    exit 1
else
    "$STORYLM" vocab "$tmp/stories.txt" -o "$tmp/vocab.txt" --size 2000
fi
[[ $(wc -l < "$tmp/vocab.txt") -eq 2000 ]] || echo "note: the vocabulary has $(wc -l < "$tmp/vocab.txt") pieces"

# first_difference NAME OURS REFERENCE: fails showing the first lines that differ.
first_difference() {
    local name="$1" ours="$2" reference="$3"
    if ! cmp -s "$ours" "$reference"; then
        echo "FAILED: $name differ from the reference:" >&2
        diff "$ours" "$reference" | head -20 >&2
        echo "(< storylm, > @huggingface/tokenizers; texts in $tmp/texts.txt)" >&2
        exit 1
    fi
}

"$STORYLM" tokenize --words --lossy --lines "$tmp/texts.txt" > "$tmp/words_storylm.txt"
node "$compat/encode.mjs" --words "$tmp/texts.txt" > "$tmp/words_reference.txt"
first_difference "words" "$tmp/words_storylm.txt" "$tmp/words_reference.txt"

"$STORYLM" tokenize --vocab "$tmp/vocab.txt" --ids --lossy --lines "$tmp/texts.txt" > "$tmp/ids_storylm.txt"
node "$compat/encode.mjs" "$tmp/vocab.txt" "$tmp/texts.txt" > "$tmp/ids_reference.txt"
first_difference "ids" "$tmp/ids_storylm.txt" "$tmp/ids_reference.txt"
[[ $(wc -l < "$tmp/ids_storylm.txt") -eq $n_texts ]] || { echo "FAILED: not one line of ids per text" >&2; exit 1; }
n_ids=$(wc -w < "$tmp/ids_storylm.txt")
[[ $n_ids -gt 10000 ]] || { echo "FAILED: only $n_ids ids compared" >&2; exit 1; }
echo "same ids for all $n_texts texts ($n_ids ids; ${sources[*]} and tests/fixtures/tokenizer_hard.txt)"

# A cased vocabulary (storylm vocab --cased): the ids of BERT-cased (no
# lower-casing, no accent stripping) on the text composed to NFC.
"$STORYLM" vocab "$tmp/stories.txt" --cased -o "$tmp/cased.txt" --size 2000
"$STORYLM" tokenize --vocab "$tmp/cased.txt" --ids --lossy --lines "$tmp/texts.txt" > "$tmp/cased_storylm.txt"
node "$compat/encode.mjs" "$tmp/cased.txt" "$tmp/texts.txt" > "$tmp/cased_reference.txt"
first_difference "cased ids" "$tmp/cased_storylm.txt" "$tmp/cased_reference.txt"
echo "same cased ids for all $n_texts texts"

node "$compat/unicode_sweep.mjs" lines "$tmp/sweep.txt"
"$STORYLM" tokenize --words --lossy --lines "$tmp/sweep.txt" > "$tmp/sweep_storylm.txt"
if ! node "$compat/unicode_sweep.mjs" check "$tmp/sweep.txt" "$tmp/sweep_storylm.txt" > "$tmp/sweep_report.txt"; then
    echo "FAILED: some Unicode characters are normalised or split differently:" >&2
    head -40 "$tmp/sweep_report.txt" >&2
    exit 1
fi
tail -1 "$tmp/sweep_report.txt"
rm -f "$tmp/sweep.txt" "$tmp/sweep_storylm.txt"
echo "e2e_tokenizer_compat: all checks passed"
