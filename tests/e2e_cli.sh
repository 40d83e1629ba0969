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
"$S" train --help | grep -- "-o, --out FILE" >/dev/null || fail "train has no -o, --out" # whole help read: see e2e_json
"$S" plot --help | grep -q -- "-o, --out FILE" || fail "plot has no -o, --out"
# Every verb's help, one way: summaries begin in lower case (or an acronym: QK); usage lines bracket what is
# optional (a --model with a default is never written as required); a flag means the same
# in every verb (its placeholder and, for --threads, --ablate and --ablate-mode, its help);
# --top is --top-k.
"$S" --help | awk '/^verbs:/ {on = 1; next} on && NF' > verbs.txt
while read -r verb summary; do
  [[ $summary =~ ^([a-z]|[A-Z][A-Z]) ]] || fail "$verb's summary does not begin in lower case: $summary"
  "$S" "$verb" --help > "help.$verb.txt"
  usage=$(head -1 "help.$verb.txt")
  [[ $usage != *" --model M "* && $usage != *"--model M ["* ]] || [[ $usage == *"--model M [options]"* && $verb == vocab ]] ||
    fail "$verb's usage writes --model as required: $usage"
  grep -E '^ +(-[a-z], )?--[a-z-]+' "help.$verb.txt" | sed -E 's/^ +//; s/  +/\t/' | cut -f1 |
    sed "s/^/$verb /" >> flags.txt
  # serve's --threads answer requests; generate's share the samples of --samples (their help says so)
  [[ $verb == serve || $verb == generate ]] ||
    grep -E '^ +--(threads|ablate|ablate-mode) ' "help.$verb.txt" | sed -E 's/^ +//; s/ +/ /g' >> shared.txt || true
done < verbs.txt
# the same long flag with two placeholders (--model FILE here, --model M there)
awk '{f = $2 == "-h," ? "" : $0; sub(/^[^ ]+ (-[a-z], )?/, "", f); split(f, w, " "); if (w[1] ~ /^--/) print w[1], (w[2] ? w[2] : "-")}' flags.txt |
  sort -u | awk '{n[$1]++; m[$1] = m[$1] " " $2} END {for (k in n) if (n[k] > 1) print k ":" m[k]}' > clash.txt
# circuits' --tokens LIST names tokens where generate's and bench's --tokens N count them (known, kept: scripts use it)
# train's --pos SCHEME is the position scheme (issue 12 names it so); no verb has both meanings
grep -vE '^--tokens: LIST N$|^--pos: N SCHEME$' clash.txt > bad_clash.txt || true
[[ ! -s bad_clash.txt ]] || fail "flags with different placeholders across verbs: $(cat bad_clash.txt)"
[[ $(grep -c '^--model:' clash.txt || true) -eq 0 ]] || fail "--model's placeholder differs: $(grep '^--model:' clash.txt)"
for flag in --threads --ablate --ablate-mode; do
  n=$(grep "^$flag " shared.txt | sed -E 's/\(default: [^)]*\)$//' | sort -u | wc -l)
  ((n <= 1)) || fail "$flag has $n different help texts: $(grep "^$flag " shared.txt | sort -u)"
done
grep -q -- '--top ' flags.txt && fail "a verb still calls a k --top: $(grep -- '--top ' flags.txt)"
"$S" trace "Lily found a" --model "$MODEL" --top 2 > top.txt 2> /dev/null || fail "--top is no longer read as --top-k"
"$S" trace "Lily found a" --model "$MODEL" --top-k 2 > top_k.txt 2> /dev/null
cmp -s top.txt top_k.txt || fail "--top and --top-k differ"
echo "PASSED: help VERB, typo suggestions, attached short values, --output, one help convention"
