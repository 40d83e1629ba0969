#!/usr/bin/env bash
# Training's regularisation flags through the real binary, on a small slice of
# data/stories.txt: each off by default (all of them given as 0 train the very
# weights of a plain run); each one on changes the weights and repeats bit for
# bit; a run stopped and resumed with every option on (and with --ema-save)
# ends with the weights, average and best model of an uninterrupted one; the
# moving average is evaluated in the progress lines and saved; --keep-best
# keeps the best and says which step; bad values and a resume with other flags
# are refused with a message naming the flag.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 300 > slice.txt
common=(--vocab vocab.txt --threads 2 --eval-every 12 --seed 5 --test-stories 30 --steps 24)
train() { # OUT LOG [flags...]
  local out=$1 log=$2
  shift 2
  "$STORYLM" train slice.txt "${common[@]}" --out "$out" "$@" > "$log.out" 2> "$log" || { cat "$log"; fail "train $*"; }
}

train plain.safetensors plain.log
train zeros.safetensors zeros.log --weight-decay 0 --dropout 0 --attention-dropout 0 --ema 0 --swap-names 0
[[ "$(tensor_sums plain.safetensors)" == "$(tensor_sums zeros.safetensors)" ]] || fail "options at 0 changed the weights"
"$STORYLM" info --model zeros.safetensors --json | "$PY" -c '
import json, sys
meta = json.load(sys.stdin)["metadata"]
bad = [k for k in ("weight_decay", "dropout", "attention_dropout", "ema", "swap_names", "keep_best") if k in meta]
sys.exit("options that are off were recorded: %s" % bad if bad else 0)'

# Each option on: other weights than the plain run's; dropout's seeded masks repeat bit for bit.
for opt in "--weight-decay 0.5" "--dropout 0.2" "--attention-dropout 0.2" "--swap-names 0.5"; do
  name=$(echo "$opt" | tr -d ' .-')
  # shellcheck disable=SC2086
  train "$name.safetensors" "$name.log" $opt
  [[ "$(tensor_sums "$name.safetensors")" != "$(tensor_sums plain.safetensors)" ]] || fail "$opt did not change the weights"
done
train again.safetensors again.log --dropout 0.2
[[ "$(tensor_sums dropout02.safetensors)" == "$(tensor_sums again.safetensors)" ]] || fail "--dropout does not repeat bit for bit"
grep -q "swap-names 0.5: .* names of the training stories" swapnames05.log || fail "--swap-names does not say what names it learnt"
# dropout is training's only: eval of the saved model gives the test loss training reported
want=$("$STORYLM" info --model dropout02.safetensors --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["test_loss"])')
got=$("$STORYLM" eval slice.txt --model dropout02.safetensors --test-stories 30 --json | "$PY" -c 'import json,sys; print("%.6f" % json.load(sys.stdin)["loss"])')
[[ "$want" == "$got" ]] || fail "eval of a dropout-trained model gives $got, training reported $want"

# Everything on, stopped at step 20 and resumed: the same files as straight through.
all=(--weight-decay 0.1 --dropout 0.1 --attention-dropout 0.1 --ema 0.9 --keep-best --swap-names 0.5)
train all.safetensors all.log "${all[@]}"
train part.safetensors part.log "${all[@]}" --stop-at 12
grep -q -- "--resume --out part.safetensors --vocab vocab.txt --steps 24 .*--weight-decay 0.1 --dropout 0.1 --attention-dropout 0.1 --ema 0.9 --keep-best --swap-names 0.5" part.log.out \
  || { cat part.log.out; fail "the resume hint does not repeat the flags"; }
train part.safetensors resume.log "${all[@]}" --resume
for f in "" .ema .best; do
  [[ -f all$f.safetensors ]] || fail "no all$f.safetensors"
  [[ "$(tensor_sums all$f.safetensors)" == "$(tensor_sums part$f.safetensors)" ]] || fail "resumed$f differs from straight through"
done
grep -Eq '^step +12/24 .*test [0-9.]+ acc [0-9.]+% ema [0-9.]+' all.log || { cat all.log; fail "no ema loss in the progress line"; }
grep -Eq '^best: step [0-9]+, test loss [0-9.]+, kept in all.best.safetensors' all.log || fail "the summary does not say the best step"
grep -Eq '^moving average: test loss [0-9.]+' all.log || fail "the summary does not give the average's loss"

# --ema-save: the average is the model, the raw weights beside it resume exactly.
train es.safetensors es.log --ema 0.8 --ema-save --keep-best
train espart.safetensors espart.log --ema 0.8 --ema-save --keep-best --stop-at 12
train espart.safetensors esresume.log --ema 0.8 --ema-save --keep-best --resume
[[ -f es.raw.safetensors && -f es.raw.adam.safetensors && ! -f es.adam.safetensors ]] || fail "--ema-save files"
for f in "" .raw .best; do
  [[ "$(tensor_sums es$f.safetensors)" == "$(tensor_sums espart$f.safetensors)" ]] || fail "--ema-save resumed$f differs"
done
[[ "$(tensor_sums es.safetensors)" != "$(tensor_sums es.raw.safetensors)" ]] || fail "the saved average is the raw weights"
ema_loss=$(grep -Eo 'ema [0-9.]+' es.log | tail -1 | cut -d' ' -f2)
got=$("$STORYLM" eval slice.txt --model es.safetensors --test-stories 30 --json | "$PY" -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["loss"])')
[[ "$ema_loss" == "$got" ]] || fail "the saved model's loss $got is not the average's $ema_loss"
# its record's accuracy is the average's too (eval's), not the raw weights'
"$STORYLM" eval slice.txt --model es.safetensors --test-stories 30 --json > es_eval.json
"$STORYLM" info --model es.safetensors --json > es_info.json
"$PY" - es_eval.json es_info.json <<'CHECK' || fail "the saved average's recorded test_accuracy is not its own"
import json, sys
acc = json.load(open(sys.argv[1]))["accuracy"]
rec = float(json.load(open(sys.argv[2]))["metadata"]["test_accuracy"])
sys.exit(0 if abs(acc - rec) < 1e-6 else "eval %.6f, record %.6f" % (acc, rec))
CHECK

# Bad values and a resume with other flags: refused, naming the flag.
refuse() { # PATTERN flags...
  local pattern=$1
  shift
  if "$STORYLM" train slice.txt "${common[@]}" --out bad.safetensors "$@" > bad.out 2> bad.err; then fail "train $* was accepted"; fi
  grep -q -- "$pattern" bad.err || { cat bad.err; fail "train $*: the message does not name $pattern"; }
}
refuse "--dropout 1" --dropout 1
refuse "--attention-dropout" --attention-dropout 1
refuse "--weight-decay" --weight-decay -0.5
refuse "--ema" --ema 1
refuse "--ema-save" --ema-save
refuse "--swap-names" --swap-names 1.5
"$STORYLM" train slice.txt "${common[@]}" --steps 60 --resume --out part.safetensors > bad.out 2> bad.err && fail "a resume without the run's flags was accepted"
grep -q "cannot resume 'part.safetensors': it was trained with --weight-decay 0.1" bad.err || { cat bad.err; fail "resume without the flags: message"; }
"$STORYLM" train slice.txt "${common[@]}" --steps 60 --resume --out part.safetensors "${all[@]/0.9/0.8}" > bad.out 2> bad.err && fail "a resume with another --ema was accepted"
grep -q "it was trained with --ema 0.9, not 0.8" bad.err || { cat bad.err; fail "resume with another --ema: message"; }
"$STORYLM" train slice.txt "${common[@]}" --steps 60 --resume --out es.safetensors --ema 0.8 > bad.out 2> bad.err && fail "a resume without --ema-save was accepted"
grep -q "it was trained with --ema-save" bad.err || { cat bad.err; fail "resume without --ema-save: message"; }
# and the other way: --ema-save added to a run that had none (it said "cannot open 'part.raw.safetensors'")
"$STORYLM" train slice.txt "${common[@]}" --steps 60 --resume --out part.safetensors "${all[@]}" --ema-save > bad.out 2> bad.err &&
  fail "a resume adding --ema-save was accepted"
grep -q "cannot resume 'part.safetensors': it was trained without --ema-save" bad.err || { cat bad.err; fail "resume adding --ema-save: message"; }
echo "regularisation flags: all checks passed"
