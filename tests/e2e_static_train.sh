#!/usr/bin/env bash
# Training in the tab on the static site: scripts/build_web writes the site, `python3 -m
# http.server` serves it (no storylm process), and headless Chromium
# (tests/browser/static_train.mjs) uploads a stories file on the training card, trains 100
# steps of a fixed seed, stops in the middle and resumes, reloads the page part way and resumes
# the run kept in the browser's storage, and downloads the model. The download must equal the
# model.safetensors that `node build-web/storylm.mjs train` writes for the same file, seed and
# settings, byte for byte (tests/same_model_bytes.py: every tensor and every metadata key but the
# run's seconds and its random run id); the native CLI must load it; and the page's views, on
# the tab's model, must show the numbers of `node build-web/storylm.mjs attend --json` on it
# and write the text of its seeded `generate`.
# Skipped (77) without chromium, or without emscripten and a built build-web (scripts/build_wasm).
set -euo pipefail
source "$(dirname "$0")/common.sh"
src=$STORYLM_SOURCE_DIR
require_chromium
mkdir -p shots node
build_static_site
grep "page code" build_web.log

steps=100 seed=5 lr=0.03 every=25
first_stories 150 > my-stories.txt
# The node build in a folder of its own: it learns vocab.txt there, as the tab's run does in its own.
cp my-stories.txt node/
(cd node && node "$build/storylm.mjs" train my-stories.txt --steps $steps --seed $seed --lr $lr --eval-every $every \
  --threads 1 -o model.safetensors 2> train.log) || { cat node/train.log; fail "node build-web/storylm.mjs train"; }
"$PY" -c 'import json, sys; print(json.dumps(dict(zip(["chromium", "stories", "steps", "seed", "lr", "eval_every"], [sys.argv[1], sys.argv[2]] + [float(x) if "." in x else int(x) for x in sys.argv[3:]]))))' \
  "$chromium" "$PWD/my-stories.txt" $steps $seed $lr $every > expect.json
"$PY" -c 'import json, sys; e = json.load(open("expect.json")); e["cli"] = ["node", sys.argv[1]]; e["src"] = sys.argv[2]
e["tune"] = {"from": "tinystories", "steps": 30, "seed": 3, "lr": 0.003, "eval_every": 3, "out": "tuned.safetensors"}; print(json.dumps(e))' \
  "$build/storylm.mjs" "$src" > expect2.json && mv expect2.json expect.json
# the fine-tuning the page reloads part way, as node train --from runs it at once
mkdir -p tune && cp my-stories.txt tune/
(cd tune && node "$build/storylm.mjs" train my-stories.txt --from "$src/models/tinystories.safetensors" --steps 30 --seed 3 \
  --lr 0.003 --eval-every 3 --threads 1 -o model.safetensors 2> train.log) || { cat tune/train.log; fail "node train --from"; }

serve_static_site

node "$src/tests/browser/static_train.mjs" "http://127.0.0.1:$port/" expect.json "$STORYLM_TEST_TMP/shots" tab.safetensors ||
  fail "training in the tab failed (screenshots in $STORYLM_TEST_TMP/shots)"

"$PY" "$src/tests/same_model_bytes.py" tab.safetensors node/model.safetensors ||
  fail "the tab's model differs from the node build's"
"$PY" "$src/tests/same_model_bytes.py" tuned.safetensors tune/model.safetensors ||
  fail "the tab's fine-tuned model, reloaded part way, differs from node train --from's"
"$STORYLM" info --model tab.safetensors > info.txt || { cat info.txt; fail "storylm info does not load the tab's model"; }
grep -m1 -i "step" info.txt || true
echo "e2e_static_train: all checks passed"
