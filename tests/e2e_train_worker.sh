#!/usr/bin/env bash
# The static site's training worker without a browser: scripts/build_web writes the site,
# and node runs its web/train_worker.js (tests/train_worker.mjs) as the page's training card
# drives it: a stories file uploaded, 100 steps of a fixed seed started, stopped part way and
# resumed, the model asked for; then 6 steps fine-tuning the site's default model. Each model must be what `node build-web/storylm.mjs train`
# writes for the same file, seed and settings, byte for byte (tests/same_model_bytes.py: every
# tensor, and every metadata key but the run's seconds and its random run id). Skipped (77)
# without node, or without emscripten and a built build-web (scripts/build_wasm).
set -euo pipefail
source "$(dirname "$0")/common.sh"
src=$STORYLM_SOURCE_DIR
command -v node >/dev/null || skip "node is not installed (scripts/setup installs it)"
build_static_site

mkdir -p node
first_stories 150 > node/my-stories.txt
(cd node && node "$build/storylm.mjs" train my-stories.txt --steps 100 --seed 5 --lr 0.03 --eval-every 25 \
  --threads 1 -o model.safetensors 2> train.log) || { cat node/train.log; fail "node build-web/storylm.mjs train"; }
# and a fine-tuning of the site's default model, as the card's "start from" asks it
mkdir -p tune && cp node/my-stories.txt tune/
(cd tune && node "$build/storylm.mjs" train my-stories.txt --from "$src/models/tinystories.safetensors" --steps 6 \
  --seed 3 --lr 0.003 --eval-every 3 --threads 1 -o model.safetensors 2> train.log) || { cat tune/train.log; fail "node train --from"; }
echo '{"steps": 100, "seed": 5, "lr": 0.03, "eval_every": 25}' > options.json
echo '{"steps": 6, "seed": 3, "lr": 0.003, "eval_every": 3, "from": "tinystories"}' > tune.json
node "$src/tests/train_worker.mjs" site node/my-stories.txt options.json tab.safetensors tune.json tuned.safetensors > status.json ||
  fail "the training worker did not train as the card asks"
"$PY" "$src/tests/same_model_bytes.py" tab.safetensors node/model.safetensors ||
  fail "the training worker's model differs from the node build's"
"$PY" "$src/tests/same_model_bytes.py" tuned.safetensors tune/model.safetensors ||
  fail "the training worker's fine-tuned model differs from the node build's"
"$STORYLM" info --model tab.safetensors > info.txt || { cat info.txt; fail "storylm info does not load the worker's model"; }
echo "e2e_train_worker: all checks passed"
