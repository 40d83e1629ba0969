#!/usr/bin/env bash
# The resume command training prints after an interruption works pasted as
# it is (issue 14): a run with flags that are not the defaults (its own
# vocabulary in a file whose name needs quoting, threads, held-out split,
# evaluation interval, dropout) is stopped by SIGINT and by --stop-at; the
# printed command, run as printed, ends bit for bit where the same run
# without interruption ends. The progress line shows the learning rate, the
# elapsed time and the ETA.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 300 >"my stories.txt"
"$STORYLM" vocab "my stories.txt" -o "it's vocab.txt" 2>/dev/null || fail "storylm vocab"
args=("my stories.txt" --vocab "it's vocab.txt" --threads 2 --test-stories 10 --steps 40 --seed 5 --batch 4
  --eval-every 2 --dropout 0.1)

"$STORYLM" train "${args[@]}" --out ref.safetensors 2>ref.log >/dev/null || { cat ref.log; fail "uninterrupted run"; }
grep -Eq '^step +2/40 \| loss [0-9.]+ \| test [0-9.]+ acc [0-9.]+% \([0-9.]+/char\) \| lr [0-9.]+e-0[0-9] \| [0-9]+ tok/s \| [0-9]+s elapsed, ETA [0-9ms]+$' ref.log ||
  { cat ref.log; fail "the progress line lacks the learning rate, the elapsed time or the ETA"; }

# resume_line LOG: the command printed after "resume it:", checked for what it must carry.
resume_line() {
  local line
  line=$(sed -n 's/^resume it:  //p' "$1")
  [[ -n $line ]] || { cat "$1"; fail "no resume command in $1"; }
  for want in "--resume" "--vocab 'it'\\''s vocab.txt'" "--threads 2" "--test-stories 10" "--eval-every 2" \
    "--dropout 0.1" "'my stories.txt'" "--steps 40"; do
    [[ $line == *"$want"* ]] || fail "the resume command lacks $want: $line"
  done
  [[ $line != *--stop-at* ]] || fail "the resume command repeats --stop-at: $line"
  printf '%s\n' "$line"
}

# ---- --stop-at: deterministic ----
"$STORYLM" train "${args[@]}" --stop-at 7 --out stopped.safetensors >stopped.out 2>stopped.log ||
  { cat stopped.log; fail "the run stopped at step 7"; }
cmd=$(resume_line stopped.out)
echo "pasting: $cmd"
eval "$cmd" >resumed.out 2>resumed.log || { cat resumed.log; fail "the pasted command failed"; }
[[ "$(tensor_sums stopped.safetensors)" == "$(tensor_sums ref.safetensors)" ]] ||
  fail "resumed by the printed command, the run ends elsewhere than the uninterrupted one"
# the resumed run goes on from the step after the save (its ETA: tests/test_train.c)
grep -Eq '^step +8/40 ' resumed.log || { cat resumed.log; fail "the resumed run did not start at step 8"; }

# ---- SIGINT once training runs ----
"$STORYLM" train "${args[@]}" --out int.safetensors >int.out 2>int.log &
pid=$!
for _ in $(seq 1200); do
  grep -q "^step " int.log 2>/dev/null && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.05
done
kill -INT $pid 2>/dev/null || true
rc=0
wait $pid || rc=$?
((rc == 130)) || { cat int.log; fail "SIGINT: exit $rc, want 130 (did the run end before the signal?)"; }
cmd=$(resume_line int.out)
eval "$cmd" >/dev/null 2>resumed.log || { cat resumed.log; fail "the pasted command after SIGINT failed"; }
[[ "$(tensor_sums int.safetensors)" == "$(tensor_sums ref.safetensors)" ]] ||
  fail "after SIGINT, resumed by the printed command, the run ends elsewhere than the uninterrupted one"

echo "e2e_resume_command: all passed"
