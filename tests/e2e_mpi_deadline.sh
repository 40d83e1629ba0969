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
# never leave a stopped process behind, whatever fails
trap 'for p in "${stopped[@]}"; do kill -9 "$p" 2> /dev/null || true; done' EXIT

if ! mpi 2 "$STORYLM" train "${run[@]}" --stop-at 20 --out whole.safetensors 2> whole.log; then
  skip_without_mpi whole.log
  cat whole.log; fail "np 2 --stop-at 20"
fi

# stopped RANK: rank RANK stopped after the first save ends the job in time
# (stop_rank); a live rank 0 leaves no lock; the run resumes to step 20, the
# model of the run never stopped
stopped_at() {
  local out=stop$1.safetensors
  stop_rank "$1" $out stop$1.log mpi 2 "$STORYLM" train "${run[@]}"
  [[ $1 == 0 || ! -e $out.lock ]] || fail "rank 0 left its lock $out.lock"
  mpi 2 "$STORYLM" train "${run[@]}" --resume --stop-at 20 --out $out 2> resume$1.log ||
    { cat resume$1.log; fail "--resume after rank $1 was stopped"; }
  [[ "$(tensor_sums $out)" == "$(tensor_sums whole.safetensors)" ]] ||
    fail "stopped at rank $1 and resumed differs from the run never stopped"
}
stopped_at 1
stopped_at 0
echo "e2e_mpi_deadline: passed"
