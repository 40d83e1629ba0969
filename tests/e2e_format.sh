#!/usr/bin/env bash
# Every C file is as .clang-format has it (scripts/format --check): one style,
# and a change's diff shows only what it changes. Skipped where clang-format
# is missing or the tree is not a git checkout.
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
command -v clang-format >/dev/null || skip "clang-format is not installed (scripts/setup installs it)"
git -C "$STORYLM_SOURCE_DIR" rev-parse --git-dir >/dev/null 2>&1 || skip "not a git checkout: no list of files"
"$STORYLM_SOURCE_DIR/scripts/format" --check
