#!/usr/bin/env bash
# --kernels portable: a 20-step training of the attention network, window8
# and the transformer (tests/portable_driver.c) gives the same parameters,
# and a generation from each the same logits, tokens and log-probabilities, bit for bit, from the model code built for this CPU, for
# x86-64-v3 and for baseline x86-64, and natively at 1 and 2 threads. Arguments: the
# drivers, the native one first. A CPU that cannot run x86-64-v3 code skips.
set -euo pipefail
native="$1"
shift
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo || { echo "SKIPPED: no AVX2/FMA here for x86-64-v3"; exit 77; }
want=$("$native" 1) || { echo "FAILED: $native"; exit 1; }
echo "native, 1 thread: $want"
for run in "$native 2" "$1 1" "$2 1"; do
  got=$($run) || { echo "FAILED: $run"; exit 1; }
  [[ "$got" == "$want" ]] || { echo "FAILED: $run gave"; echo "$got"; echo "instead of"; echo "$want"; exit 1; }
  echo "$run: the same"
done
