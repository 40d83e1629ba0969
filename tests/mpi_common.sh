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

first_stories 300 > slice.txt
"$STORYLM" vocab slice.txt -o vocab.txt > /dev/null 2>&1 || fail "vocab"
