#!/usr/bin/env bash
# The playground as a static site in a real browser: scripts/build_web writes the
# site into a scratch folder, `python3 -m http.server` serves it (no storylm
# process), and headless Chromium (tests/browser/static_site.mjs) opens it: the
# page's Web Worker answers its requests with storylm's server code compiled to
# WebAssembly. It checks the attention view of the default model against
# `storylm attend --json` (the WebAssembly build's own CLI when it is built: the
# same bits; else the native one, within float precision), a seeded generation
# against `storylm generate`, that every model of the picker loads, and that no
# request leaves the page's origin; it prints the time to the first attention
# view. Skipped (77) without chromium, or without emscripten and a built
# build-web (scripts/build_wasm).
set -euo pipefail
source "$(dirname "$0")/common.sh"
src=$STORYLM_SOURCE_DIR
require_chromium
mkdir -p shots
build_static_site
grep "page code" build_web.log

# What the CLI says: the WebAssembly build's when there is one (the worker's kernels), else the native's.
model=$src/models/tinystories.safetensors
text="Lily found a shiny shell on the beach. She put it in her pocket and ran home to show her mom. Her mom smiled and asked Lily where"
pos=9 head=2 gen_n=30 gen_seed=7
cli=("$STORYLM") exact=0
if [[ -f $build/storylm.mjs ]] && command -v node >/dev/null; then cli=(node "$build/storylm.mjs") exact=1; fi
"${cli[@]}" attend "$text" --model "$model" --pos $pos --head $head --json > attend.json
"${cli[@]}" attend "$text" --model "$model" --pos $pos --wide --json > attend_wide.json
"${cli[@]}" generate "$text" --model "$model" -n $gen_n --seed $gen_seed > generate.txt 2>/dev/null
"$PY" - "$chromium" "$text" $pos $head $gen_n $gen_seed $exact > expect.json <<'PY'
import json, sys
chromium, text, pos, head, n, seed, exact = sys.argv[1:]
site = json.load(open("site/site.json"))
print(json.dumps({"chromium": chromium, "text": text, "pos": int(pos), "head": int(head), "exact": int(exact),
                  "attend": json.load(open("attend.json")), "attend_wide": json.load(open("attend_wide.json")),
                  "generate": {"max_tokens": int(n), "seed": int(seed), "text": open("generate.txt").read()},
                  "models": [f for f in site["files"] if f.endswith(".safetensors")]}))
PY

serve_static_site

node "$src/tests/browser/static_site.mjs" "http://127.0.0.1:$port/" expect.json "$STORYLM_TEST_TMP/shots" ||
  fail "the static site does not show what the CLI computes (screenshots in $STORYLM_TEST_TMP/shots)"
echo "e2e_static_site: all checks passed"
