#!/usr/bin/env bash
# Not a check but the WebAssembly tests' fixture (CTest's FIXTURES_SETUP wasm):
# brings build-web/ up to date with the source (scripts/build_wasm: the
# dependencies, fetched from Debian's archive the first time, then the build),
# as CTest's native build is before the tests, so that e2e_wasm, e2e_web_api and
# e2e_static_site compare today's code. Skipped (77) without emscripten or node;
# those tests then skip too.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

command -v emcmake >/dev/null || skip "emscripten is not installed (scripts/setup installs it)"
command -v node >/dev/null || skip "node is not installed (scripts/setup installs it)"
[[ -n ${STORYLM_WASM:-} ]] && skip "STORYLM_WASM names a wasm build to test: nothing to build"
(cd "$STORYLM_SOURCE_DIR" && scripts/build_wasm) > build.log 2>&1 ||
  { tail -30 build.log; fail "scripts/build_wasm failed (its log above)"; }
echo "wasm_build: build-web is up to date"
