# Shared by the end-to-end tests (tests/e2e_*.sh): source it after
# `set -euo pipefail`. It checks the environment CTest gives, starts in a
# fresh scratch folder, and offers the helpers every test wants.
: "${STORYLM:?} ${STORYLM_SOURCE_DIR:?} ${STORYLM_TEST_TMP:?}"
rm -rf "$STORYLM_TEST_TMP" && mkdir -p "$STORYLM_TEST_TMP" && cd "$STORYLM_TEST_TMP"
PY=/usr/bin/python3

fail() { echo "FAILED: $*" >&2; exit 1; }

# first_stories N: the first N stories of the project's corpus, on stdout.
first_stories() {
  awk -v RS='\n<\\|endoftext\\|>\n' -v ORS='\n<|endoftext|>\n' -v n="$1" 'NR <= n' "$STORYLM_SOURCE_DIR/data/stories.txt"
}

# tensor_sums MODEL: each tensor's checksum, to compare models bit for bit.
tensor_sums() {
  "$STORYLM" info --model "$1" --json | "$PY" -c 'import json,sys; print([(t["name"], t["fnv1a64"]) for t in json.load(sys.stdin)["tensors"]])'
}

# skip WHY: the test cannot run here; CTest shows it as skipped (exit 77).
skip() { echo "SKIPPED: $*"; exit 77; }

# python_preload BUILD: sets the array PRELOAD to the env prefix that lets python3 load BUILD's
# libstorylm.so (the sanitizers' runtimes preloaded, the interpreter's own leaks not reported);
# empty for a plain build.
python_preload() {
  PRELOAD=()
  grep -q '^STORYLM_SANITIZE:BOOL=ON' "$1/CMakeCache.txt" 2>/dev/null || return 0
  local cc
  cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$1/CMakeCache.txt")
  PRELOAD=(env LD_PRELOAD="$("${cc:-cc}" -print-file-name=libasan.so) $("${cc:-cc}" -print-file-name=libubsan.so)"
    ASAN_OPTIONS=detect_leaks=0)
}

# require_chromium: skips unless headless Chromium, node and the browser tests'
# npm packages are here; sets $chromium ($STORYLM_CHROMIUM, else /usr/bin/chromium).
require_chromium() {
  chromium="${STORYLM_CHROMIUM:-/usr/bin/chromium}"
  [[ -x "$chromium" ]] || skip "no chromium at $chromium (scripts/setup installs it)"
  command -v node >/dev/null || skip "node is not installed (scripts/setup installs it)"
  [[ -d "$STORYLM_SOURCE_DIR/tests/browser/node_modules/puppeteer-core" ]] ||
    skip "tests/browser/node_modules is missing: run scripts/setup (or scripts/setup_npm)"
}

# build_static_site: the playground as a static site in ./site (scripts/build_web, from the wasm
# build $build: $STORYLM_WEB_BUILD, else build-web/); skips without emscripten and a built one.
build_static_site() {
  build=${STORYLM_WEB_BUILD:-$STORYLM_SOURCE_DIR/build-web}
  command -v emcmake >/dev/null || [[ -f $build/storylm_web.js ]] ||
    skip "no emscripten and no $build/storylm_web.js (sudo apt-get install emscripten; scripts/build_wasm)"
  BUILD=$build "$STORYLM_SOURCE_DIR/scripts/build_web" site > build_web.log 2>&1 || { cat build_web.log; fail "scripts/build_web"; }
}

# serve_static_site: ./site served by python3 -m http.server on a free port of 127.0.0.1 ($port),
# stopped when the test exits.
serve_static_site() {
  port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$PY" -m http.server --bind 127.0.0.1 --directory site "$port" > http.log 2>&1 &
  http=$!
  trap 'kill "$http" 2>/dev/null; wait "$http" 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/index.html" >/dev/null && break
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:$port/index.html" >/dev/null || { cat http.log >&2; fail "python3 -m http.server does not answer"; }
}

# sae_tiny_model: the SAE tests' subject, a network trained 30 steps on the
# first 200 stories (slice.txt -> tiny.safetensors, 20 held out).
sae_tiny_model() {
  first_stories 200 >slice.txt
  "$STORYLM" train slice.txt --vocab vocab.txt --threads 2 --steps 30 --seed 5 --test-stories 20 \
    --out tiny.safetensors 2>train.log >/dev/null || { cat train.log; fail "train"; }
}

# sae_numpy_agrees MODE EVAL_JSON WHAT: tests/sae_reader.py MODE, reading the
# activations storylm cache writes (with the caller's ${common[@]}), gives
# sae eval's numbers in EVAL_JSON; fails naming WHAT otherwise.
sae_numpy_agrees() {
  "$STORYLM" cache --stories slice.txt "${common[@]}" -o acts.safetensors 2>/dev/null >/dev/null || fail "storylm cache"
  "$PY" "$STORYLM_SOURCE_DIR/tests/sae_reader.py" "$1" acts.safetensors >numpy.json || fail "the numpy reader"
  "$PY" - numpy.json "$2" <<'PY' || fail "numpy and storylm sae eval differ$3"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["tokens"] == b["tokens"], (a["tokens"], b["tokens"])
for k, tol in [("explained_variance", 1e-4), ("l0", 1e-3), ("mse", 1e-4)]:
    assert abs(a[k] - b[k]) <= tol * max(1, abs(b[k])), (k, a[k], b[k])
print("numpy agrees:", a)
PY
}
