#!/usr/bin/env bash
# End to end: train --kernels portable (storylm's own fixed-order kernels):
# the same seed and threads give the same model bits twice; its weights differ
# from OpenBLAS's (the switch does something) while its test loss is within
# 0.1% of theirs; the held-out evaluation runs on them too; a bad --kernels
# and --kernels portable with --precision bf16 are refused with the choices;
# eval --kernels portable measures on them;
# bench train says which kernels it timed. (The same bits on other -march
# builds: the portable_march test.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 200 > slice.txt
common=(--vocab vocab.txt --threads 2 --eval-every 0 --seed 7 --test-stories 20 --steps 30)
loss_of() { sed -n 's/.*test loss \([0-9.]*\).*/\1/p' "$1" | tail -1; }

"$STORYLM" train slice.txt "${common[@]}" --out blas.safetensors 2> blas.log || { cat blas.log; fail "train"; }
"$STORYLM" train slice.txt "${common[@]}" --kernels portable --out p.safetensors 2> p.log || { cat p.log; fail "train --kernels portable"; }
"$STORYLM" train slice.txt "${common[@]}" --kernels portable --out again.safetensors 2> again.log ||
  { cat again.log; fail "train --kernels portable again"; }
[[ "$(tensor_sums p.safetensors)" == "$(tensor_sums again.safetensors)" ]] || fail "portable: the same seed gave other bits"
[[ "$(tensor_sums p.safetensors)" != "$(tensor_sums blas.safetensors)" ]] || fail "--kernels portable changed nothing"
a=$(loss_of blas.log) b=$(loss_of p.log)
[[ -n "$a" && -n "$b" ]] || { cat blas.log p.log; fail "no test loss in the logs"; }
"$PY" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-3 * a)" "$a" "$b" ||
  fail "test loss $b with portable kernels, $a with OpenBLAS"

for verb in "train slice.txt --vocab vocab.txt --steps 1" "bench train slice.txt" "attend Lily" "ablate slice.txt"; do
  if $STORYLM $verb --kernels fast 2> bad.err; then fail "$verb --kernels fast was accepted"; fi
  grep -q "fast" bad.err && grep -q "portable" bad.err || { cat bad.err; fail "$verb --kernels fast: the message names neither it nor the choices"; }
done
if "$STORYLM" train slice.txt "${common[@]}" --kernels portable --precision bf16 --out no.safetensors 2> no.err; then
  fail "--kernels portable --precision bf16 was accepted"
fi
grep -q "fp32" no.err || { cat no.err; fail "the refusal of portable with bf16 does not say why"; }

# eval --kernels portable: the held-out numbers on the portable kernels (those
# the WebAssembly build has: e2e_wasm compares the two), not OpenBLAS's
"$STORYLM" eval slice.txt --model p.safetensors --test-stories 20 --json > eval_blas.json
"$STORYLM" eval slice.txt --model p.safetensors --test-stories 20 --json --kernels portable > eval_p.json
loss_json() { "$PY" -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["loss"]))' "$1"; }
[[ "$(loss_json eval_p.json)" != "$(loss_json eval_blas.json)" ]] || fail "eval --kernels portable changed nothing"
"$PY" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-4 * a)" \
  "$(loss_json eval_blas.json)" "$(loss_json eval_p.json)" || fail "eval: portable and OpenBLAS losses far apart"

"$STORYLM" stories slice.txt --vocab vocab.txt --ids --split train > ids.txt
"$STORYLM" bench train ids.txt --steps 1 --threads 1 --kernels portable > bench.json
grep -q '"kernels":"portable"' bench.json || { cat bench.json; fail "bench train does not say its kernels"; }
echo "portable kernels: test loss $b (OpenBLAS $a), the same bits twice"
