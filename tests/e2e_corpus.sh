#!/usr/bin/env bash
# The committed corpus is what the generator makes: every story names its hero
# in the first sentence and twice more, and the default run reproduces
# data/stories.txt byte for byte.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
python3 "$STORYLM_SOURCE_DIR/scripts/make_stories.py" --check "$STORYLM_SOURCE_DIR/data/stories.txt" > "$STORYLM_TEST_TMP/check.txt"
python3 "$STORYLM_SOURCE_DIR/scripts/make_stories.py" --out "$STORYLM_TEST_TMP/stories.txt"
cmp "$STORYLM_TEST_TMP/stories.txt" "$STORYLM_SOURCE_DIR/data/stories.txt" || fail "the generator no longer reproduces data/stories.txt"
echo "e2e_corpus: passed"
