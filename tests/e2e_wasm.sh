#!/usr/bin/env bash
# End to end: the WebAssembly build's node entry (scripts/build_wasm, run as
# node build-web/storylm.mjs VERB) against this native build on the portable
# kernels: train with one seed gives the same vocabulary and the same tensor
# bytes, info the same hashes, eval --json the same numbers, tokenize the same
# pieces and a seeded generate the same tokens; --kernels blas is refused
# there. The wasm build is brought up to date with the source first by CTest's
# wasm_build fixture (tests/wasm_build.sh), as CTest's native build is. Skipped (77) without node or
# without the wasm build.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

command -v node >/dev/null || skip "node is not installed (scripts/setup installs it)"
wasm=${STORYLM_WASM:-$STORYLM_SOURCE_DIR/build-web/storylm.mjs}
[[ -f $wasm ]] || skip "no $wasm: build it with scripts/build_wasm"
W() { node "$wasm" "$@"; }
S=$STORYLM_SOURCE_DIR/data/stories.txt
hashes() { "$PY" -c 'import json,sys; print([(t["name"], t["fnv1a64"]) for t in json.load(sys.stdin)["tensors"]])'; }

mkdir wasm native
(cd wasm && W train "$S" --steps 50 --seed 3 --threads 1 -o a.safetensors 2> train.log) || { cat wasm/train.log; fail "wasm train"; }
(cd native && "$STORYLM" train "$S" --kernels portable --steps 50 --seed 3 --threads 1 -o b.safetensors 2> train.log) ||
  { cat native/train.log; fail "native train --kernels portable"; }
cmp wasm/vocab.txt native/vocab.txt || fail "the wasm build learned another vocabulary"
[[ "$(tensor_sums wasm/a.safetensors)" == "$(tensor_sums native/b.safetensors)" ]] ||
  fail "train: the wasm build's tensors differ from the native portable kernels'"
[[ "$(W info --model wasm/a.safetensors --json | hashes)" == "$(tensor_sums native/b.safetensors)" ]] ||
  fail "info --json: the wasm build's hashes differ"

W eval "$S" --model native/b.safetensors --json --threads 1 > wasm/eval.json
"$STORYLM" eval "$S" --model native/b.safetensors --json --threads 1 --kernels portable > native/eval.json
cmp wasm/eval.json native/eval.json || { diff wasm/eval.json native/eval.json; fail "eval --json differs"; }

text="Lily found a shiny red ball in the park. She said: \"Can I keep it?\""
[[ "$(W tokenize --vocab native/vocab.txt "$text")" == "$("$STORYLM" tokenize --vocab native/vocab.txt "$text")" ]] ||
  fail "tokenize gives other pieces"

# Generation has kernels of its own, not yet in a fixed order: the same
# tokens, but a token's log-probability may differ in its last bits.
tokens() { "$PY" -c 'import json,sys; print([[t["id"] for t in s["tokens"]] for s in json.load(sys.stdin)["samples"]])'; }
W generate --model native/b.safetensors --seed 5 -n 40 --json "Lily found a" 2> /dev/null > wasm/gen.json
"$STORYLM" generate --model native/b.safetensors --seed 5 -n 40 --json "Lily found a" 2> /dev/null > native/gen.json
[[ "$(tokens < wasm/gen.json)" == "$(tokens < native/gen.json)" ]] || fail "generate --seed 5 gives other tokens"

if W train "$S" --steps 1 --kernels blas -o no.safetensors 2> blas.err; then fail "wasm: --kernels blas was accepted"; fi
grep -q "portable" blas.err || { cat blas.err; fail "wasm: the refusal of --kernels blas does not say what there is"; }
echo "wasm: the same tensors, eval, pieces and tokens as the native portable kernels"
