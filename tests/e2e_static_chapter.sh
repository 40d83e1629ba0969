#!/usr/bin/env bash
# The chapter on the static site (scripts/build_web served by python3 -m http.server, no
# storylm process), as a learner's phone shows it: every section drawn on every model of
# the site's picker at 400 px, no sideways scroll, no script error, no serious or critical
# accessibility violation (tests/browser/chapter.mjs, its server-mode checks of layout).
# Skipped without chromium, or without emscripten and a built build-web (scripts/build_wasm).
set -euo pipefail
source "$(dirname "$0")/common.sh"
require_chromium
[[ -d "$STORYLM_SOURCE_DIR/tests/browser/node_modules/axe-core" ]] || skip "tests/browser/node_modules has no axe-core: run scripts/setup_npm"
mkdir -p shots
build_static_site
serve_static_site
node "$STORYLM_SOURCE_DIR/tests/browser/chapter.mjs" "http://127.0.0.1:$port/" 400 "$STORYLM" "$chromium" "$STORYLM_TEST_TMP/shots" ||
  fail "the chapter's sections on the static site at 400 px (screenshots in $STORYLM_TEST_TMP/shots)"
echo "e2e_static_chapter: all checks passed"
