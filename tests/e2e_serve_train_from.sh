#!/usr/bin/env bash
# The page's training from a shipped model (tests/serve/train_from_check.py):
# /api/train's "from" fine-tunes it and records it, refuses what is no shipped
# model's short name, and a run without "steps" fits them to the corpus as
# storylm train does (its count read from train's own message).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
M="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
[[ -f "$M" ]] || skip "no shipped model"
mkdir -p models data
cp "$M" models/
first_stories 60 > data/mine.txt
# the steps storylm train fits to these stories (it says them on stderr before the first step)
"$STORYLM" train data/mine.txt --vocab shipped --threads 1 --stop-at 1 -o fit.safetensors > /dev/null 2> fit.err ||
  { cat fit.err; fail "train"; }
steps=$(sed -n 's/^storylm: [0-9]* training stories: \([0-9]*\) steps.*/\1/p' fit.err)
[[ -n $steps ]] || { cat fit.err; fail "train did not say its fitted steps"; }
"$PY" "$STORYLM_SOURCE_DIR/tests/serve/train_from_check.py" "$STORYLM" "$steps"
