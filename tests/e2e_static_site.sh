#!/usr/bin/env bash
# The playground as a static site in a real browser: scripts/build_web writes the
# site into a scratch folder, `python3 -m http.server` serves it (no storylm
# process), and headless Chromium (tests/browser/static_site.mjs) opens it: the
# page's Web Worker answers its requests with storylm's server code compiled to
# WebAssembly. It checks the attention view of the default model against
# `storylm attend --json` (the WebAssembly build's own CLI when it is built: the
# same bits; else the native one, within float precision), two seeded
# generations against `storylm generate`'s text (names capitalised as the CLI
# does: one writes names the prompt has not), that a model picked does not wait
# for the views of the one before, that every model of the picker loads, and
# that no request leaves the page's origin; it prints the time to the first
# attention view, which must be within $first_ms ms. Skipped (77) without
# chromium, or without emscripten and a built build-web (scripts/build_wasm).
set -euo pipefail
source "$(dirname "$0")/common.sh"
src=$STORYLM_SOURCE_DIR
require_chromium
mkdir -p shots
first_ms=6000 # generous: other jobs may share the machine; the time is printed
build_static_site
grep "page code" build_web.log

# What the CLI says: the WebAssembly build's when there is one (the worker's kernels), else the native's.
model=$src/models/tinystories.safetensors
text="Lily found a shiny shell on the beach. She put it in her pocket and ran home to show her mom. Her mom smiled and asked Lily where"
named="One day, a boy and a girl went to the park. The girl was named"
pos=9 head=2 gen_n=30
cli=("$STORYLM") exact=0
if [[ -f $build/storylm.mjs ]] && command -v node >/dev/null; then cli=(node "$build/storylm.mjs") exact=1; fi
"${cli[@]}" attend "$text" --model "$model" --pos $pos --head $head --json > attend.json
"${cli[@]}" attend "$text" --model "$model" --pos $pos --wide --json > attend_wide.json
# from the source folder, where either CLI finds data/stories.txt, which it learns names from
(cd "$src" && "${cli[@]}" generate "$text" --model "$model" -n $gen_n --seed 7) > generate.txt 2>/dev/null
(cd "$src" && "${cli[@]}" generate "$named" --model "$model" -n $gen_n --seed 4) > generate_named.txt 2>/dev/null
"$PY" - "$chromium" "$text" "$named" $pos $head $gen_n $exact $first_ms > expect.json <<'PY'
import json, re, sys
chromium, text, named, pos, head, n, exact, first_ms = sys.argv[1:]
site = json.load(open("site/site.json"))
gen = [{"prompt": p, "max_tokens": int(n), "seed": s, "text": open(f).read()}
       for p, s, f in [(text, 7, "generate.txt"), (named, 4, "generate_named.txt")]]
# the second must write a name its prompt has not, within a sentence: a check of names, not of tokens
new = gen[1]["text"][len(named):]
if not any(w not in named for w in re.findall(r"[a-z,] ([A-Z][a-z]+)", new)):
    raise SystemExit("storylm generate wrote no new name after %r: %r" % (named, new))
print(json.dumps({"chromium": chromium, "text": text, "pos": int(pos), "head": int(head), "exact": int(exact),
                  "attend": json.load(open("attend.json")), "attend_wide": json.load(open("attend_wide.json")),
                  "generate": gen, "first_ms": int(first_ms),
                  "models": [f for f in site["files"] if f.endswith(".safetensors")]}))
PY

serve_static_site

node "$src/tests/browser/static_site.mjs" "http://127.0.0.1:$port/" expect.json "$STORYLM_TEST_TMP/shots" ||
  fail "the static site does not show what the CLI computes (screenshots in $STORYLM_TEST_TMP/shots)"
echo "e2e_static_site: all checks passed"
