#!/usr/bin/env bash
# A writer's own stories in an empty folder: what train refuses before its
# first step, with what to do, and the flags that accept it on purpose.
# - a vocabulary (vocab.txt left in the folder, or --vocab) under which more
#   than 1% of the stories' tokens are [UNK] is refused (exit 2) with the
#   share, a word that became [UNK] and the command that learns a fitting one;
#   --allow-unknown trains with it;
# - a file of which 5% or more of the stories are not UTF-8 is refused (exit 2)
#   with the iconv command, before any file is written; --allow-skipped trains
#   on the rest;
# - storylm vocab -o never replaces a vocabulary that a model in the folder was
#   trained with, not even with --force;
# - --vocab shipped (or models/vocab.txt from a folder without it) is the
#   shipped vocabulary, found as the shipped model is;
# - a prompt of several words given unquoted gets a hint to quote it; a
#   resumed run says the step it resumes from.
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
S="$STORYLM"
SHIPPED_VOCAB="$STORYLM_SOURCE_DIR/models/vocab.txt"

# make_stories N MODE: N short stories, blank-line separated; MODE greek puts a
# Greek sentence in each (letters the shipped English vocabulary lacks), cp1252
# writes every fourth story in Windows-1252 (curly quotes, an accent).
make_stories() {
  "$PY" - "$1" "$2" <<'PY'
import random, sys
n, mode = int(sys.argv[1]), sys.argv[2]
r = random.Random(1)
names = ["Pip", "Nora", "Otto", "Wren", "Bo", "Kai", "Lumi", "Tess", "Rafe", "Juno"]
pets, things = ["cat", "dog", "frog", "duck", "owl"], ["kite", "drum", "boat", "hat", "box"]
places, greek = ["park", "barn", "lake", "hill"], ["Νίκος", "Ελένη", "γάτα", "σκύλος", "θάλασσα"]
for i in range(n):
    a, b = r.sample(names, 2)
    pet, thing, place = r.choice(pets), r.choice(things), r.choice(places)
    s = [f"{a} had a {thing}.", f"One day {a} went to the {place} with a {pet}.",
         f"{b} came to play with {a}.", f"That night {a} hugged the {pet} and slept."]
    if mode == "greek":
        s.insert(2, f"{r.choice(greek)} said {r.choice(greek)}.")
    text = " ".join(s)
    if mode == "cp1252" and i % 4 == 0:
        text += " \u201cHello,\u201d said the caf\u00e9 owner."
        sys.stdout.buffer.write(text.encode("cp1252") + b"\n\n")
    else:
        sys.stdout.buffer.write(text.encode("utf-8") + b"\n\n")
PY
}
fresh() { local d; d=$(mktemp -d "$STORYLM_TEST_TMP/empty.XXXX"); echo "$d"; }
quick=(--steps 2 --threads 1 --eval-every 0)

# English stories with the shipped vocabulary: no [UNK], trained as before.
cd "$(fresh)"
make_stories 100 plain > mine.txt
"$S" train mine.txt --vocab "$SHIPPED_VOCAB" "${quick[@]}" > /dev/null 2> err.txt ||
  { cat err.txt; fail "English stories with the shipped vocabulary were refused"; }

# The same vocabulary left in the folder, stories with Greek in them: refused.
cd "$(fresh)"
make_stories 200 greek > mine.txt
cp "$SHIPPED_VOCAB" vocab.txt
rc=0; "$S" train mine.txt "${quick[@]}" > /dev/null 2> err.txt || rc=$?
[[ $rc -eq 2 ]] || { cat err.txt; fail "a vocab.txt that does not fit: exit $rc, not 2"; }
grep -q "does not fit 'mine.txt': [0-9.]*% of its tokens are \[UNK\]" err.txt || { cat err.txt; fail "no [UNK] share"; }
grep -qE "\"(Νίκος|Ελένη|γάτα|σκύλος|θάλασσα)\", for one" err.txt || { cat err.txt; fail "no example word"; }
grep -q "storylm train 'mine.txt' --vocab stories-vocab.txt" err.txt && grep -q -- "--allow-unknown" err.txt ||
  { cat err.txt; fail "the hint does not say how to learn a fitting vocabulary"; }
[[ ! -e model.safetensors ]] || fail "a refused run wrote a model"
# --vocab FILE is checked the same way
mv vocab.txt english.txt
rc=0; "$S" train mine.txt --vocab english.txt "${quick[@]}" > /dev/null 2> err.txt || rc=$?
[[ $rc -eq 2 ]] && grep -q "'english.txt' does not fit" err.txt || { cat err.txt; fail "--vocab that does not fit: exit $rc"; }
# on purpose
"$S" train mine.txt --vocab english.txt --allow-unknown "${quick[@]}" > /dev/null 2> err.txt ||
  { cat err.txt; fail "--allow-unknown did not train"; }
# the hint's way: a vocabulary learnt from the stories fits
"$S" train mine.txt --vocab stories-vocab.txt -o own.safetensors "${quick[@]}" > /dev/null 2> err.txt ||
  { cat err.txt; fail "the vocabulary the hint learns was refused"; }

# A quarter of the stories in Windows-1252: refused before any file is written.
cd "$(fresh)"
make_stories 100 cp1252 > mine.txt
rc=0; "$S" train mine.txt "${quick[@]}" > /dev/null 2> err.txt || rc=$?
[[ $rc -eq 2 ]] || { cat err.txt; fail "a file a quarter not UTF-8: exit $rc, not 2"; }
grep -q "25 of 100 stories are not UTF-8" err.txt && grep -q "iconv -f WINDOWS-1252 -t UTF-8 'mine.txt'" err.txt &&
  grep -q -- "--allow-skipped trains on the 75 stories" err.txt || { cat err.txt; fail "no counts or iconv command"; }
[[ $(ls) == $'err.txt\nmine.txt' ]] || fail "a refused run left files: $(ls)"
# with a vocabulary already there the check is the same
"$S" vocab mine.txt -o vocab.txt --size 100 2> /dev/null
rc=0; "$S" train mine.txt "${quick[@]}" > /dev/null 2> err.txt || rc=$?
[[ $rc -eq 2 ]] && grep -q "iconv" err.txt || { cat err.txt; fail "skipped stories with a vocab.txt: exit $rc"; }
rm vocab.txt
"$S" train mine.txt --allow-skipped "${quick[@]}" > /dev/null 2> err.txt || { cat err.txt; fail "--allow-skipped"; }
grep -q "75 stories" err.txt || { cat err.txt; fail "--allow-skipped did not train on the 75 UTF-8 stories"; }
# the hint's way: the converted file trains
iconv -f WINDOWS-1252 -t UTF-8 mine.txt > stories-utf8.txt
"$S" train stories-utf8.txt --vocab utf8-vocab.txt -o utf8.safetensors "${quick[@]}" > /dev/null 2> err.txt ||
  { cat err.txt; fail "the converted file"; }
# vocab -o never replaces the vocabulary a model in the folder was trained with, not even with --force.
cd "$(fresh)"
make_stories 100 plain > mine.txt
"$S" train mine.txt "${quick[@]}" > /dev/null 2> err.txt || { cat err.txt; fail "train"; }
v=$(cksum < vocab.txt)
for force in "" --force; do
  if "$S" vocab mine.txt -o vocab.txt --size 60 $force 2> err.txt; then fail "vocab $force replaced the model's vocabulary"; fi
  grep -q "'vocab.txt' is the vocabulary the model 'model.safetensors' was trained with" err.txt &&
    grep -q "HINT: write the new one to another file" err.txt || { cat err.txt; fail "vocab $force: no reason or hint"; }
done
[[ $(cksum < vocab.txt) == "$v" ]] || fail "vocab.txt changed"
"$S" vocab mine.txt -o new.txt --size 60 2> err.txt || { cat err.txt; fail "vocab -o new.txt"; }
"$S" vocab -m model.safetensors -o vocab.txt --force 2> err.txt || { cat err.txt; fail "the model's own vocabulary"; }
[[ $(cksum < vocab.txt) == "$v" ]] || fail "exporting the model's vocabulary changed vocab.txt"
# --vocab shipped (and the guide's --vocab models/vocab.txt) from an empty folder: the shipped vocabulary.
cd "$(fresh)"
make_stories 100 plain > mine.txt
"$S" train mine.txt --vocab shipped "${quick[@]}" > /dev/null 2> err.txt || { cat err.txt; fail "--vocab shipped"; }
grep -qF "the shipped vocabulary $(realpath "$SHIPPED_VOCAB")" err.txt || { cat err.txt; fail "--vocab shipped not said"; }
"$S" train mine.txt --vocab models/vocab.txt -o guide.safetensors "${quick[@]}" > /dev/null 2> err.txt ||
  { cat err.txt; fail "--vocab models/vocab.txt from an empty folder"; }
[[ $(ls) == $'err.txt\nguide.adam.safetensors\nguide.safetensors\nmine.txt\nmodel.adam.safetensors\nmodel.safetensors' ]] ||
  fail "--vocab shipped wrote files: $(ls)"
"$S" vocab -m guide.safetensors -o guide-vocab.txt 2> /dev/null && cmp -s guide-vocab.txt "$SHIPPED_VOCAB" ||
  fail "the model's vocabulary is not the shipped one"
"$S" stories mine.txt --vocab shipped > out.txt 2> err.txt && grep -q "^stories *100" out.txt ||
  { cat err.txt; fail "stories --vocab shipped"; }
[[ $("$S" tokenize "Lily" --vocab shipped 2> /dev/null) == lily ]] || fail "tokenize --vocab shipped"
# A resumed run says the step it resumes from.
"$S" train mine.txt --vocab shipped --steps 6 --stop-at 3 --threads 1 -o r.safetensors > /dev/null 2> err.txt ||
  { cat err.txt; fail "train --stop-at 3"; }
"$S" train mine.txt --vocab shipped --steps 6 --threads 1 -o r.safetensors --resume > /dev/null 2> err.txt ||
  { cat err.txt; fail "train --resume"; }
grep -q "resuming from step 3 of 6" err.txt || { cat err.txt; fail "the resumed run did not say its step"; }

# A prompt of several words unquoted: the hint quotes it (exit 2, as any usage error).
for verb in generate tokenize; do
  rc=0; "$S" $verb Lily found a > /dev/null 2> err.txt || rc=$?
  [[ $rc -eq 2 ]] && grep -qF "goes in quotes: storylm $verb \"Lily found a\"" err.txt ||
    { cat err.txt; fail "$verb Lily found a: exit $rc, no hint to quote it"; }
done
echo "e2e_writer: OK"
