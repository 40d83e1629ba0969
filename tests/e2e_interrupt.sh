#!/usr/bin/env bash
# Training survives interruption (issue 7). Against an uninterrupted run of
# the same seed and thread count:
#  - SIGINT or SIGTERM at random moments: each time storylm saves and exits
#    130 with a model and optimizer state from one save; resumed again and
#    again, the run ends with the uninterrupted run's weights and optimizer
#    moments, bit for bit;
#  - kill -9 at random moments, saving after every step: the model file is
#    always whole and loadable, an optimizer state from its save is beside it
#    (storylm info finds it), its step never goes back, and resuming from
#    whatever the kill left ends bit for bit where the uninterrupted run did.
# The delays are printed, so a failure can be replayed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 300 >stories.txt
"$STORYLM" vocab stories.txt -o vocab.txt 2>/dev/null || fail "storylm vocab"
STEPS=16
args=(stories.txt --vocab vocab.txt --threads 2 --test-stories 10 --steps $STEPS --seed 11 --batch 4)

# The tensors of a model file and of its optimizer state, as name and sha256
# of the bytes: equal digests are equal numbers, bit for bit.
digest() {
  "$PY" - "$1" "${1%.safetensors}.adam.safetensors" <<'EOF'
import hashlib, json, struct, sys
for path in sys.argv[1:]:
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    for name in sorted(k for k in header if k != "__metadata__"):
        b, e = header[name]["data_offsets"]
        print(path.endswith(".adam.safetensors"), name, hashlib.sha256(raw[8 + n + b:8 + n + e]).hexdigest())
EOF
}
# "STEP PAIRS": the model's step and whether its optimizer state is from the same save.
state() {
  "$STORYLM" info --model "$1" --json | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
o = j["optimizer"] or {}
print(j["metadata"].get("step", "none"), o.get("pairs", False))'
}
# A random delay in seconds, from 0 to $1 tenths.
delay() {
  local r=$((RANDOM % $1))
  printf '%d.%d' $((r / 10)) $((r % 10))
}

"$STORYLM" train "${args[@]}" --eval-every 0 --out ref.safetensors 2>ref.log >/dev/null || { cat ref.log; fail "reference run"; }
digest ref.safetensors >ref.digest
[[ $(wc -l <ref.digest) -eq 27 ]] || fail "reference digest: $(cat ref.digest)"

# Starts training in the background (resuming when the model exists) and
# waits until its stories are read, so that a signal lands in training.
start() {
  local out=$1 log=$2
  shift 2
  local resume=()
  [[ -f $out ]] && resume=(--resume)
  "$STORYLM" train "${args[@]}" "${resume[@]}" --out "$out" "$@" 2>"$log" >/dev/null &
  pid=$!
  for _ in $(seq 600); do
    grep -q "held out for testing" "$log" 2>/dev/null && return 0
    kill -0 $pid 2>/dev/null || return 0
    sleep 0.05
  done
  fail "training did not start: $(cat "$log")"
}

# ---- SIGINT and SIGTERM: a consistent save each time, then resume to the end ----
for sig in INT TERM; do
  out=sig$sig.safetensors
  rm -f "$out" "${out%.safetensors}.adam.safetensors"
  for round in $(seq 20); do
    start "$out" "sig$sig.$round.log" --eval-every 4
    d=$(delay 15)
    sleep "$d"
    kill -s $sig $pid 2>/dev/null || true
    rc=0
    wait $pid || rc=$?
    echo "SIG$sig after ${d}s: exit $rc, model at step $(state "$out" | cut -d' ' -f1)"
    if ((rc == 0)); then break; fi
    ((rc == 130)) || fail "SIG$sig: exit $rc, want 130 or 0: $(cat "sig$sig.$round.log")"
    # a fresh run stopped in its first seconds, before its first save, leaves nothing (the next round starts afresh)
    if [[ ! -f $out ]] && grep -q "in its first seconds: nothing saved" "sig$sig.$round.log"; then continue; fi
    grep -q "stopped after" "sig$sig.$round.log" || fail "SIG$sig: no 'stopped after' line: $(cat "sig$sig.$round.log")"
    read -r step pairs < <(state "$out")
    [[ $pairs == True ]] || fail "SIG$sig: the model (step $step) and its optimizer state are not from one save"
  done
  ((rc == 0)) || fail "SIG$sig: training did not finish in 20 rounds"
  digest "$out" | cmp -s - ref.digest ||
    fail "SIG$sig: interrupted and resumed, the weights or moments differ from the uninterrupted run"
done

# ---- kill -9: the model file is always whole; resuming ends where the uninterrupted run did ----
# Saving after every step, so that kills land in saves too.
out=kill.safetensors
last=0
for round in $(seq 10); do
  start "$out" "kill.$round.log" --eval-every 1
  d=$(delay 15)
  sleep "$d"
  kill -9 $pid 2>/dev/null || true
  rc=0
  { wait $pid; } 2>/dev/null || rc=$? # (no "Killed" notice from bash)
  if ((rc == 0)); then break; fi
  ((rc == 137)) || fail "kill -9: exit $rc, want 137 or 0: $(cat "kill.$round.log")"
  [[ -f $out ]] || continue # killed before the first save
  read -r step pairs < <(state "$out") || fail "after kill -9 at ${d}s the model file does not load"
  echo "kill -9 after ${d}s: model at step $step, with an optimizer state from its save: $pairs"
  ((step >= last)) || fail "after kill -9 the model went back from step $last to $step"
  [[ $pairs == True ]] || fail "after kill -9 at ${d}s no optimizer state is from the model's save (step $step)"
  last=$step
  # killed after the last step's save, on its way out: the run is complete on disk
  if ((step == STEPS)); then rc=0; break; fi
done
if ((rc != 0)); then # the rest of the run, uninterrupted
  start "$out" kill.end.log --eval-every 1
  wait $pid || fail "resuming after the kills: $(cat kill.end.log)"
fi
digest "$out" | cmp -s - ref.digest ||
  fail "killed with -9 and resumed, the weights or moments differ from the uninterrupted run"
echo "e2e_interrupt: all passed"
