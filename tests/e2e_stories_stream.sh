#!/usr/bin/env bash
# The streaming reader (16-bit ids in a memory-mapped cache) makes exactly
# what the reader before it made: the same ids, counts, skips and held-out
# split, on the project's corpus and on files of odd shapes (CRLF, no
# separator lines, a byte-order mark, stories too long, invalid UTF-8, NUL),
# read from the text, from the cache, and with no cache at all. The digests
# were written by the reader before the change (commit 2d795e9), from the
# same files (tests/stories_shapes.sh makes them).
set -euo pipefail
source "$(dirname "$0")/common.sh"
source "$STORYLM_SOURCE_DIR/tests/stories_shapes.sh"
model="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
make_shapes "$STORYLM_SOURCE_DIR/data/stories.txt"
cp "$STORYLM_SOURCE_DIR/data/stories.txt" corpus.txt
declare -A want=(
  [corpus.txt]=b5c7df552168fcdeedf74aa6cbca24d61d2ac8dc782530b338f0ccd584cadb8e
  [crlf.txt]=d210d774025e5cd93d752b580f607ba28f60286e00532bffbdaf74fef7235ec7
  [blank.txt]=d210d774025e5cd93d752b580f607ba28f60286e00532bffbdaf74fef7235ec7
  [odd.txt]=e0e70f4f60c3d505d6c97f1a239e122a89f483f16d875b1a99bd16292ef447c8)
for f in corpus.txt crlf.txt blank.txt odd.txt; do
  rm -rf "$STORYLM_CACHE"
  got=$(shape_digest "$f" "$model") # the first read makes the cache, the others read it
  [[ $got == "${want[$f]}" ]] || fail "$f: the reader's ids, counts or split differ from before (digest $got)"
  [[ $(ls "$STORYLM_CACHE"/*.ids | wc -l) == 1 ]] || fail "$f: expected one cache file"
  got=$(STORYLM_CACHE=/dev/null/none shape_digest "$f" "$model") # no usable cache folder
  [[ $got == "${want[$f]}" ]] || fail "$f without a cache: the reader's ids, counts or split differ (digest $got)"
done
# the cache holds 2 bytes an id: header 64, ids, padding to 8, 16 bytes a story, 8 more
rm -rf "$STORYLM_CACHE"
read -r stories tokens < <("$STORYLM" stories corpus.txt -m "$model" | awk '/^stories/ {s=$2} /^tokens/ {t=$2} END {print s, t}')
size=$(stat -c %s "$STORYLM_CACHE"/*.ids)
expect=$(( (64 + 2 * tokens + 7) / 8 * 8 + 16 * stories + 16 ))
[[ $size == "$expect" ]] || fail "cache of $size bytes, expected $expect for $stories stories of $tokens tokens at 2 bytes an id"
# the odd file's counts, spelled out
"$STORYLM" stories odd.txt -m "$model" > odd.out
grep -q 'skipped      1 empty, 2 invalid UTF-8 or NUL, 2 too long' odd.out || fail "odd.txt: wrong skips: $(cat odd.out)"
echo "e2e_stories_stream: passed"
