#!/usr/bin/env bash
# End to end: sae train --resume. A run stopped by Ctrl-C and again and again
# by --minutes, each time resumed, ends with the same bits as a run never
# stopped (the weights and the sparsity file), through refills of the store of
# activations; the checkpoint DIR.resume is gone when the run is done; a resume
# with other options, or with no checkpoint, is refused naming what differs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

sae_tiny_model
# 160 steps of 256 tokens; the store holds 64 batches, so it is filled three times
opts=(slice.txt -m tiny.safetensors --test-stories 20 --threads 2 --tokens 40960 --batch-tokens 256 --seed 3
  --expansion 4 --k 8)

"$STORYLM" sae train "${opts[@]}" -o straight --json 2>straight.log >straight.json || { cat straight.log; fail "sae train"; }
[[ ! -e straight.resume ]] || fail "a run never stopped left a checkpoint"

# Ctrl-C as soon as training starts: exit 130, an SAE and a checkpoint
"$STORYLM" sae train "${opts[@]}" -o parts --json >part0.json 2>part0.log &
pid=$!
for _ in $(seq 600); do grep -q "training stories" part0.log && break; sleep 0.05; done
kill -INT "$pid"
rc=0 && wait "$pid" || rc=$?
[[ $rc == 130 ]] || { cat part0.log; fail "Ctrl-C gave exit $rc, not 130"; }
[[ -s parts/sae_weights.safetensors && -s parts.resume ]] || fail "Ctrl-C left no SAE or no checkpoint parts.resume"
grep -q -- "--resume" part0.log || fail "a stopped run does not say how to go on"

# refused: other options, and no checkpoint
if "$STORYLM" sae train "${opts[@]}" --lr 0.001 -o parts --resume 2>err.txt >/dev/null; then fail "resumed with another --lr"; fi
grep -q -- "made with --lr 0.002.*gives 0.001" err.txt || { cat err.txt; fail "no message naming --lr"; }
if "$STORYLM" sae train "${opts[@]}" --seed 4 -o parts --resume 2>err.txt >/dev/null; then fail "resumed with another --seed"; fi
grep -q -- "--seed 3" err.txt || { cat err.txt; fail "no message naming --seed"; }
if "$STORYLM" sae train "${opts[@]}" --test-stories 21 -o parts --resume 2>err.txt >/dev/null; then
  fail "resumed with other held-out stories"
fi
grep -q -- "--test-stories 20" err.txt || { cat err.txt; fail "no message naming --test-stories"; }
if "$STORYLM" sae train "${opts[@]}" -o nothing --resume 2>err.txt >/dev/null; then fail "resumed with no checkpoint"; fi
grep -q "cannot resume" err.txt || { cat err.txt; fail "no message for a missing checkpoint"; }

# then short parts (--minutes) until it is done, each going on from the last;
# a part is a quarter of the straight run's training time, so that parts stop
# in the middle on a machine of any speed
minutes=$("$PY" -c 'import json,sys; print(max(json.load(open(sys.argv[1]))["seconds"], 0.004) / 4 / 60)' straight.json)
stops=()
for part in $(seq 1 200); do
  "$STORYLM" sae train "${opts[@]}" -o parts --resume --minutes "$minutes" --json >part.json 2>part.log ||
    { cat part.log; fail "resume $part"; }
  read -r interrupted steps < <("$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(int(j["interrupted"]), j["steps"])' part.json)
  [[ $interrupted == 1 ]] || break
  stops+=("$steps")
done
echo "stopped after steps: ${stops[*]}"
((${#stops[@]} >= 1)) || fail "no part was stopped by --minutes: the test did not test a resume in the middle"
cmp straight/sae_weights.safetensors parts/sae_weights.safetensors || fail "stopped and resumed differs from a straight run"
cmp straight/sparsity.safetensors parts/sparsity.safetensors || fail "the sparsity of a resumed run differs"
[[ ! -e parts.resume ]] || fail "the finished run left its checkpoint"
echo "ok: interrupted and resumed ${#stops[@]} times, the same bits as a straight run"
