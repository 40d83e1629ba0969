# Two writers of one file: every file a training run writes (its model, the
# optimizer state and its ".next", the moving average, the raw weights, the
# best model, a snapshot, a vocabulary it learns) is claimed by a lock for as
# long as the run writes it, so a second run that would write the same file,
# while the first runs, is refused with a message and a non-zero exit, and no
# run ever replaces a file of another; a lock caught before its PID is written
# is a lock. The server's part (two servers on one --train-dir, a CLI run into
# the server's run, uploads at once, run numbers at INT_MAX) is in
# tests/serve/two_writers_check.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
S="$STORYLM"

first_stories 60 >s.txt
cp "$STORYLM_SOURCE_DIR/models/vocab.txt" vocab.txt
T=(--steps 2 --test-stories 5 --threads 1 --eval-every 1)

# refused PATTERN ARGS...: storylm ARGS exits non-zero, its message saying PATTERN
refused() {
  local want="$1"; shift
  if "$S" "$@" >out.txt 2>err.txt; then fail "storylm $* succeeded (a second writer of a file in use)"; fi
  grep -q -- "$want" err.txt || { cat err.txt; fail "storylm $*: no '$want' in the message"; }
}
# start_long OUT ARGS...: a run ($bg) that trains until stopped and saves only
# then, so that none of its files is there yet; back once it is training
# (its files claimed, its stories read)
start_long() {
  local out=$1; shift
  "$S" train s.txt --steps 1000000 --test-stories 5 --threads 1 --eval-every 0 -o "$out" "$@" >/dev/null 2>bg.err &
  bg=$!
  for _ in $(seq 600); do
    grep -q "held out for testing" bg.err && return 0
    kill -0 $bg 2>/dev/null || { cat bg.err; fail "the run on $out ended"; }
    sleep 0.1
  done
  fail "the run on $out did not start in 60 s"
}
# stop_long: SIGTERM; the run saves and exits 130
stop_long() {
  kill -TERM $bg
  local rc=0
  wait $bg || rc=$?
  [ $rc = 130 ] || { cat bg.err; fail "the stopped run exited $rc, not 130"; }
}
# resumes OUT ARGS...: OUT is whole and its run's own files with it (a resume reads them back)
resumes() {
  local out=$1; shift
  local step
  step=$("$S" info --model "$out" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["step"])')
  "$S" train s.txt --resume --steps 1000000 --stop-at $((step + 1)) --test-stories 5 --threads 1 --eval-every 0 \
    -o "$out" "$@" >/dev/null 2>res.err || { cat res.err; fail "$out does not resume: a file of its run was replaced"; }
}

# ---- one --out ----
start_long one.safetensors
refused "being written by another process" train s.txt "${T[@]}" -o one.safetensors --force
stop_long
resumes one.safetensors

# ---- a file beside one run's model is another run's model: in both orders, the second is refused ----
# FLAGS|NAME: the first run's flags, and the name of one of its files that the other run gives as --out
for pair in "--ema 0.9|m.ema.safetensors" "--keep-best|m.best.safetensors" "--ema 0.9 --ema-save|m.raw.safetensors" \
  "|m.adam.safetensors" "|m.adam.safetensors.next"; do
  flags=(${pair%%|*})
  side=${pair#*|}
  rm -f m.* "$side"*
  start_long m.safetensors "${flags[@]}"
  refused "being written by another process" train s.txt "${T[@]}" -o "$side"
  [ ! -e "$side" ] || fail "the refused run wrote $side"
  stop_long
  resumes m.safetensors "${flags[@]}"
  rm -f m.* "$side"*
  start_long "$side"
  refused "being written by another process" train s.txt "${T[@]}" -o m.safetensors "${flags[@]}"
  [ ! -e m.safetensors ] || fail "the refused run wrote m.safetensors"
  stop_long
  resumes "$side"
done
rm -f m.*

# ---- a snapshot's name is another run's model ----
start_long m.step2.safetensors
refused "being written by another process" train s.txt --steps 4 --test-stories 5 --threads 1 --snapshot-every 2 -o m.safetensors
stop_long
resumes m.step2.safetensors
rm -f m.*
# ... or was, when a resumed run comes to it: it is kept, not replaced
"$S" train s.txt --steps 8 --stop-at 2 --test-stories 5 --threads 1 --snapshot-every 4 -o m.safetensors >/dev/null 2>&1 ||
  fail "train --stop-at 2"
"$S" train s.txt "${T[@]}" -o m.step4.safetensors >/dev/null 2>&1 || fail "train m.step4.safetensors"
before=$(tensor_sums m.step4.safetensors)
refused "of another run" train s.txt --steps 8 --resume --test-stories 5 --threads 1 --snapshot-every 4 -o m.safetensors
[ "$(tensor_sums m.step4.safetensors)" = "$before" ] || fail "a resumed run's snapshot replaced another run's model"
resumes m.step4.safetensors
rm -f m.*
# the best model likewise: put there by another run (with --force), it is kept unless the resume says --force
"$S" train s.txt --steps 8 --stop-at 2 --test-stories 5 --threads 1 --eval-every 1 --keep-best -o m.safetensors >/dev/null 2>&1 ||
  fail "train --keep-best --stop-at 2"
"$S" train s.txt "${T[@]}" --seed 7 -o m.best.safetensors --force >/dev/null 2>&1 || fail "train m.best.safetensors --force"
before=$(tensor_sums m.best.safetensors)
refused "of another run" train s.txt --steps 8 --resume --test-stories 5 --threads 1 --eval-every 1 --keep-best -o m.safetensors
[ "$(tensor_sums m.best.safetensors)" = "$before" ] || fail "a resumed run's best model replaced another run's model"
"$S" train s.txt --steps 8 --resume --test-stories 5 --threads 1 --eval-every 1 --keep-best -o m.safetensors --force \
  >/dev/null 2>&1 || fail "--resume --force does not replace the other run's best model"
rm -f m.*

# ---- two runs learning one missing --vocab: the second is refused, and the file is the first's ----
first_stories 5000 >big.txt    # its vocabulary takes a moment to learn
awk -v RS='\n<\\|endoftext\\|>\n' -v ORS='\n<|endoftext|>\n' 'NR > 5000 && NR <= 5060' "$STORYLM_SOURCE_DIR/data/stories.txt" >s2.txt
"$S" train big.txt --vocab v.txt --steps 1000000 --test-stories 5 --threads 1 --eval-every 0 -o va.safetensors >/dev/null 2>va.err &
va=$!
for _ in $(seq 600); do grep -q "learning a" va.err && break; sleep 0.02; done
grep -q "learning a" va.err || fail "the first run did not start learning its vocabulary"
vb=0
"$S" train s2.txt --vocab v.txt "${T[@]}" -o vb.safetensors >/dev/null 2>vb.err || vb=$?
for _ in $(seq 600); do grep -q "held out for testing" va.err && break; kill -0 $va 2>/dev/null || break; sleep 0.1; done
kill -TERM $va
wait $va || true
[ -f va.safetensors ] || { cat va.err; fail "the first run saved no model"; }
# every model of a run that ended well was trained with the vocabulary in v.txt
for m in va vb; do
  [ -f $m.safetensors ] || continue
  "$S" vocab -m $m.safetensors -o $m.vocab.txt 2>/dev/null
  cmp -s $m.vocab.txt v.txt || fail "v.txt is not the vocabulary of $m.safetensors: one run's learnt vocabulary replaced the other's"
done
[ $vb != 0 ] || [ -f vb.safetensors ] || fail "the second run exited 0 with no model"
[ $vb = 0 ] || grep -q "being written by another process" vb.err || { cat vb.err; fail "the second run's message"; }

# ---- a lock caught before its PID is written is a lock, never "not a lock" ----
# flock(1) holds the lock file as storylm does between taking it and writing its PID
flock --no-fork x.safetensors.lock sleep 60 &
holder=$!
for _ in $(seq 100); do ! flock -n x.safetensors.lock true && break; sleep 0.05; done
[ ! -s x.safetensors.lock ] || fail "flock wrote into the lock"
refused "being written by another process" train s.txt "${T[@]}" -o x.safetensors
! grep -q "not a lock" err.txt || fail "a lock being taken was called not a lock"
[ -e x.safetensors.lock ] && [ ! -e x.safetensors ] || fail "the lock being taken was removed, or the run wrote"
kill $holder
wait $holder 2>/dev/null || true
"$S" train s.txt "${T[@]}" -o x.safetensors >/dev/null 2>err.txt || { cat err.txt; fail "an empty lock no process holds blocked a run"; }
[ ! -e x.safetensors.lock ] || fail "the run left its lock"

# ---- the server: two servers on one --train-dir, a CLI run into the server's run, uploads at once, run numbers ----
M="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
[[ -f "$M" ]] || { echo "e2e_two_writers: CLI passed; no shipped model for the server's part"; exit 0; }
mkdir -p models data playground-models
cp "$M" models/
first_stories 300 >data/stories.txt
"$PY" "$STORYLM_SOURCE_DIR/tests/serve/two_writers_check.py" "$S"
echo "e2e_two_writers: passed"
