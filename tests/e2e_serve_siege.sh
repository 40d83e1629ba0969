#!/usr/bin/env bash
# storylm serve under siege (tests/serve/siege_check.py), over real HTTP on
# loopback: 600 half-open connections while health answers within a second;
# the Host rule; numbers and texts of every endpoint checked; a model re-saved
# in the same second read again.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
M="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
[[ -f "$M" ]] || skip "no shipped model"
mkdir -p models data
cp "$M" models/
first_stories 300 > data/stories.txt
"$PY" "$STORYLM_SOURCE_DIR/tests/serve/siege_check.py" "$STORYLM"
