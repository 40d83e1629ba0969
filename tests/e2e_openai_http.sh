#!/usr/bin/env bash
# storylm serve's OpenAI-compatible routes through raw HTTP, with python3 alone
# (tests/serve/openai_check.py; tests/e2e_openai.sh drives them with the
# official OpenAI client): the prompt's log-probabilities as eval --text --json
# writes them, streams equal to unstreamed answers and ending in [DONE], 32
# concurrent identical seeded requests, hostile bodies in OpenAI's error shape,
# /metrics' routes bounded, and /metrics off without --metrics.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
M="$STORYLM_SOURCE_DIR/models"
[[ -f "$M/tinystories.safetensors" ]] || skip "no shipped models"
mkdir -p models data
cp "$M/tinystories.safetensors" models/
first_stories 300 > data/stories.txt
"$PY" "$STORYLM_SOURCE_DIR/tests/serve/openai_check.py" "$STORYLM"
