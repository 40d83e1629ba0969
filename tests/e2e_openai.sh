#!/usr/bin/env bash
# storylm serve's OpenAI-compatible API driven by the official OpenAI client
# (npm "openai", pinned in tests/openai/package-lock.json; scripts/setup_npm
# installs it): tests/openai/client_check.mjs checks completions with and
# without streaming, echo + logprobs + max_tokens 0 against eval --text
# --json bit for bit, new tokens against generate --json, a list of prompts,
# n > 1, stop strings, errors in OpenAI's shape, /tokenize and /detokenize,
# /metrics with and without --metrics, and 32 concurrent identical seeded
# requests giving one text.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
command -v node >/dev/null || skip "node is not installed (scripts/setup installs it)"
[[ -d "$STORYLM_SOURCE_DIR/tests/openai/node_modules/openai" ]] ||
  skip "tests/openai/node_modules is missing: run scripts/setup (or scripts/setup_npm)"
M="$STORYLM_SOURCE_DIR/models"
[[ -f "$M/tinystories.safetensors" && -f "$M/tinystories-window8.safetensors" ]] || skip "no shipped models"
mkdir -p models data
cp "$M/tinystories.safetensors" "$M/tinystories-window8.safetensors" models/
first_stories 300 > data/stories.txt
# run here (models/, data/), the client imported from beside the script: the pinned one
node "$STORYLM_SOURCE_DIR/tests/openai/client_check.mjs" "$STORYLM"
