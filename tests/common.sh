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
