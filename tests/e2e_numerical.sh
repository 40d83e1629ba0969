#!/usr/bin/env bash
# Numerical faults stop training with a message naming the step, and the last
# good model stays on disk (issue 7):
#  - a gradient that overflows at step 7 (made so by the test hook
#    STORYLM_TEST_OVERFLOW_AT_STEP), saving every 2 steps: the run stops there,
#    and the model file is bit for bit the model of a clean run stopped at
#    step 6, and resumes to the very end of the clean run;
#  - the same before the first save: nothing is written, an older file stays;
#  - an infinite weight (a model file from elsewhere): resuming it stops at
#    the next step because the loss is not finite; the file stays as it was.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 200 >stories.txt
"$STORYLM" vocab stories.txt -o vocab.txt 2>/dev/null || fail "storylm vocab"
args=(stories.txt --vocab vocab.txt --threads 2 --test-stories 10 --steps 12 --seed 3 --batch 4 --eval-every 2)

# A clean run stopped at step 6, and one that goes to the end.
"$STORYLM" train "${args[@]}" --stop-at 6 --out clean6.safetensors 2>clean.log >/dev/null || { cat clean.log; fail "clean run"; }
"$STORYLM" train "${args[@]}" --out clean.safetensors 2>clean.log >/dev/null || { cat clean.log; fail "clean run"; }

# ---- the gradient overflows at step 7 ----
rc=0
STORYLM_TEST_OVERFLOW_AT_STEP=7 "$STORYLM" train "${args[@]}" --out fault.safetensors 2>fault.log >/dev/null || rc=$?
cat fault.log
((rc == 1)) || fail "an overflowing gradient: exit $rc, want 1"
grep -q "error: training diverged at step 7: the gradient is not finite; 'fault.safetensors' keeps the last good model, of step 6" fault.log ||
  fail "the message does not name step 7 and the model kept"
grep -q "HINT: lower --lr" fault.log || fail "no hint"
[[ "$(tensor_sums fault.safetensors)" == "$(tensor_sums clean6.safetensors)" ]] || fail "the model kept is not the clean model of step 6"
"$STORYLM" train "${args[@]}" --resume --out fault.safetensors 2>resume.log >/dev/null || { cat resume.log; fail "resume after the fault"; }
[[ "$(tensor_sums fault.safetensors)" == "$(tensor_sums clean.safetensors)" ]] || fail "resumed after the fault, the run ends elsewhere than the clean run"

# ---- the same before the first save: an older file at --out is left alone ----
cp clean6.safetensors early.safetensors
rc=0
STORYLM_TEST_OVERFLOW_AT_STEP=1 "$STORYLM" train "${args[@]}" --out early.safetensors 2>early.log >/dev/null || rc=$?
((rc == 1)) || fail "overflow at step 1: exit $rc, want 1"
grep -q "training diverged at step 1: the gradient is not finite; no model was saved yet" early.log || fail "step 1: $(cat early.log)"
cmp -s early.safetensors clean6.safetensors || fail "a run that diverged before saving changed the file at --out"

# ---- an infinite weight: the loss is not finite at the next step ----
cp clean6.safetensors inf.safetensors
cp clean6.adam.safetensors inf.adam.safetensors
"$PY" - inf.safetensors <<'EOF'
import json, struct, sys
path = sys.argv[1]
raw = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
begin, end = json.loads(raw[8:8 + n])["output.bias"]["data_offsets"]
at = 8 + n + begin
raw[at:end + 8 + n] = struct.pack("<f", float("inf")) * ((end - begin) // 4)
open(path, "wb").write(raw)
EOF
cp inf.safetensors inf.before
rc=0
"$STORYLM" train "${args[@]}" --resume --out inf.safetensors 2>inf.log >/dev/null || rc=$?
cat inf.log
((rc == 1)) || fail "an infinite weight: exit $rc, want 1"
grep -q "error: training diverged at step 7: the loss is not finite; 'inf.safetensors' keeps the last good model, of step 6" inf.log ||
  fail "the message does not name step 7 and the loss"
cmp -s inf.safetensors inf.before || fail "the diverged run changed the model file"
echo "e2e_numerical: all passed"
