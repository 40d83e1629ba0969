#!/usr/bin/env bash
# The command line's conventions, the same in every verb: `storylm help VERB`,
# typos answered with the nearest verb or flag, short options with their
# value attached (-n10), --output accepted for --out, a flag given only when it was
# (an output named -s.safetensors is no -s).
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
# (help read whole first: grep -q stops reading at its match, and a help past the pipe's
# first write would then die of SIGPIPE under pipefail)
for verb in train plot; do
  "$S" $verb --help > help.txt
  grep -q -- "-o, --out FILE" help.txt || fail "$verb has no -o, --out"
done
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
# (--out writes a file, or sae train's folder of files: DIR is the same meaning, the output's path)
awk '{f = $2 == "-h," ? "" : $0; sub(/^[^ ]+ (-[a-z], )?/, "", f); split(f, w, " "); if (w[1] == "--out" && w[2] == "DIR") w[2] = "FILE"; if (w[1] ~ /^--/) print w[1], (w[2] ? w[2] : "-")}' flags.txt |
  sort -u | awk '{n[$1]++; m[$1] = m[$1] " " $2} END {for (k in n) if (n[k] > 1) print k ":" m[k]}' > clash.txt
# a flag with two placeholders has two meanings (--pos N a token position, --pos SCHEME a position scheme)
[[ ! -s clash.txt ]] || fail "flags with different placeholders across verbs: $(cat clash.txt)"
# ... and so has one whose help names different things: a position flag is a place in the text everywhere,
# a count of tokens is a count everywhere
grep -E '^ +--pos ' help.*.txt | grep -v 'position' && fail "a --pos that is not a position in the text"
grep -E '^ +(-n, )?--tokens ' help.*.txt | grep -viE 'new tokens|most new' && fail "a --tokens that does not count new tokens"
# the old names of renamed flags still work for one release, with a warning
"$S" train nosuch.txt --pos rope 2> old.txt || true
grep -q "warning: --pos is now --position-scheme" old.txt || fail "train --pos SCHEME gave no warning: $(cat old.txt)"
grep -q "unknown option" old.txt && fail "train --pos SCHEME is no longer read: $(cat old.txt)"
if "$S" attend "Lily" --model "$MODEL" --position-scheme rope 2> err.txt; then fail "attend accepted --position-scheme"; fi
[[ $(grep -c '^--model:' clash.txt || true) -eq 0 ]] || fail "--model's placeholder differs: $(grep '^--model:' clash.txt)"
for flag in --threads --ablate --ablate-mode; do
  n=$(grep "^$flag " shared.txt | sed -E 's/\(default: [^)]*\)$//' | sort -u | wc -l)
  ((n <= 1)) || fail "$flag has $n different help texts: $(grep "^$flag " shared.txt | sort -u)"
done
grep -q -- '--top ' flags.txt && fail "a verb still calls a k --top: $(grep -- '--top ' flags.txt)"
"$S" trace "Lily found a" --model "$MODEL" --top 2 > top.txt 2> /dev/null || fail "--top is no longer read as --top-k"
"$S" trace "Lily found a" --model "$MODEL" --top-k 2 > top_k.txt 2> /dev/null
cmp -s top.txt top_k.txt || fail "--top and --top-k differ"
# What was given is what the parser read, not any argument that looks like it: an output named
# "-s.safetensors" is no -s (--seed) given again, which a resume would refuse.
first_stories 40 > forty.txt
small=(forty.txt --vocab-size 60 --vocab forty.vocab.txt --steps 3 --eval-every 0 --test-stories 4 --threads 1)
"$S" train "${small[@]}" --seed 3 -o -s.safetensors > /dev/null 2> first.txt || { cat first.txt; fail "train -o -s.safetensors"; }
"$S" train "${small[@]}" --steps 4 -o -s.safetensors --resume > /dev/null 2> resume.txt ||
  { cat resume.txt; fail "--resume of -o -s.safetensors was refused as if --seed were given"; }
if "$S" train "${small[@]}" --steps 5 -o -s.safetensors --resume -s 2 2> seed.txt > /dev/null; then
  fail "a resume with another -s was taken"; fi
grep -q -- "--seed" seed.txt || fail "a resume with another -s: $(cat seed.txt)"
echo "PASSED: help VERB, typo suggestions, attached short values, --output, one help convention, one meaning a flag, given flags"
