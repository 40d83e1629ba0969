#!/usr/bin/env bash
# storylm tokenize from the command line: pieces, ids, JSON, words, standard
# input, --lines, the default vocab path, and clear errors (exit 1, never a
# crash) for a missing vocab, a bad vocab and bytes that are not UTF-8.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tmp="$STORYLM_TEST_TMP"
failed=0

# Counts a failure and goes on (every case is reported), instead of common.sh's exit.
fail() {
    echo "FAILED: $*" >&2
    failed=$((failed + 1))
}

# expect NAME WANT COMMAND...: the command exits 0 and prints exactly WANT.
expect() {
    local name="$1" want="$2" got
    shift 2
    if ! got="$("$@" 2>"$tmp/stderr")"; then
        fail "$name: exit code $? ($(cat "$tmp/stderr"))"
    elif [[ "$got" != "$want" ]]; then
        fail "$name: got '$got', want '$want'"
    fi
}

# expect_error NAME CODE MESSAGE COMMAND...: exits with CODE, MESSAGE on stderr.
expect_error() {
    local name="$1" code="$2" message="$3" rc=0
    shift 3
    "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
    if [[ $rc -ne $code ]]; then
        fail "$name: exit code $rc, want $code (stderr: $(cat "$tmp/stderr"))"
    elif ! grep -qF -- "$message" "$tmp/stderr"; then
        fail "$name: stderr lacks '$message': $(cat "$tmp/stderr")"
    fi
}

printf '%s\n' '[UNK]' '[EOS]' the sat on mat z '##ark' '##o' . '!' "'" don t > vocab.txt
V=(--vocab "$tmp/vocab.txt")

expect "pieces" "z ##ark ##o sat on the mat ." "$STORYLM" tokenize "${V[@]}" "Zarko sat on the mat."
expect "ids" "6 7 8 3 4 2 5 9" "$STORYLM" tokenize "${V[@]}" --ids "Zarko sat on the mat."
expect "json" '{"command":"tokenize","tokens":[{"piece":"don","id":12},{"piece":"'"'"'","id":11},{"piece":"t","id":13},{"piece":"[UNK]","id":0}]}' \
    "$STORYLM" tokenize "${V[@]}" --json "Don't stop"
expect "unknown and accents" "[UNK] ! ! [UNK]" "$STORYLM" tokenize "${V[@]}" "Café!! Ça"
expect "empty text" "" "$STORYLM" tokenize "${V[@]}" ""
expect "default vocab path" "the mat" "$STORYLM" tokenize "The MAT"
expect "stdin" "z ##ark ##o sat" bash -c "printf 'ZARKO\\n\\tsat\\n' | \"\$0\" tokenize --vocab vocab.txt -" "$STORYLM"
expect "words need no vocab" "cafe , naive ! \" ok \" 中 文" \
    "$STORYLM" tokenize --vocab /nonexistent --words 'Café, NAÏVE! "ok" 中文'
expect "words as json" '{"command":"tokenize","words":["don","'"'"'","t"]}' "$STORYLM" tokenize --words --json "don't"

printf 'the mat\nZarko!\n\non on\n' > lines.txt
expect "lines" "$(printf 'the mat\nz ##ark ##o !\n\non on')" "$STORYLM" tokenize "${V[@]}" --lines lines.txt
expect "lines ids" "$(printf '2 5\n6 7 8 10\n\n4 4')" "$STORYLM" tokenize "${V[@]}" --ids --lines lines.txt
expect "lines from stdin" "$(printf '2\n3')" bash -c "printf 'the\\nsat' | \"\$0\" tokenize --vocab vocab.txt --ids --lines -" "$STORYLM"

# Bytes that are not UTF-8: refused with the offset, or dropped with --lossy.
expect_error "bad byte in TEXT" 1 "the text: invalid UTF-8 at byte offset 2" "$STORYLM" tokenize "${V[@]}" $'ab\xffcd'
expect_error "bad byte on stdin" 1 "standard input: invalid UTF-8 at byte offset 4" \
    bash -c "printf 'the \\xe2\\x82' | \"\$0\" tokenize --vocab vocab.txt -" "$STORYLM"
expect_error "NUL on stdin" 1 "standard input: NUL byte at byte offset 1" \
    bash -c "printf 'a\\0b' | \"\$0\" tokenize --vocab vocab.txt -" "$STORYLM"
expect_error "bad byte in --lines" 1 "line 2: invalid UTF-8 at byte offset 1" \
    bash -c "printf 'the\\nm\\xffat\\n' > bad.txt && \"\$0\" tokenize --vocab vocab.txt --lines bad.txt" "$STORYLM"
grep -qF -- "--lossy" "$tmp/stderr" || fail "the hint names --lossy"
expect "lossy" "mat mat" bash -c "printf 'm\\xffat m\\0at' | \"\$0\" tokenize --vocab vocab.txt --lossy -" "$STORYLM"

# Vocabulary errors: the message names the file and the line; the hint says what to do.
expect_error "missing vocab" 1 "run storylm vocab STORIES first" "$STORYLM" tokenize --vocab "$tmp/none.txt" "hi"
# From an empty folder (no --vocab, no model, no vocab.txt): the shipped model's vocabulary, said on stderr.
empty=$(mktemp -d)
(cd "$empty" && "$STORYLM" tokenize "Zarko sat on the mat." > "$tmp/stdout" 2> "$tmp/stderr") ||
    fail "tokenize from an empty folder: $(cat "$tmp/stderr")"
[[ $(cat "$tmp/stdout") == "z ##ark ##o sat on the mat ." ]] || fail "tokenize from an empty folder: $(cat "$tmp/stdout")"
grep -q "using the shipped model" "$tmp/stderr" || fail "tokenize from an empty folder did not say which vocabulary"
rmdir "$empty"
expect_error "vocab and model" 2 "not both" "$STORYLM" tokenize --vocab vocab.txt --model m.safetensors hi
printf '[UNK]\n[EOS]\nthe\nthe\n' > dup.txt
expect_error "duplicate piece" 1 "dup.txt' line 4: duplicate piece 'the' (already on line 3)" \
    "$STORYLM" tokenize --vocab dup.txt "the"
printf 'the\n[EOS]\n' > nounk.txt
expect_error "no [UNK]" 1 "has no [UNK] line" "$STORYLM" tokenize --vocab nounk.txt "the"
expect_error "a directory" 1 "is a directory" "$STORYLM" tokenize --vocab "$tmp" "the"

# Usage errors exit 2.
expect_error "no text" 2 "missing TEXT" "$STORYLM" tokenize "${V[@]}"
expect_error "ids and json" 2 "--ids and --json" "$STORYLM" tokenize "${V[@]}" --ids --json hi
expect_error "text and lines" 2 "not both" "$STORYLM" tokenize "${V[@]}" --lines lines.txt hi
"$STORYLM" tokenize --help | grep -- "--lines FILE" >/dev/null || fail "--help lists --lines"

# A long line of mixed text does not crash and gives one output line.
head -c 300000 /dev/urandom | base64 -w 0 > long.txt
n=$("$STORYLM" tokenize "${V[@]}" --ids --lines long.txt | wc -l)
[[ $n -eq 1 ]] || fail "a long line gave $n output lines"

if [[ $failed -ne 0 ]]; then
    echo "$failed checks failed" >&2
    exit 1
fi
echo "e2e_tokenize: all checks passed"
