# Shared by the MPI end-to-end tests (tests/e2e_mpi*.sh): source it after
# tests/common.sh. Skips (77) without mpirun; sets Open MPI up to run as root
# (CI does) and oversubscribed (2 cores); offers mpi, rank_pid and a slice of
# the corpus with its vocabulary (slice.txt, vocab.txt).
command -v mpirun >/dev/null || skip "no mpirun (apt install openmpi-bin libopenmpi-dev)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # CI runs as root
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# Open MPI's own start-up allocations are never freed; under a sanitized build
# LeakSanitizer would report them (from Open MPI's modules, not storylm's code),
# so leaks are not checked in the MPI runs. Every other sanitizer check stays.
mpi_asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# mpi N ARGS...: mpirun -np N ARGS, ended after 300 s (exit 124: it hung).
mpi() { ASAN_OPTIONS="$mpi_asan" timeout 300 mpirun --oversubscribe -x ASAN_OPTIONS -np "$@"; }

# skip_without_mpi LOG: after a failed mpirun, skips when storylm has no MPI.
skip_without_mpi() {
  if grep -q "built without MPI" "$1"; then skip "storylm was built without MPI (cmake -DSTORYLM_MPI=ON)"; fi
}

# rank_pid PATTERN RANK: the PID of the storylm whose command line matches
# PATTERN and whose MPI rank is RANK (empty when none).
rank_pid() {
  local p
  for p in $(pgrep -f "$1"); do
    tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && { echo "$p"; return; }
  done
}

# process_runs PID: the process exists and is no zombie (a zombie is dead,
# waiting to be collected)
process_runs() { kill -0 "$1" 2> /dev/null && [[ $(ps -o stat= -p "$1") != Z* ]]; }

# stop_rank RANK OUT LOG RUNNER ARGS...: runs RUNNER ARGS (a training that
# saves OUT, its messages to LOG) in the background, stops rank RANK with
# SIGSTOP after the first save and checks that the job ends within 30 s with
# a message naming the rank, and that the stopped process is gone. The
# stopped PIDs are added to $stopped (for an EXIT trap to kill).
stopped=()
stop_rank() {
  local rank=$1 out=$2 log=$3
  shift 3
  rm -f "$out" "$log"
  (rc=0; "$@" --out "$out" 2> "$log" || rc=$?; echo $rc > "$log.rc") &
  local job=$! victim= start took rc
  for _ in $(seq 600); do [[ -f $out ]] && break; sleep 0.1; done
  [[ -f $out ]] || { cat "$log"; fail "the run to stop saved nothing"; }
  victim=$(rank_pid "storylm train .*$out" "$rank")
  [[ -n $victim ]] || fail "found no rank $rank to stop"
  kill -STOP "$victim"
  stopped+=("$victim")
  start=$SECONDS
  wait $job
  took=$((SECONDS - start))
  rc=$(cat "$log.rc")
  [[ $rc != 0 && $rc != 124 ]] || { cat "$log"; fail "after rank $rank was stopped the job ended with $rc (124: it hung)"; }
  ((took <= 30)) || fail "the job took $took s to end after rank $rank was stopped"
  grep -q "rank $rank did not come to an exchange" "$log" || { cat "$log"; fail "no message names rank $rank"; }
  echo "rank $rank stopped: the job ended in $took s: $(grep 'did not come' "$log" | head -1)"
  # mpirun ended the job: the stopped rank is killed too (and soon collected)
  for _ in $(seq 100); do process_runs "$victim" || break; sleep 0.1; done
  ! process_runs "$victim" || fail "the stopped rank $rank still runs"
  for _ in $(seq 100); do kill -0 "$victim" 2> /dev/null || break; sleep 0.1; done
  "$STORYLM" info --model "$out" > /dev/null || fail "the last saved model is damaged"
}

first_stories 300 > slice.txt
"$STORYLM" vocab slice.txt -o vocab.txt > /dev/null 2>&1 || fail "vocab"
