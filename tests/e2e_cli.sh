#!/usr/bin/env bash
# The command line's conventions, the same in every verb: `storylm help VERB`,
# typos answered with the nearest verb or flag, short options with their
# value attached (-n10), --output accepted for --out.
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
S="$STORYLM"
MODEL="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"

"$S" help eval > help.txt || fail "storylm help eval"
"$S" eval --help > help2.txt
cmp -s help.txt help2.txt || fail "'storylm help eval' differs from 'storylm eval --help'"
grep -q "^usage: storylm eval" help.txt || fail "help eval: $(head -1 help.txt)"
"$S" help --help > /dev/null 2>&1 || true
if "$S" help nosuchverb 2> err.txt; then fail "help of an unknown verb exits 0"; fi

for typo in genrate generat gnerate; do
  if "$S" "$typo" x 2> err.txt; then fail "unknown verb '$typo' exits 0"; fi
  grep -q "did you mean 'generate'" err.txt || fail "no suggestion for '$typo': $(cat err.txt)"
done
if "$S" qqqqqq 2> err.txt; then fail "unknown verb exits 0"; fi
grep -q "did you mean" err.txt && fail "a word far from every verb got a suggestion: $(cat err.txt)"
grep -q "storylm --help" err.txt || fail "no hint for an unknown verb: $(cat err.txt)"

if "$S" generate --tokns 5 2> err.txt; then fail "unknown flag exits 0"; fi
grep -q "did you mean --tokens" err.txt || fail "no suggestion for --tokns: $(cat err.txt)"
if "$S" eval x --zzzzzzzz 2> err.txt; then fail "unknown flag exits 0"; fi
grep -q "did you mean" err.txt && fail "a flag far from every flag got a suggestion: $(cat err.txt)"

# -n10 is -n 10; -t0 is -t 0.
"$S" generate "Lily found a" -n10 -t0 --model "$MODEL" > attached.txt 2> /dev/null || fail "generate -n10 -t0"
"$S" generate "Lily found a" -n 10 -t 0 --model "$MODEL" > apart.txt 2> /dev/null
cmp -s attached.txt apart.txt || fail "-n10 -t0 differs from -n 10 -t 0"

# --output means --out.
printf 'Lily had a red ball. She liked it.\n\nTom saw a dog. The dog ran.\n' > s.txt
"$S" vocab s.txt --output v.txt --size 40 > /dev/null 2>&1 || fail "vocab --output"
"$S" vocab s.txt --out v2.txt --size 40 > /dev/null 2>&1 || fail "vocab --out"
[[ -s v.txt ]] && cmp -s v.txt v2.txt || fail "vocab --output and --out differ"
"$S" train --help | grep -q -- "-o, --out FILE" || fail "train has no -o, --out"
"$S" plot --help | grep -q -- "-o, --out FILE" || fail "plot has no -o, --out"
echo "PASSED: help VERB, typo suggestions, attached short values, --output"
