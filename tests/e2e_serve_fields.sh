#!/usr/bin/env bash
# Every route of the server reads its fields with its table of parameters
# (tests/serve/fields_check.py): an unknown or misspelt field, and a value out
# of range, are 400 naming them (with the nearest field), on every view of
# /api/views, every other route and every request of a batch; "lr": 0 is out
# of range, not the default.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
M="$STORYLM_SOURCE_DIR/models"
[[ -f "$M/tinystories.safetensors" ]] || { echo "SKIPPED: no shipped models"; exit 77; }
mkdir -p models data
cp "$M/tinystories.safetensors" models/
first_stories 300 > data/stories.txt
"$PY" "$STORYLM_SOURCE_DIR/tests/serve/fields_check.py" "$STORYLM"
