#!/usr/bin/env bash
# Ranks never train with mixed settings: two ranks given different values of
# any option that changes the numbers (or --steps, which made one rank wait
# forever; or --threads, a bare MPI_ERR_TRUNCATE) stop at once, every one,
# with one message naming the option and both values, and write no model;
# so do ranks reading different stories or vocabularies, and ranks resuming from different
# models. The same vocabulary at two paths is no difference. Skips (77)
# without mpirun or in a build without MPI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mpi_common.sh"

common=(--eval-every 5 --test-stories 20 --threads 1)
# refused WHAT RANK0-ARGS -- RANK1-ARGS: the two ranks stop within 60 s with a
# non-zero exit and a message that contains WHAT; no model is written
refused() {
  local what=$1 a=() b=()
  shift
  while [[ $1 != -- ]]; do a+=("$1"); shift; done
  shift
  b=("$@")
  rm -f refused.safetensors
  local start=$SECONDS rc=0
  ASAN_OPTIONS="$mpi_asan" timeout 60 mpirun --oversubscribe -x ASAN_OPTIONS -np 1 "$STORYLM" train "${a[@]}" \
    --out refused.safetensors : -np 1 "$STORYLM" train "${b[@]}" --out refused.safetensors > refused.log 2>&1 || rc=$?
  skip_without_mpi refused.log
  [[ $rc != 0 ]] || { cat refused.log; fail "ranks with $what trained together (exit 0)"; }
  [[ $rc != 124 ]] || fail "ranks with $what hung until the timeout (60 s)"
  grep -qF -- "$what" refused.log || { cat refused.log; fail "the message does not say '$what'"; }
  [[ $(grep -c "error:" refused.log) == 1 ]] || { cat refused.log; fail "not one message for $what"; }
  [[ ! -e refused.safetensors ]] || fail "ranks with $what wrote a model"
  echo "refused in $((SECONDS - start)) s: $(grep error: refused.log)"
}

base=(slice.txt --vocab vocab.txt "${common[@]}" --steps 10)
refused "the ranks disagree on --steps: rank 0 has 6, rank 1 has 12" \
  slice.txt --vocab vocab.txt "${common[@]}" --steps 6 -- slice.txt --vocab vocab.txt "${common[@]}" --steps 12
refused "the ranks disagree on --seed: rank 0 has 1, rank 1 has 2" "${base[@]}" -- "${base[@]}" --seed 2
refused "the ranks disagree on --batch: rank 0 has 4, rank 1 has 8" "${base[@]}" --batch 4 -- "${base[@]}"
refused "the ranks disagree on --lr: rank 0 has 0.01, rank 1 has 0.003" "${base[@]}" --lr 0.01 -- "${base[@]}"
refused "the ranks disagree on --dropout: rank 0 has 0, rank 1 has 0.1" "${base[@]}" -- "${base[@]}" --dropout 0.1
refused "the ranks disagree on --warmup: rank 0 has 5, rank 1 has -1" "${base[@]}" --warmup 5 -- "${base[@]}"
refused "the ranks disagree on --weight-decay: rank 0 has 0, rank 1 has 0.1" "${base[@]}" -- "${base[@]}" --weight-decay 0.1
refused "the ranks disagree on --swap-names: rank 0 has 0, rank 1 has 0.5" "${base[@]}" -- "${base[@]}" --swap-names 0.5
refused "the ranks disagree on --threads: rank 0 has 1, rank 1 has 2" "${base[@]}" -- "${base[@]}" --threads 2
refused "the ranks disagree on --resume: rank 0 has off, rank 1 has on" "${base[@]}" -- "${base[@]}" --resume

# one story changed: same size, other bytes
sed '0,/Lily/s//Lucy/' slice.txt > other.txt
cmp -s slice.txt other.txt && fail "other.txt is no different"
refused "the ranks disagree on the stories file: rank 0 has" "${base[@]}" -- other.txt "${base[@]:1}"

# another vocabulary (learnt from fewer stories)
first_stories 100 > fewer.txt
"$STORYLM" vocab fewer.txt -o other_vocab.txt > /dev/null 2>&1 || fail "vocab of fewer stories"
cmp -s vocab.txt other_vocab.txt && fail "other_vocab.txt is no different"
refused "the ranks disagree on the vocabulary: rank 0 has" "${base[@]}" -- slice.txt --vocab other_vocab.txt "${base[@]:3}"

# two models of the same settings but other seeds, resumed together (--seed is not given: a resume reads it)
for seed in 1 3; do
  mpi 2 "$STORYLM" train "${base[@]}" --stop-at 5 --seed $seed --out s$seed.safetensors 2> s$seed.log || { cat s$seed.log; fail "np 2 --seed $seed"; }
done
cp s1.safetensors a.safetensors && cp s1.adam.safetensors a.adam.safetensors
cp s1.safetensors b.safetensors && cp s1.adam.safetensors b.adam.safetensors
cp s3.safetensors c.safetensors && cp s3.adam.safetensors c.adam.safetensors
ASAN_OPTIONS="$mpi_asan" timeout 60 mpirun --oversubscribe -x ASAN_OPTIONS -np 1 "$STORYLM" train "${base[@]}" --resume \
  --out a.safetensors : -np 1 "$STORYLM" train "${base[@]}" --resume --out c.safetensors > resume.log 2>&1 && fail "ranks resumed from two models"
grep -q "the ranks start from different weights" resume.log || { cat resume.log; fail "the message does not say the models differ"; }

# the same vocabulary at another path, and the same model: trains
cp vocab.txt vocab2.txt
ASAN_OPTIONS="$mpi_asan" timeout 60 mpirun --oversubscribe -x ASAN_OPTIONS -np 1 "$STORYLM" train "${base[@]}" --resume \
  --out a.safetensors : -np 1 "$STORYLM" train slice.txt --vocab vocab2.txt "${common[@]}" --steps 10 --resume \
  --out b.safetensors > same.log 2>&1 || { cat same.log; fail "ranks with the same files at other paths were refused"; }
echo "e2e_mpi_agree: passed"
