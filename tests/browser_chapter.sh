# The chapter on the page at one width (sourced by tests/e2e_chapter_WIDTH.sh, after
# `width=`, and `numbers=--numbers` for the width that checks numbers): the real `storylm
# serve` with every shipped model and snapshot, a stories file of 300 stories (30 test
# stories, so that the Secrets measure in seconds on each model), and tests/browser/chapter.mjs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
src="$STORYLM_SOURCE_DIR"
require_chromium
[[ -d "$src/tests/browser/node_modules/axe-core" ]] || skip "tests/browser/node_modules has no axe-core: run scripts/setup_npm"
mkdir -p models/snapshots data shots
cp "$src"/models/*.safetensors models/
cp "$src"/models/snapshots/*.safetensors models/snapshots/
first_stories 300 > data/stories.txt
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$STORYLM" serve --model models/tinystories.safetensors --port "$port" --stories data/stories.txt --data-dir data --cache-models 6 > serve.log 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/api/models" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { cat serve.log >&2; fail "storylm serve exited"; }
  sleep 0.2
done
if ! node "$src/tests/browser/chapter.mjs" "http://127.0.0.1:$port/" "$width" "$STORYLM" "$chromium" "$STORYLM_TEST_TMP/shots" ${numbers:-}; then
  echo "--- storylm serve's log:" >&2; tail -30 serve.log >&2
  fail "the chapter's sections at $width px (screenshots in $STORYLM_TEST_TMP/shots)"
fi
