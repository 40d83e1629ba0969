#!/usr/bin/env bash
# Training across processes (include/storylm/dist.h): mpirun -np 2 with one
# thread a rank gives the model of one process with 2 threads, bit for bit
# (and 2 ranks of 2 threads that of 4 threads); a run stopped on 2 ranks
# resumes on 2 ranks to the uninterrupted model, and refuses to resume on
# another count; a killed rank stops the job (no hang) and leaves the last
# saved model whole. Skips (77) without mpirun or in a build without MPI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mpi_common.sh"

common=(--vocab vocab.txt --eval-every 10 --seed 7 --test-stories 20 --steps 30)
# the model's numbers, its losses and its optimizer state
numbers() {
  "$STORYLM" info --model "$1" --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); m=d["metadata"]
print([(t["name"], t["fnv1a64"]) for t in d["tensors"]], m.get("train_loss"), m.get("test_loss"), m.get("test_accuracy"))'
}

if ! mpi 2 "$STORYLM" train slice.txt "${common[@]}" --threads 1 --out two.safetensors 2> two.log; then
  skip_without_mpi two.log
  cat two.log; fail "mpirun -np 2 storylm train"
fi
"$STORYLM" train slice.txt "${common[@]}" --threads 2 --out one.safetensors 2> one.log || { cat one.log; fail "train"; }
[[ "$(numbers one.safetensors)" == "[('"* ]] || fail "cannot read the model's checksums: $(numbers one.safetensors)"
[[ "$(numbers two.safetensors)" == "$(numbers one.safetensors)" ]] || fail "np 2 x 1 thread differs from 1 process x 2 threads"
grep -q "2 ranks exchanged" two.log || fail "rank 0 did not report the exchange: $(cat two.log)"
[[ $(grep -c "using the vocabulary" two.log) == 1 ]] || fail "a rank other than 0 printed"

mpi 2 "$STORYLM" train slice.txt "${common[@]}" --threads 2 --out four.safetensors 2> four.log || { cat four.log; fail "np 2 x 2"; }
"$STORYLM" train slice.txt "${common[@]}" --threads 4 --out one4.safetensors 2> one4.log || { cat one4.log; fail "train 4"; }
[[ "$(numbers four.safetensors)" == "$(numbers one4.safetensors)" ]] || fail "np 2 x 2 threads differs from 1 process x 4 threads"

# stopped and resumed on 2 ranks: the uninterrupted run's model; another rank count is refused
mpi 2 "$STORYLM" train slice.txt "${common[@]}" --threads 1 --stop-at 10 --out part.safetensors 2> part.log || { cat part.log; fail "np 2 --stop-at"; }
if "$STORYLM" train slice.txt "${common[@]}" --threads 2 --resume --out part.safetensors 2> refused.log; then fail "a resume on 1 process of a 2-rank run was not refused"; fi
grep -q "trained on 2" refused.log || fail "the refusal does not say why: $(cat refused.log)"
mpi 2 "$STORYLM" train slice.txt "${common[@]}" --threads 1 --resume --out part.safetensors 2> resume.log || { cat resume.log; fail "np 2 --resume"; }
[[ "$(numbers part.safetensors)" == "$(numbers one.safetensors)" ]] || fail "np 2 stopped and resumed differs from the uninterrupted run"

# a killed rank: the job ends (mpirun stops the other rank), the saved model stays whole
(rc=0; mpi 2 "$STORYLM" train slice.txt --vocab vocab.txt --eval-every 5 --test-stories 20 --steps 1000000 \
   --threads 1 --out kill.safetensors 2> kill.log || rc=$?; echo $rc > kill.rc) &
for _ in $(seq 600); do [[ -f kill.safetensors ]] && break; sleep 0.2; done
[[ -f kill.safetensors ]] || fail "the run to kill saved nothing"
victim=$(rank_pid "storylm train slice.txt.*kill.safetensors" 1)
[[ -n $victim ]] || fail "found no rank 1 to kill"
kill -9 "$victim"
wait
rc=$(cat kill.rc)
[[ $rc != 0 && $rc != 124 ]] || fail "after rank 1 was killed the job ended with $rc (124: it hung until the timeout)"
grep -q "rank 1" kill.log || fail "no message names the killed rank: $(tail -5 kill.log)"
"$STORYLM" info --model kill.safetensors > /dev/null || fail "the last saved model is damaged"
echo "e2e_mpi: passed"
