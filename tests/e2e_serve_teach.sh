#!/usr/bin/env bash
# A model's teaching stories (src/server/teach.c) through the real server: the
# shipped models read the 100 test stories they held out (models/tinystories-test.txt)
# in the story picker, Secret 3 and the mean ablation; the loss there is the one their
# training recorded on those stories; a snapshot reads them too; without the file the
# server's --stories are read, as before (tests/serve/teach_check.py).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
src="$STORYLM_SOURCE_DIR"
[[ -f "$src/models/tinystories.safetensors" && -f "$src/models/tinystories-test.txt" ]] ||
  skip "no shipped model or no models/tinystories-test.txt"
mkdir -p models/snapshots data alone
cp "$src/models/tinystories.safetensors" "$src/models/tinystories-test.txt" models/
cp "$src/models/snapshots/tinystories-plain.step250.safetensors" models/snapshots/
cp "$src/models/tinystories.safetensors" alone/
first_stories 300 > data/stories.txt
"$PY" "$src/tests/serve/teach_check.py" "$STORYLM"
