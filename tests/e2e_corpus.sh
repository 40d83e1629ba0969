#!/usr/bin/env bash
# The committed corpus is what the generator makes: every story names its hero
# in the first sentence and twice more, and the default run reproduces
# data/stories.txt byte for byte.
set -euo pipefail
: "${STORYLM_SOURCE_DIR:?} ${STORYLM_TEST_TMP:?}"
rm -rf "$STORYLM_TEST_TMP" && mkdir -p "$STORYLM_TEST_TMP"
python3 "$STORYLM_SOURCE_DIR/scripts/make_stories.py" --check "$STORYLM_SOURCE_DIR/data/stories.txt" > "$STORYLM_TEST_TMP/check.txt"
python3 "$STORYLM_SOURCE_DIR/scripts/make_stories.py" --out "$STORYLM_TEST_TMP/stories.txt"
cmp "$STORYLM_TEST_TMP/stories.txt" "$STORYLM_SOURCE_DIR/data/stories.txt" || { echo "FAILED: the generator no longer reproduces data/stories.txt" >&2; exit 1; }
echo "e2e_corpus: passed"
