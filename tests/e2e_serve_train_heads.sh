#!/usr/bin/env bash
# "Train your own" at the page's own defaults shows the heads finding jobs: the
# learning rate and evaluation interval the page fills in (read from web/index.html),
# for the first 200 of its steps on the project's stories through POST /api/train, and
# the heads' shares of weight the page draws (GET /api/train): a head whose weight at
# distance 1 (the token just before) is at most 0.15 at the first save holds 0.25 or
# more at the last (tests/serve/train_heads_check.py).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
M="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
[[ -f "$M" ]] || skip "no shipped model"
# a measurement of an optimised build's minute: a sanitizer build trains many times slower
# (200 steps took over 10 minutes under ASan+UBSan)
ldd "$STORYLM" | grep libasan >/dev/null && skip "a sanitizer build; this measures the optimised trainer" # no -q: SIGPIPE under pipefail
mkdir -p models data
cp "$M" models/
cp "$STORYLM_SOURCE_DIR/data/stories.txt" data/stories.txt
"$PY" "$STORYLM_SOURCE_DIR/tests/serve/train_heads_check.py" "$STORYLM" "$STORYLM_SOURCE_DIR/web/index.html" 200
