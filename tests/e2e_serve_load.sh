#!/usr/bin/env bash
# storylm serve under load (tests/serve/load_check.py): 50 concurrent clients
# for 20 s, every answer right, resident memory flat once warm, and a clean
# stop on SIGTERM afterwards.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
M="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
[[ -f "$M" ]] || { echo "SKIPPED: no shipped model"; exit 77; }
mkdir -p models data
cp "$M" models/
first_stories 300 > data/stories.txt
sanitized=$(ldd "$STORYLM" | grep libasan >/dev/null && echo sanitized || echo plain) # no -q: see e2e_json (SIGPIPE under pipefail)
"$PY" "$STORYLM_SOURCE_DIR/tests/serve/load_check.py" "$STORYLM" "$sanitized"
