#!/usr/bin/env bash
# --kernels portable: one seed gives the same model at 1, 2 and 3 threads,
# bit for bit, with the same training and test losses: the shards are
# SLM_PORTABLE_SHARDS whatever the threads (include/storylm/shards.h), so
# the order of every sum is that of one thread. (Across MPI ranks:
# e2e_mpi_portable; across -march builds: portable_march.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 200 > slice.txt
"$STORYLM" vocab slice.txt -o vocab.txt > /dev/null 2>&1 || fail "vocab"
common=(--vocab vocab.txt --kernels portable --eval-every 10 --seed 7 --test-stories 20 --steps 30)
numbers() {
  "$STORYLM" info --model "$1" --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); m=d["metadata"]
print([(t["name"], t["fnv1a64"]) for t in d["tensors"]], m.get("train_loss"), m.get("test_loss"))'
}

for t in 1 2 3; do
  "$STORYLM" train slice.txt "${common[@]}" --threads $t --out t$t.safetensors 2> t$t.log || { cat t$t.log; fail "train --threads $t"; }
done
want=$(numbers t1.safetensors)
[[ "$want" == "[('"* && "$want" != *None* ]] || fail "cannot read the model's checksums and losses: $want"
for t in 2 3; do
  [[ "$(numbers t$t.safetensors)" == "$want" ]] || fail "--kernels portable: --threads $t gave other bits than --threads 1"
done
echo "portable kernels: the same model at 1, 2 and 3 threads"
