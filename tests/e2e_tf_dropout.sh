#!/usr/bin/env bash
# End to end: --dropout and --attention-dropout on --arch transformer and
# --arch attn-only, on a small transformer trained here. Each at 0 trains the
# very weights of a plain run; each on changes the weights and repeats bit for
# bit; the file records both rates (info); evaluation never drops (eval of the
# saved model gives the test loss training recorded); a run stopped and
# resumed ends with the weights of an uninterrupted one.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 200 > slice.txt
common=(--vocab vocab.txt --threads 2 --eval-every 10 --seed 5 --test-stories 20 --steps 20 --d-model 32 --n-heads 4)
train() { # OUT LOG [flags...]
  local out=$1 log=$2
  shift 2
  "$STORYLM" train slice.txt "${common[@]}" --out "$out" "$@" > "$log.out" 2> "$log" || { cat "$log"; fail "train $*"; }
}
tf=(--arch transformer --d-mlp 64 --position-scheme alibi)

train plain.safetensors plain.log "${tf[@]}"
train zeros.safetensors zeros.log "${tf[@]}" --dropout 0 --attention-dropout 0
[[ "$(tensor_sums plain.safetensors)" == "$(tensor_sums zeros.safetensors)" ]] || fail "dropout 0 changed the weights"

for opt in "--dropout 0.1" "--attention-dropout 0.1"; do
  name=$(echo "$opt" | tr -d ' .-')
  # shellcheck disable=SC2086
  train "$name.safetensors" "$name.log" "${tf[@]}" $opt
  [[ "$(tensor_sums "$name.safetensors")" != "$(tensor_sums plain.safetensors)" ]] || fail "$opt did not change the weights"
done
train both.safetensors both.log "${tf[@]}" --dropout 0.1 --attention-dropout 0.1
train again.safetensors again.log "${tf[@]}" --dropout 0.1 --attention-dropout 0.1
[[ "$(tensor_sums both.safetensors)" == "$(tensor_sums again.safetensors)" ]] || fail "dropout does not repeat bit for bit"

# The record: both rates in the file's metadata and in info's training record.
"$STORYLM" info --model both.safetensors --json > both.json
"$PY" - both.json <<'PY' || fail "the file does not record the dropout rates"
import json, sys
md = json.load(open(sys.argv[1]))["metadata"]
assert md.get("dropout") == "0.1" and md.get("attention_dropout") == "0.1", md
PY
"$STORYLM" info --model both.safetensors > both.txt
grep -Eq "^  dropout +0.1$" both.txt && grep -Eq "^  attention_dropout +0.1$" both.txt ||
  { cat both.txt; fail "info's training record does not give the dropout rates"; }

# Evaluation never drops: eval of the saved model gives the test loss training recorded.
want=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["test_loss"])' both.json)
got=$("$STORYLM" eval slice.txt --model both.safetensors --test-stories 20 --json | "$PY" -c 'import json,sys; print("%.6f" % json.load(sys.stdin)["loss"])')
[[ "$want" == "$got" ]] || fail "eval of a dropout-trained transformer gives $got, training recorded $want"

# Stopped at step 10 and resumed: the same weights as straight through.
train part.safetensors part.log "${tf[@]}" --dropout 0.1 --attention-dropout 0.1 --stop-at 10
train part.safetensors resume.log "${tf[@]}" --dropout 0.1 --attention-dropout 0.1 --resume
[[ "$(tensor_sums part.safetensors)" == "$(tensor_sums both.safetensors)" ]] || fail "the resumed run differs from straight through"

# attn-only: both dropouts change its weights and repeat.
train ao.safetensors ao.log --arch attn-only
train aodrop.safetensors aodrop.log --arch attn-only --dropout 0.1 --attention-dropout 0.1
train aodrop2.safetensors aodrop2.log --arch attn-only --dropout 0.1 --attention-dropout 0.1
[[ "$(tensor_sums ao.safetensors)" != "$(tensor_sums aodrop.safetensors)" ]] || fail "attn-only: dropout changed nothing"
[[ "$(tensor_sums aodrop.safetensors)" == "$(tensor_sums aodrop2.safetensors)" ]] || fail "attn-only: dropout does not repeat"
echo "e2e_tf_dropout: all passed"
