#!/usr/bin/env bash
# --invent-names through the real binary, on a small slice of data/stories.txt,
# for the chapter's network and the transformer: it changes the weights and
# repeats bit for bit for the same seed; a run stopped and resumed ends with the
# weights of an uninterrupted one; the model records it and a resume with
# another value is refused; bad values (also with --swap-names, whose share it
# shares) are refused naming the flag; pieces reads the transformer's heads.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 300 > slice.txt
common=(--vocab vocab.txt --threads 2 --eval-every 12 --seed 5 --test-stories 30 --steps 24)
train() { # OUT LOG [flags...]
  local out=$1 log=$2
  shift 2
  "$STORYLM" train slice.txt "${common[@]}" --out "$out" "$@" > "$log.out" 2> "$log" || { cat "$log"; fail "train $*"; }
}

tf=(--arch transformer --d-model 16 --n-heads 2 --d-head 8 --d-mlp 32)
for arch in attention transformer; do
  flags=()
  [[ $arch == transformer ]] && flags=("${tf[@]}")
  train "plain-$arch.safetensors" "plain-$arch.log" "${flags[@]}"
  train "inv-$arch.safetensors" "inv-$arch.log" "${flags[@]}" --invent-names 0.5
  train "again-$arch.safetensors" "again-$arch.log" "${flags[@]}" --invent-names 0.5
  [[ "$(tensor_sums "inv-$arch.safetensors")" != "$(tensor_sums "plain-$arch.safetensors")" ]] \
    || fail "$arch: --invent-names did not change the weights"
  [[ "$(tensor_sums "inv-$arch.safetensors")" == "$(tensor_sums "again-$arch.safetensors")" ]] \
    || fail "$arch: --invent-names does not repeat bit for bit"
  train "part-$arch.safetensors" "part-$arch.log" "${flags[@]}" --invent-names 0.5 --stop-at 12
  grep -q -- "--invent-names 0.5" "part-$arch.log.out" || { cat "part-$arch.log.out"; fail "the resume hint lacks --invent-names"; }
  train "part-$arch.safetensors" "resume-$arch.log" "${flags[@]}" --invent-names 0.5 --resume
  [[ "$(tensor_sums "inv-$arch.safetensors")" == "$(tensor_sums "part-$arch.safetensors")" ]] \
    || fail "$arch: resumed differs from straight through"
done
grep -Eq "invent-names 0.5: heroes found by [0-9]+ names of the training stories; names made of [0-9]+ first pieces" inv-attention.log \
  || { cat inv-attention.log; fail "--invent-names does not say what it invents from"; }
"$STORYLM" info --model inv-attention.safetensors --json | "$PY" -c '
import json, sys
meta = json.load(sys.stdin)["metadata"]
sys.exit(0 if meta.get("invent_names") == "0.5" else "invent_names not recorded: %s" % meta.get("invent_names"))'

# pieces reads the transformer's heads too: the table of the two lookups, layer 2's heads in it.
"$STORYLM" pieces slice.txt -m inv-transformer.safetensors --test-stories 30 --threads 1 > pieces.out 2> pieces.err \
  || { cat pieces.err; fail "pieces on a transformer"; }
grep -Eq '^2:1 +2 +[0-9.]+ +[0-9.]+$' pieces.out || { cat pieces.out; fail "pieces shows no layer-2 head of the transformer"; }

refuse() { # PATTERN flags...
  local pattern=$1
  shift
  if "$STORYLM" train slice.txt "${common[@]}" --out bad.safetensors "$@" > bad.out 2> bad.err; then fail "train $* was accepted"; fi
  grep -q -- "$pattern" bad.err || { cat bad.err; fail "train $*: the message does not name $pattern"; }
}
refuse "--invent-names 1.5" --invent-names 1.5
refuse "--invent-names -0.1" --invent-names -0.1
refuse "--invent-names 0.6 is not a probability up to 0.4" --swap-names 0.6 --invent-names 0.6
"$STORYLM" train slice.txt "${common[@]}" --steps 24 --resume --out part-attention.safetensors --invent-names 0.3 \
  > bad.out 2> bad.err && fail "a resume with another --invent-names was accepted"
grep -q "it was trained with --invent-names 0.5, not 0.3" bad.err || { cat bad.err; fail "resume with another --invent-names: message"; }
echo "invented names: all checks passed"
