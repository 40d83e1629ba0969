#!/usr/bin/env bash
# --kernels portable across MPI ranks: mpirun -np 2 and -np 3 (one thread a
# rank) give the model of one process on one thread, bit for bit, with the
# same losses: the portable kernels' SLM_PORTABLE_SHARDS shards are dealt over
# the ranks whatever their count (3 ranks hold 3 each, one of them empty).
# Skips (77) without mpirun or in a build without MPI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mpi_common.sh"

common=(--vocab vocab.txt --kernels portable --eval-every 10 --seed 7 --test-stories 20 --steps 30 --threads 1)
numbers() {
  "$STORYLM" info --model "$1" --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); m=d["metadata"]
print([(t["name"], t["fnv1a64"]) for t in d["tensors"]], m.get("train_loss"), m.get("test_loss"))'
}

if ! mpi 2 "$STORYLM" train slice.txt "${common[@]}" --out two.safetensors 2> two.log; then
  skip_without_mpi two.log
  cat two.log; fail "mpirun -np 2 storylm train --kernels portable"
fi
mpi 3 "$STORYLM" train slice.txt "${common[@]}" --out three.safetensors 2> three.log || { cat three.log; fail "np 3"; }
"$STORYLM" train slice.txt "${common[@]}" --out one.safetensors 2> one.log || { cat one.log; fail "train"; }
want=$(numbers one.safetensors)
[[ "$want" == "[('"* && "$want" != *None* ]] || fail "cannot read the model's checksums and losses: $want"
[[ "$(numbers two.safetensors)" == "$want" ]] || fail "--kernels portable: 2 ranks differ from 1 process"
[[ "$(numbers three.safetensors)" == "$want" ]] || fail "--kernels portable: 3 ranks differ from 1 process"
echo "portable kernels: the same model on 1, 2 and 3 ranks"
