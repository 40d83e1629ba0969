#!/usr/bin/env bash
# End to end: train --precision bf16 (BF16 products, FP32 sums, weights and
# Adam) learns as FP32 does, the attention network and the transformer: after 40 steps on a small slice its test loss is
# within 1% of FP32's (same seed), while its weights differ from FP32's (the
# switch does something); the same seed and threads give the same bits twice;
# a run stopped and resumed equals the uninterrupted one; the model file
# records the precision and --resume refuses another; a bad --precision is
# refused. generate --precision bf16: --samples 3 gives each sample what it
# writes alone with its seed, its log-probabilities are within 0.05 of
# FP32's on the same tokens, --json and bench generate say the precision, and
# the transformer's batch is its samples alone too. Skipped (77) on a CPU without avx512_bf16,
# after checking that --precision bf16 is refused there with a message that
# says why.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 200 > slice.txt
common=(--vocab vocab.txt --threads 2 --eval-every 0 --seed 7 --test-stories 20 --steps 40)
field() { "$PY" -c "import json,sys; print(json.loads(sys.argv[1])['$2'])" "$1"; }
meta() { "$STORYLM" info --model "$1" --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)['metadata'].get('$2', 'absent'))"; }
test_loss() {
  "$STORYLM" eval slice.txt --model "$1" --test-stories 20 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])'
}

for verb in "train slice.txt --vocab vocab.txt --steps 1" "bench train slice.txt" "generate Lily"; do
  if $STORYLM $verb --precision fp16 2> bad.err; then fail "$verb --precision fp16 was accepted"; fi
  grep -q "fp16" bad.err && grep -q "bf16" bad.err || { cat bad.err; fail "$verb --precision fp16: the message names neither it nor the choices"; }
done

if ! grep -qw avx512_bf16 /proc/cpuinfo; then
  if "$STORYLM" train slice.txt "${common[@]}" --precision bf16 --out no.safetensors 2> no.err; then
    fail "--precision bf16 ran on a CPU without avx512_bf16"
  fi
  grep -q "avx512_bf16" no.err || { cat no.err; fail "the refusal does not say the CPU lacks avx512_bf16"; }
  if "$STORYLM" generate --precision bf16 Lily 2> no.err; then fail "generate --precision bf16 ran without avx512_bf16"; fi
  grep -q "avx512_bf16" no.err || { cat no.err; fail "generate's refusal does not say the CPU lacks avx512_bf16"; }
  skip "this CPU has no avx512_bf16"
fi

"$STORYLM" train slice.txt "${common[@]}" --out fp32.safetensors 2> fp32.log || { cat fp32.log; fail "train fp32"; }
"$STORYLM" train slice.txt "${common[@]}" --precision bf16 --out bf16.safetensors 2> bf16.log || { cat bf16.log; fail "train bf16"; }
"$STORYLM" train slice.txt "${common[@]}" --precision bf16 --out again.safetensors 2> again.log || { cat again.log; fail "train bf16 again"; }

[[ $(meta bf16.safetensors precision) == bf16 && $(meta fp32.safetensors precision) == fp32 ]] ||
  fail "the model files do not record their precision"
[[ "$(tensor_sums bf16.safetensors)" == "$(tensor_sums again.safetensors)" ]] || fail "bf16 with the same seed and threads gave other bits"
[[ "$(tensor_sums bf16.safetensors)" != "$(tensor_sums fp32.safetensors)" ]] || fail "bf16 trained exactly the fp32 weights: the products stayed fp32"

a=$(test_loss fp32.safetensors) b=$(test_loss bf16.safetensors)
echo "test loss after 40 steps: fp32 $a, bf16 $b"
"$PY" -c "import sys; sys.exit(0 if abs($a - $b) < 0.01 * $a and $b < 6.5 else 1)" || fail "bf16's test loss $b is not within 1% of fp32's $a"

# Stopped and resumed: --precision fp32 against the run is refused; without it the run goes on in bf16, bit for bit.
"$STORYLM" train slice.txt "${common[@]}" --precision bf16 --stop-at 15 --out part.safetensors 2> part.log || { cat part.log; fail "train --stop-at"; }
if "$STORYLM" train slice.txt "${common[@]}" --precision fp32 --resume --out part.safetensors 2> refuse.log; then
  fail "--resume of a bf16 run with --precision fp32 was accepted"
fi
grep -q "precision" refuse.log || { cat refuse.log; fail "the refusal does not name --precision"; }
"$STORYLM" train slice.txt "${common[@]}" --resume --out part.safetensors 2> resume.log || { cat resume.log; fail "train --resume"; }
[[ "$(tensor_sums bf16.safetensors)" == "$(tensor_sums part.safetensors)" ]] || fail "the resumed bf16 run differs from the uninterrupted one"

# The transformer trains in BF16 by the same rules: the same seed and threads give the same bits,
# its test loss is near FP32's, a run stopped and resumed equals the uninterrupted one.
tf=(--arch transformer --d-model 32 --n-heads 4 --d-head 8 --d-mlp 64)
"$STORYLM" train slice.txt "${common[@]}" "${tf[@]}" --out tf32.safetensors 2> tf32.log || { cat tf32.log; fail "train --arch transformer"; }
for run in tf16 tf16again; do
  "$STORYLM" train slice.txt "${common[@]}" "${tf[@]}" --precision bf16 --out $run.safetensors 2> $run.log ||
    { cat $run.log; fail "train --arch transformer --precision bf16"; }
done
[[ $(meta tf16.safetensors precision) == bf16 ]] || fail "the transformer's file does not record bf16"
[[ "$(tensor_sums tf16.safetensors)" == "$(tensor_sums tf16again.safetensors)" ]] || fail "the transformer in bf16 gave other bits twice"
[[ "$(tensor_sums tf16.safetensors)" != "$(tensor_sums tf32.safetensors)" ]] || fail "the transformer's bf16 run is its fp32 run"
a=$(test_loss tf32.safetensors) b=$(test_loss tf16.safetensors)
echo "the transformer's test loss after 40 steps: fp32 $a, bf16 $b"
"$PY" -c "import sys; sys.exit(0 if abs($a - $b) < 0.01 * $a else 1)" || fail "the transformer's bf16 test loss $b is not within 1% of fp32's $a"
"$STORYLM" train slice.txt "${common[@]}" "${tf[@]}" --precision bf16 --stop-at 15 --out tfpart.safetensors 2> tfpart.log ||
  { cat tfpart.log; fail "train --arch transformer --stop-at"; }
"$STORYLM" train slice.txt "${common[@]}" "${tf[@]}" --resume --out tfpart.safetensors 2> tfresume.log ||
  { cat tfresume.log; fail "train --arch transformer --resume"; }
[[ "$(tensor_sums tf16.safetensors)" == "$(tensor_sums tfpart.safetensors)" ]] || fail "the transformer's resumed bf16 run differs"

# Generation in BF16 on the shipped model: a batch is its samples alone; the log-probabilities stay near FP32's.
M="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
gen() { "$STORYLM" generate --model "$M" -n 40 --json "$@" 2> /dev/null; }
gen --precision bf16 --seed 4 --samples 3 "Lily found a" > three.json || fail "generate --precision bf16 --samples 3"
for i in 0 1 2; do gen --precision bf16 --seed $((4 + i)) "Lily found a" > "alone$i.json" || fail "generate --precision bf16"; done
"$PY" - three.json alone0.json alone1.json alone2.json <<'EOF' || fail "generate --precision bf16: the batch is not its samples alone"
import json, sys
three = json.load(open(sys.argv[1]))
assert three["precision"] == "bf16", three.get("precision")
for i, path in enumerate(sys.argv[2:]):
    alone = json.load(open(path))["samples"][0]
    assert {**three["samples"][i], "sample": 1} == alone, i
EOF
gen -t 0 "Lily found a" > fp32.json || fail "generate"
gen -t 0 --precision bf16 "Lily found a" > greedy.json || fail "generate --precision bf16 -t 0"
"$PY" - fp32.json greedy.json <<'EOF' || fail "generate --precision bf16: log-probabilities far from FP32's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["precision"] == "fp32"
ta, tb = a["samples"][0]["tokens"], b["samples"][0]["tokens"]
same = 0
for x, y in zip(ta, tb):  # the same story so far: the same token's log-probability under both
    if x["id"] != y["id"]:
        break
    assert abs(x["logprob"] - y["logprob"]) < 0.05, (x, y)
    same += 1
print("BF16 and FP32 agree on the first %d tokens of %d" % (same, len(ta)))
assert same >= 3
EOF
# The transformer in BF16: its batch is its samples alone too.
TF="$STORYLM_SOURCE_DIR/models/tinystories-transformer.safetensors"
"$STORYLM" generate --model "$TF" -n 30 --json --precision bf16 --seed 8 --samples 2 Tom > tf2.json 2> /dev/null || fail "the transformer in BF16"
"$STORYLM" generate --model "$TF" -n 30 --json --precision bf16 --seed 9 Tom > tf1.json 2> /dev/null || fail "the transformer in BF16"
"$PY" -c "import json; a = json.load(open('tf2.json'))['samples'][1]; b = json.load(open('tf1.json'))['samples'][0]; assert {**a, 'sample': 1} == b" ||
  fail "the transformer in BF16: sample 2 of a batch is not itself alone"
j=$("$STORYLM" bench generate "$M" --tokens 20 --samples 2 --precision bf16)
[[ $(field "$j" precision) == bf16 ]] || fail "bench generate --precision bf16: $j"
echo "ok"
