#!/usr/bin/env bash
# Numerical faults stop training with a message naming the step, and the last
# good model stays on disk (issue 7); a gradient that overflows is tested
# through the library (tests/test_train.c), the binary has no hook for it:
#  - an infinite weight (a model file from elsewhere): resuming it stops at
#    the next step because the loss is not finite; the file stays as it was;
#  - huge finite weights: the logits overflow at the next step, named;
#  - finite absurd biases: every token equally likely.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 200 >stories.txt
"$STORYLM" vocab stories.txt -o vocab.txt 2>/dev/null || fail "storylm vocab"
args=(stories.txt --vocab vocab.txt --threads 2 --test-stories 10 --steps 12 --seed 3 --batch 4 --eval-every 2)

# A clean run stopped at step 6.
"$STORYLM" train "${args[@]}" --stop-at 6 --out clean6.safetensors 2>clean.log >/dev/null || { cat clean.log; fail "clean run"; }

# ---- an infinite weight: refused when the model is loaded, naming the tensor ----
cp clean6.safetensors inf.safetensors
cp clean6.adam.safetensors inf.adam.safetensors
set_tensor() { # FILE TENSOR VALUE: every number of TENSOR becomes VALUE
  "$PY" - "$@" <<'EOF'
import json, struct, sys
path, name, value = sys.argv[1], sys.argv[2], float(sys.argv[3])
raw = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
begin, end = json.loads(raw[8:8 + n])[name]["data_offsets"]
raw[8 + n + begin:8 + n + end] = struct.pack("<f", value) * ((end - begin) // 4)
open(path, "wb").write(raw)
EOF
}
set_tensor inf.safetensors output.bias inf
cp inf.safetensors inf.before
rc=0
"$STORYLM" train "${args[@]}" --resume --out inf.safetensors 2>inf.log >/dev/null || rc=$?
cat inf.log
((rc == 1)) || fail "an infinite weight: exit $rc, want 1"
grep -q "tensor 'output.bias' holds an infinity at element 0" inf.log || fail "the message does not name the tensor"
cmp -s inf.safetensors inf.before || fail "the refused run changed the model file"
for verb in eval info; do
  rc=0
  if [[ $verb == eval ]]; then "$STORYLM" eval stories.txt --model inf.safetensors >out.txt 2>err.txt || rc=$?
  else "$STORYLM" info --model inf.safetensors >out.txt 2>err.txt || rc=$?; fi
  ((rc == 1)) && grep -q "holds an infinity" err.txt || fail "$verb of a model with an infinite weight: exit $rc"
done

# ---- huge finite weights: the logits overflow at the next step, named by position ----
cp clean6.safetensors huge.safetensors
cp clean6.adam.safetensors huge.adam.safetensors
set_tensor huge.safetensors output.weight 3e38
cp huge.safetensors huge.before
rc=0
"$STORYLM" train "${args[@]}" --resume --out huge.safetensors 2>huge.log >/dev/null || rc=$?
cat huge.log
((rc == 1)) || fail "overflowing logits: exit $rc, want 1"
grep -q "error: training stopped at step 7: the .* overflows at position [0-9]* of story [0-9]* .*'huge.safetensors' keeps the last good model, of step 6" huge.log ||
  fail "the message does not name step 7, the position and the model kept"
cmp -s huge.safetensors huge.before || fail "the stopped run changed the model file"
rc=0
"$STORYLM" eval stories.txt --model huge.safetensors --json >out.txt 2>err.txt || rc=$?
((rc == 1)) && grep -q "overflows at position" err.txt && ! grep -q "null\|nan" out.txt ||
  fail "eval of overflowing logits: exit $rc, $(cat out.txt err.txt)"

# ---- biases of 3e38: finite and absurd, every token equally likely: loss log(2000), not 0 ----
cp clean6.safetensors flat.safetensors
set_tensor flat.safetensors output.bias 3e38
set_tensor flat.safetensors output.weight 0
"$STORYLM" eval stories.txt --model flat.safetensors --json >flat.json || fail "eval of flat logits failed"
"$PY" - flat.json <<'EOF' || fail "eval of a model whose logits are all equal"
import json, math, sys
r = json.load(open(sys.argv[1]))
assert abs(r["loss"] - math.log(2000)) < 1e-3, r
assert r["accuracy"] < 0.5, r
EOF

echo "e2e_numerical: all passed"
