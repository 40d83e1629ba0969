#!/usr/bin/env bash
# The chapter on the static site (scripts/build_web served by python3 -m http.server, no
# storylm process), in two runs of tests/browser/chapter.mjs:
#  1. as a learner's phone shows it: every section drawn on every model of the site's picker at
#     400 px, no sideways scroll, no script error, no serious or critical accessibility violation;
#  2. its numbers at 1280 px (--numbers): each section's numbers on every model of the picker
#     against the CLI's --json (repeats, stats, lookup, guess) and Secrets 1-4 run, as
#     tests/e2e_chapter_1280.sh checks them on storylm serve. Like that test, the site's models
#     then have no held-out stories beside them (models/tinystories-test.txt, their teaching
#     stories: what the CLI cannot read as the page does), so the page reads its test stories
#     from the server's stories file, data/stories.txt, as the CLI does: there the first 300
#     stories (30 test stories, so that each Secret takes seconds). The CLI is the WebAssembly
#     build's (node build-web/storylm.mjs), whose kernels the worker runs: the same doubles.
# Skipped without chromium, or without emscripten and a built build-web (scripts/build_wasm).
set -euo pipefail
source "$(dirname "$0")/common.sh"
require_chromium
[[ -d "$STORYLM_SOURCE_DIR/tests/browser/node_modules/axe-core" ]] || skip "tests/browser/node_modules has no axe-core: run scripts/setup_npm"
mkdir -p shots
build_static_site
serve_static_site
chapter="$STORYLM_SOURCE_DIR/tests/browser/chapter.mjs"
node "$chapter" "http://127.0.0.1:$port/" 400 "$STORYLM" "$chromium" "$STORYLM_TEST_TMP/shots" ||
  fail "the chapter's sections on the static site at 400 px (screenshots in $STORYLM_TEST_TMP/shots)"

# the numbers: the site's stories file of 300 stories, its models without held-out stories
[[ -f $build/storylm.mjs ]] || fail "no $build/storylm.mjs beside the site's WebAssembly"
rm site/models/tinystories-test.txt
"$PY" - <<'PY'
import json
site = json.load(open("site/site.json"))
site["files"] = [f for f in site["files"] if not f.endswith("-test.txt")]
assert site["serve_stories"] == "data/stories.txt", site
json.dump(site, open("site/site.json", "w"))
PY
mkdir -p data
first_stories 300 > data/stories.txt
gzip -9n < data/stories.txt > site/data/stories.txt.gz
ln -s site/models models # the CLI names the models as the page does, from this folder
printf '#!/bin/sh\nexec node "%s" "$@"\n' "$build/storylm.mjs" > cli && chmod +x cli
node "$chapter" "http://127.0.0.1:$port/" 1280 "$PWD/cli" "$chromium" "$STORYLM_TEST_TMP/shots" --numbers --exact ||
  fail "the chapter's numbers on the static site at 1280 px (screenshots in $STORYLM_TEST_TMP/shots)"
echo "e2e_static_chapter: all checks passed"
