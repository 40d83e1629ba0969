#!/usr/bin/env bash
# No rank waits forever: when one rank is stopped (SIGSTOP), the others stop
# the job within --rank-timeout (3 s here) and a roll call (3 s more), with a
# message naming the stopped rank; the last saved model is whole, no lock is
# left behind, and --resume on 2 ranks continues it to the model of a run
# that was never stopped, bit for bit. Rank 1 and rank 0 (the one that
# writes) in turn. Skips (77) without mpirun or in a build without MPI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mpi_common.sh"

run=(slice.txt --vocab vocab.txt --eval-every 5 --test-stories 20 --threads 1 --steps 400 --rank-timeout 3)
stopped=()
# never leave a stopped process behind, whatever fails
trap 'for p in "${stopped[@]}"; do kill -9 "$p" 2> /dev/null || true; done' EXIT

if ! mpi 2 "$STORYLM" train "${run[@]}" --stop-at 20 --out whole.safetensors 2> whole.log; then
  skip_without_mpi whole.log
  cat whole.log; fail "np 2 --stop-at 20"
fi

# stop_rank RANK: trains until the first save, stops RANK, checks the job ends
# in time naming it, then resumes to step 20 and compares with whole.safetensors
stop_rank() {
  local out=stop$1.safetensors
  (rc=0; mpi 2 "$STORYLM" train "${run[@]}" --out $out 2> stop$1.log || rc=$?; echo $rc > stop$1.rc) &
  local job=$!
  for _ in $(seq 600); do [[ -f $out ]] && break; sleep 0.1; done
  [[ -f $out ]] || fail "the run to stop saved nothing"
  local victim
  victim=$(rank_pid "storylm train slice.txt.*$out" "$1")
  [[ -n $victim ]] || fail "found no rank $1 to stop"
  kill -STOP "$victim"
  stopped+=("$victim")
  local start=$SECONDS
  wait $job
  local took=$((SECONDS - start)) rc
  rc=$(cat stop$1.rc)
  [[ $rc != 0 && $rc != 124 ]] || { cat stop$1.log; fail "after rank $1 was stopped the job ended with $rc (124: it hung)"; }
  ((took <= 30)) || fail "the job took $took s to end after rank $1 was stopped (deadline 3 s)"
  grep -q "rank $1 did not come to an exchange" stop$1.log || { cat stop$1.log; fail "no message names rank $1"; }
  echo "rank $1 stopped: the job ended in $took s: $(grep 'did not come' stop$1.log | head -1)"
  # the stopped rank is gone too (mpirun ended the job); its exit may take a moment to be collected
  for _ in $(seq 100); do kill -0 "$victim" 2> /dev/null && [[ $(ps -o stat= -p "$victim") != Z* ]] || break; sleep 0.1; done
  ! { kill -0 "$victim" 2> /dev/null && [[ $(ps -o stat= -p "$victim") != Z* ]]; } || fail "the stopped rank $1 still runs"
  for _ in $(seq 100); do kill -0 "$victim" 2> /dev/null || break; sleep 0.1; done
  "$STORYLM" info --model $out > /dev/null || fail "the last saved model is damaged"
  [[ $1 == 0 || ! -e $out.lock ]] || fail "rank 0 left its lock $out.lock"
  mpi 2 "$STORYLM" train "${run[@]}" --resume --stop-at 20 --out $out 2> resume$1.log ||
    { cat resume$1.log; fail "--resume after rank $1 was stopped"; }
  [[ "$(tensor_sums $out)" == "$(tensor_sums whole.safetensors)" ]] ||
    fail "stopped at rank $1 and resumed differs from the run never stopped"
}
stop_rank 1
stop_rank 0
echo "e2e_mpi_deadline: passed"
