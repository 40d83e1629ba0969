#!/usr/bin/env bash
# Training from the page across servers (tests/serve/train_check.py): runs
# numbered past the training folder's files, a vocabulary per stories file's
# bytes, and SIGTERM heard while a run learns its vocabulary or tokenizes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
M="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
[[ -f "$M" ]] || skip "no shipped model"
mkdir -p models data other playground-models
cp "$M" models/
first_stories 300 > data/stories.txt
# other stories under the same name, in another --data-dir folder
awk -v RS='\n<\\|endoftext\\|>\n' -v ORS='\n<|endoftext|>\n' 'NR > 300 && NR <= 600' "$STORYLM_SOURCE_DIR/data/stories.txt" > other/stories.txt
# what an earlier server left: its first run and a side file of its third
cp "$M" playground-models/run1.safetensors
cp "$M" playground-models/run3.ema.safetensors
# a file large enough that learning its vocabulary and tokenizing it take seconds
for _ in 1 2 3 4 5 6 7 8; do cat "$STORYLM_SOURCE_DIR/data/stories.txt"; done > data/big.txt
"$PY" "$STORYLM_SOURCE_DIR/tests/serve/train_check.py" "$STORYLM"
