#!/usr/bin/env bash
# The view registry through real HTTP (tests/serve/views_check.py): GET /api/views
# lists every view with its parameters and the defaults its --help shows; every
# served view answers /api/NAME, and its JSON equals `storylm NAME ... --json` for
# the same parameters, by POST and by GET; a view that writes files says it is not served.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
M="$STORYLM_SOURCE_DIR/models"
[[ -f "$M/tinystories.safetensors" ]] || { echo "SKIPPED: no shipped models"; exit 77; }
mkdir -p models data
cp "$M/tinystories.safetensors" models/
first_stories 300 > data/stories.txt
"$PY" "$STORYLM_SOURCE_DIR/tests/serve/views_check.py" "$STORYLM"
