#!/usr/bin/env bash
# Fine-tuning across processes (train --from under mpirun): 2 ranks of one
# thread give the model of one process of 2 threads, bit for bit, and record
# the base; stopped part way, the run resumes on 2 ranks with the command it
# printed (--from BASE) to the same model, its --json naming the base.
# Skips (77) without mpirun or in a build without MPI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mpi_common.sh"

common=(--from tinystories --eval-every 10 --seed 7 --test-stories 20 --steps 30 --keep-last)
sums() { tensor_sums "$1"; }

if ! mpi 2 "$STORYLM" train slice.txt "${common[@]}" --threads 1 --out two.safetensors 2> two.log; then
  skip_without_mpi two.log
  cat two.log; fail "mpirun -np 2 storylm train --from"
fi
"$STORYLM" train slice.txt "${common[@]}" --threads 2 --out one.safetensors 2> one.log || { cat one.log; fail "train --from"; }
[[ "$(sums one.safetensors)" == "[('"* ]] || fail "cannot read the model's checksums"
[[ "$(sums two.safetensors)" == "$(sums one.safetensors)" ]] || fail "np 2 x 1 thread differs from 1 process x 2 threads"
[[ $("$STORYLM" info --model two.safetensors --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["from"])') == tinystories.safetensors ]] ||
  fail "the 2-rank model does not record its base"

mpi 2 "$STORYLM" train slice.txt "${common[@]}" --threads 1 --stop-at 10 --out part.safetensors > part.out 2> part.log ||
  { cat part.log; fail "np 2 --stop-at"; }
resume=$(sed -n 's/^resume it:  //p' part.out)
[[ $resume == "mpirun -np 2 "*" --from "* ]] || { cat part.out; fail "the resume command: $resume"; }
mpi 2 "$STORYLM" train slice.txt --resume --out part.safetensors --from tinystories --steps 30 --threads 1 \
  --eval-every 10 --test-stories 20 --keep-last --json > resume.json 2> resume.log || { cat resume.log; fail "np 2 --resume --from"; }
[[ "$(sums part.safetensors)" == "$(sums one.safetensors)" ]] || fail "np 2 stopped and resumed differs from the uninterrupted run"
[[ $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["from"]["file"])' resume.json) == tinystories.safetensors ]] ||
  fail "the resumed run's --json: $(cat resume.json)"
echo ok
