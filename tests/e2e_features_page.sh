#!/usr/bin/env bash
# The page's Features section in headless Chromium (tests/browser/features.mjs)
# at 1280 and 400 px, on the real `storylm serve` with a small model and an SAE
# trained beside it here (tests/sae_serve.sh): the latents, densities and
# context tokens' values the panel shows are `storylm sae features --json`'s,
# hover and the keyboard say a token's value, axe-core is clean, and a model
# without an SAE says so. Screenshots in $STORYLM_TEST_TMP/shots.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
require_chromium
[[ -d "$STORYLM_SOURCE_DIR/tests/browser/node_modules/axe-core" ]] || skip "tests/browser/node_modules has no axe-core: run scripts/setup_npm"
"$STORYLM" serve --help >/dev/null 2>&1 || skip "this storylm has no serve verb"
source "$STORYLM_SOURCE_DIR/tests/sae_serve.sh"
mkdir -p shots
"$STORYLM" "${sae_cli[@]}" > cli.json 2>/dev/null || fail "sae features"
paths=$(curl -sf "http://127.0.0.1:$port/api/models" | "$PY" -c '
import json, sys
by = {m["name"]: m["path"] for m in json.load(sys.stdin)["models"]}
print(by["tiny.safetensors"], by["plain.safetensors"])')
read -r tiny plain <<<"$paths"
node "$STORYLM_SOURCE_DIR/tests/browser/features.mjs" "http://127.0.0.1:$port/" "$chromium" "$STORYLM_TEST_TMP/shots" \
  "$tiny" "$plain" cli.json 1280 400 || { echo "--- storylm serve's log:" >&2; tail -20 serve.log >&2; fail "the Features section"; }
