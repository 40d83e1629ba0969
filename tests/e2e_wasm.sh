#!/usr/bin/env bash
# End to end: the WebAssembly build's node entry (scripts/build_wasm, run as
# node build-web/storylm.mjs VERB) against this native build on the portable
# kernels: train with one seed gives the same vocabulary and the same tensor
# bytes, info the same hashes, eval --json the same numbers, tokenize the same
# pieces and a seeded generate --json the same bytes (log-probabilities
# included, times apart), also for the shipped models, and the probes' --json
# with --kernels portable; --kernels blas is refused
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

# Generation on the portable kernels: a seeded generate --json (1 and 3
# samples, the alternatives' log-probabilities too) is the same bytes but
# for its times, for the network trained above, one with additive scores and
# the shipped attention network, window8 and transformer; eval --json too for the shipped ones.
untimed() { "$PY" -c 'import json,sys; j=json.load(sys.stdin); [j.pop(k) for k in ("seconds","cpu_seconds","tokens_per_second")]; print(json.dumps(j))'; }
M=$STORYLM_SOURCE_DIR/models
cp "$S" stories.txt # names from the same file for both
# --score additive's generation scores through a kernel of its own (its tanh)
(cd native && "$STORYLM" train "$S" --score additive --kernels portable --steps 5 --seed 3 --threads 1 \
  -o add.safetensors 2> add.log) || { cat native/add.log; fail "native train --score additive"; }
for model in native/b.safetensors native/add.safetensors "$M/tinystories.safetensors" "$M/tinystories-window8.safetensors" \
  "$M/tinystories-transformer.safetensors"; do
  for samples in 1 3; do
    gen=(generate --model "$model" --seed 5 -n 40 --samples "$samples" --n-probs 3 --json --stories stories.txt "Lily found a")
    W "${gen[@]}" 2> /dev/null | untimed > wasm/gen.json
    "$STORYLM" "${gen[@]}" --kernels portable 2> /dev/null | untimed > native/gen.json
    cmp wasm/gen.json native/gen.json ||
      { diff wasm/gen.json native/gen.json | head -c 2000; fail "generate --json differs for $model, $samples samples"; }
  done
  [[ $model == native/* ]] && continue
  W eval "$M/tinystories-test.txt" --model "$model" --json > wasm/eval.json
  "$STORYLM" eval "$M/tinystories-test.txt" --model "$model" --json --kernels portable > native/eval.json
  cmp wasm/eval.json native/eval.json || { diff wasm/eval.json native/eval.json; fail "eval --json differs for $model"; }
done

# The probes on the portable kernels: every verb that runs the network gives the
# wasm build's --json (the static page's numbers) bit for bit with --kernels
# portable, for the shipped attention network and transformer; the default
# kernels (the CPU's multiply-adds) do not.
T="Lily found a red ball. She gave the ball to Tom and Tom smiled."
P=$M/tinystories-test.txt
probe_same() { # MODEL VERB ARGS...: the same --json in both
  local model=$1
  shift
  W "$@" --model "$model" --json --threads 1 > wasm/probe.json 2> wasm/probe.err || { cat wasm/probe.err; fail "wasm $1"; }
  "$STORYLM" "$@" --model "$model" --json --threads 1 --kernels portable > native/probe.json 2> native/probe.err ||
    { cat native/probe.err; fail "$1 --kernels portable"; }
  cmp -s wasm/probe.json native/probe.json ||
    { diff wasm/probe.json native/probe.json | head -c 1500; fail "$1 --json differs from the wasm build's for $model"; }
}
for model in "$M/tinystories.safetensors" "$M/tinystories-transformer.safetensors"; do
  probe_same "$model" attend "$T"
  probe_same "$model" trace "$T"
  probe_same "$model" lookup "$T" --pos 12 --head 3
  probe_same "$model" eval --text "$T"
  probe_same "$model" ablate "$P"
  probe_same "$model" heads "$P"
  probe_same "$model" pieces "$P"
  probe_same "$model" detect "$P"
  probe_same "$model" guess "Lily went to the park. Lily" "$P" --word lily --top-k 5
  probe_same "$model" attribute "$T" # these three compute in double, with fixed_math.c's tanh and exp
  probe_same "$model" patch "$T" "Lily found a red ball. She gave the ball to Tom and Lily smiled."
  probe_same "$model" circuits --stories "$P"
done
W cache "$T" --model "$M/tinystories.safetensors" --threads 1 -o wasm/cache.safetensors > /dev/null
"$STORYLM" cache "$T" --model "$M/tinystories.safetensors" --threads 1 --kernels portable -o native/cache.safetensors > /dev/null
cmp wasm/cache.safetensors native/cache.safetensors || fail "cache: the activations differ from the wasm build's"
for verb in stats swap icl; do probe_same "$M/tinystories.safetensors" "$verb" "$P"; done
W stats "$P" --model "$M/tinystories.safetensors" --json --threads 1 > wasm/stats.json
"$STORYLM" stats "$P" --model "$M/tinystories.safetensors" --json --threads 1 > native/default.json
! cmp -s wasm/stats.json native/default.json || fail "stats: the default kernels gave the portable ones' numbers"

if W train "$S" --steps 1 --kernels blas -o no.safetensors 2> blas.err; then fail "wasm: --kernels blas was accepted"; fi
grep -q "portable" blas.err || { cat blas.err; fail "wasm: the refusal of --kernels blas does not say what there is"; }
echo "wasm: the same tensors, eval, pieces, generate --json and probes' --json as the native portable kernels"
