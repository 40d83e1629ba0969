#!/usr/bin/env bash
# storylm serve through real HTTP on a free local port (tests/serve/api_check.py):
# every endpoint's JSON equals the CLI's --json for the same text, model and
# ablation; generation streams the CLI's text; hostile requests get a 4xx JSON
# error; a client leaving mid-stream stops its generation; training from the
# page; SIGTERM stops the server cleanly.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
M="$STORYLM_SOURCE_DIR/models"
[[ -f "$M/tinystories.safetensors" && -f "$M/tinystories-window8.safetensors" ]] || { echo "SKIPPED: no shipped models"; exit 77; }
mkdir -p models/snapshots data
cp "$M/tinystories.safetensors" "$M/tinystories-window8.safetensors" models/
cp "$M/snapshots/tinystories-plain.step250.safetensors" models/snapshots/
[[ -f "$M/tinystories-transformer.safetensors" ]] && cp "$M/tinystories-transformer.safetensors" models/
first_stories 300 > data/stories.txt
# a model of two layers: every view of heads reads both layers (distances, attend and trace by --layer)
"$STORYLM" train data/stories.txt --vocab vocab.txt --layers 2 --steps 4 --eval-every 0 --test-stories 20 \
  --out models/two-layers.safetensors 2> two-layers.log || { cat two-layers.log; fail "train --layers 2"; }
# a model of 3 tokens: "n_probs": 20 gives its 3 (the server once died of it)
"$STORYLM" train data/stories.txt --vocab-size 3 --vocab vocab3.txt --steps 2 --eval-every 0 --test-stories 20 \
  --out models/three-tokens.safetensors 2> three.log || { cat three.log; fail "train --vocab-size 3"; }
mkdir -p elsewhere && cp "$M/tinystories.safetensors" elsewhere/m.safetensors
ln -s "$PWD/elsewhere/m.safetensors" models/outside.safetensors # listed folders only: a symlink out is refused
"$PY" "$STORYLM_SOURCE_DIR/tests/serve/api_check.py" "$STORYLM" "$STORYLM_SOURCE_DIR"
grep -q "stopping (SIGTERM)" serve.log || fail "the server did not say it stopped on SIGTERM"
