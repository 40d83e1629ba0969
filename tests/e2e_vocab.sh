# storylm vocab end to end: invented stories in, the same vocab.txt every
# time (and at any thread count), exactly --size lines; bad input refused
# with a message and the right exit code.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
dir="$STORYLM_TEST_TMP"

# Runs the command, expecting exit code $1 and stderr matching $2.
expect_fail() {
    local want=$1 pattern=$2
    shift 2
    local rc=0
    "$@" >out.txt 2>err.txt || rc=$?
    [ "$rc" = "$want" ] || fail "'$*' exited $rc, want $want; stderr: $(cat err.txt)"
    grep -q -- "$pattern" err.txt || fail "'$*': stderr lacks '$pattern': $(cat err.txt)"
}

cat >stories.txt <<'EOF'
Nell the snail wanted to see the top of the garden wall. "It is so high," said Nell.
She climbed a little every day. Her friend Ozzo the beetle cheered her on.
<|endoftext|>
Once upon a time, a boy named Kip built a boat from a box. He painted it blue and green.
"Where will you sail?" asked his sister Pia. Kip smiled. "To the end of the pond!"
<|endoftext|>
Grandpa Tobbe had a clock that sang at noon. One day the clock was quiet.
Tobbe and his cat Miso opened it up and found a tiny bird asleep inside. They let it sing again.
<|endoftext|>
EOF

# the same stories give the same file, byte for byte, at any thread count
"$STORYLM" vocab stories.txt -o a.txt --size 150 2>summary.txt
OMP_NUM_THREADS=1 "$STORYLM" vocab stories.txt --output b.txt --size=150 2>/dev/null
OMP_NUM_THREADS=2 "$STORYLM" vocab stories.txt -o c.txt --size 150 2>/dev/null
cmp a.txt b.txt || fail "two runs gave different vocabularies"
cmp a.txt c.txt || fail "1 and 2 threads gave different vocabularies"

[ "$(wc -l <a.txt)" = 150 ] || fail "a.txt has $(wc -l <a.txt) lines, want 150"
[ "$(sed -n 1p a.txt)" = "[UNK]" ] || fail "line 1 is not [UNK]"
[ "$(sed -n 2p a.txt)" = "[EOS]" ] || fail "line 2 is not [EOS]"
[ -z "$(sort a.txt | uniq -d)" ] || fail "duplicate pieces: $(sort a.txt | uniq -d | head -3)"
! tail -n +3 a.txt | grep '[A-Z]' >/dev/null || fail "a piece has upper case"
! grep -q '^$' a.txt || fail "an empty line"
! grep -q $'\r' a.txt || fail "a carriage return"
[ "$(tail -c 1 a.txt | od -An -c | tr -d ' ')" = '\n' ] || fail "no final newline"
grep -qx 'the' a.txt || fail "'the' is not a piece"
grep -qx '##e' a.txt || fail "'##e' is not a piece"
grep -q '3 stories' summary.txt || fail "summary does not count the stories: $(cat summary.txt)"
grep -q 'distinct' summary.txt || fail "summary lacks the distinct words: $(cat summary.txt)"

# no stray temporary files from the atomic write
[ -z "$(ls | grep '\.tmp\.' || true)" ] || fail "temporary file left: $(ls)"

# stories separated by blank lines work as well
printf 'Ada had a kite.\n\nBo had a drum.\n\nCy had a hat.\n' >blank.txt
"$STORYLM" vocab blank.txt -o blank_vocab.txt --size 30 2>err.txt
[ "$(wc -l <blank_vocab.txt)" = 30 ] || fail "blank-line stories: $(wc -l <blank_vocab.txt) lines"
grep -q '3 stories' err.txt || fail "blank-line stories not split in 3: $(cat err.txt)"

# --help from the table
"$STORYLM" vocab --help >help.txt
grep -q -- '--size' help.txt || fail "--help lacks --size"
grep -q 'default: 2000' help.txt || fail "--help lacks the default size"

# asking for more pieces than the stories can give: says how many they can
expect_fail 1 'only [0-9]* pieces' "$STORYLM" vocab stories.txt -o big.txt --size 2000
grep -q 'stories.txt' err.txt || fail "the error does not name the file: $(cat err.txt)"
[ ! -e big.txt ] || fail "a vocabulary was written despite the error"

# bad input: a message naming the file, exit 1
expect_fail 1 'missing.txt' "$STORYLM" vocab missing.txt -o x.txt
: >empty.txt
expect_fail 1 'empty.txt' "$STORYLM" vocab empty.txt -o x.txt
printf '   \n\n \n' >blank_only.txt
expect_fail 1 'blank_only.txt' "$STORYLM" vocab blank_only.txt -o x.txt
mkdir -p folder
expect_fail 1 'folder' "$STORYLM" vocab folder -o x.txt
expect_fail 1 'no_such_dir' "$STORYLM" vocab stories.txt -o no_such_dir/v.txt --size 150
[ ! -e x.txt ] || fail "x.txt written after an error"

# usage errors: exit 2
expect_fail 2 'size' "$STORYLM" vocab stories.txt --size 0
expect_fail 2 'size' "$STORYLM" vocab stories.txt --size 2
expect_fail 2 'size' "$STORYLM" vocab stories.txt --size 1000001
expect_fail 2 'size' "$STORYLM" vocab stories.txt --size many
touch vocab.txt
expect_fail 2 'give STORIES to learn a vocabulary' "$STORYLM" vocab
expect_fail 2 'unknown option' "$STORYLM" vocab stories.txt --sise 10

# --model: the vocabulary a model holds, as vocab.txt; the shipped vocab.txt is the shipped model's.
SHIPPED="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
"$STORYLM" vocab --model "$SHIPPED" -o exported.txt 2>/dev/null || fail "vocab --model"
cmp -s exported.txt "$STORYLM_SOURCE_DIR/models/vocab.txt" || fail "models/vocab.txt is not the shipped model's vocabulary"
(( $(wc -l < exported.txt) == 2000 )) || fail "exported vocabulary has $(wc -l < exported.txt) lines"
"$STORYLM" tokenize --vocab exported.txt "Zarko sat on the mat." > /dev/null || fail "the exported vocabulary does not load"
expect_fail 2 'not both' "$STORYLM" vocab stories.txt --model "$SHIPPED"
# without STORIES or --model, from an empty folder: the shipped model's, said on stderr
empty=$(mktemp -d "$PWD/empty.XXXX")
(cd "$empty" && "$STORYLM" vocab > out.txt 2> err.txt) || fail "storylm vocab from an empty folder: $(cat "$empty/err.txt")"
cmp -s "$empty/vocab.txt" "$STORYLM_SOURCE_DIR/models/vocab.txt" || fail "storylm vocab from an empty folder wrote another vocabulary"
grep -q "using the shipped model" "$empty/err.txt" || fail "storylm vocab did not say which model: $(cat "$empty/err.txt")"
expect_fail 1 'no model file' "$STORYLM" vocab --model no_such.safetensors -o x2.txt
[ ! -e x2.txt ] || fail "x2.txt written after an error"

echo "e2e_vocab: all checks passed"
