#!/usr/bin/env bash
# A writer's French, German and English stories keep their letters (--cased):
# - vocab --cased writes [CASED] after [UNK] and [EOS]; tokenize with it, then
#   decode (tokenize --decode), gives every story back, whitespace aside:
#   capitals, accents, umlauts, „…“, «…», l'histoire;
# - train --cased learns such a vocabulary, the model file carries it, and
#   tokenize -m, generate and eval read text as cased from the model alone;
# - train --cased refuses an uncased vocab.txt (or base model) already there;
# - the default stays uncased: the shipped model's tokens are as before;
# - vocab -o - writes the vocabulary on stdout, not to a file named "-".
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
S="$STORYLM"

names=(Théo Käthe Zoé Jürgen Élodie Ömer Léa Björn)
for i in $(seq 0 47); do
  n=${names[$((i % 8))]} m=${names[$(((i + 3) % 8))]}
  case $((i % 3)) in
    0) echo "$n et $m jouaient dans le jardin. « Regarde ! » dit $n. C'était l'histoire d'un chat très content, près de l'école." ;;
    1) echo "$n rief: „Schau mal!“ Der Hund war müde. $m sagte, \"das ist schön.\" Danach gingen sie nach Hause." ;;
    2) echo "$n said, \"this is fun.\" $m's mom didn't know. \"Why?\" asked $m. \"Stop!\" The dog ran away." ;;
  esac
  echo "<|endoftext|>"
done > mine.txt

# vocab --cased, and the round trip of every story.
"$S" vocab mine.txt --cased -o cased.txt 2> vocab.err || { cat vocab.err; fail "vocab --cased"; }
[[ "$(head -3 cased.txt | tr '\n' ' ')" == "[UNK] [EOS] [CASED] " ]] || fail "no [CASED] at id 2: $(head -3 cased.txt)"
# -o - writes the vocabulary on stdout (it wrote a file named "-"), the summary on stderr
"$S" vocab mine.txt --cased -o - > stdout.txt 2> /dev/null
cmp -s stdout.txt cased.txt && [[ ! -e ./- ]] || fail "vocab -o - did not write the vocabulary on stdout"
"$S" vocab -m "$STORYLM_SOURCE_DIR/models/tinystories.safetensors" -o - 2> /dev/null | cmp -s - "$STORYLM_SOURCE_DIR/models/vocab.txt" ||
  fail "vocab -m M -o - is not the model's vocabulary"
grep -v '^<|endoftext|>$' mine.txt > all.txt; head -6 all.txt > lines.txt  # no pipe: head closing it early fails pipefail
"$S" tokenize --vocab cased.txt --decode --lines lines.txt > back.txt
strip() { tr -d ' \n' < "$1"; }
[[ "$(strip lines.txt)" == "$(strip back.txt)" ]] || { diff lines.txt back.txt; fail "the cased round trip changed the text"; }
grep -q "« Regarde ! »\|«Regarde!»" back.txt && grep -q "„Schau mal!“ Der Hund" back.txt &&
  grep -q "l'histoire" back.txt && grep -q "said, \"this is fun.\"" back.txt || { cat back.txt; fail "decoding's spacing"; }
[[ "$("$S" tokenize --vocab cased.txt --words "Théo É")" == "Théo É" ]] || fail "--words with a cased vocabulary"
[[ "$("$S" tokenize --vocab cased.txt "Käthe")" != *"[UNK]"* ]] || fail "Käthe is [UNK] in the cased vocabulary"

# train --cased: the vocabulary learnt cased, carried by the model, honoured from it.
mkdir run && cd run
cp ../mine.txt .
"$S" train mine.txt --cased --steps 20 --eval-every 10 --threads 1 --test-stories 6 > train.out 2> train.err ||
  { cat train.err; fail "train --cased"; }
grep -q "learning a [0-9]*-piece cased vocabulary" train.err || { cat train.err; fail "train --cased did not say it"; }
rm vocab.txt
"$S" vocab -m model.safetensors -o exported.txt 2> /dev/null
[[ "$(sed -n 3p exported.txt)" == "[CASED]" ]] || fail "the model file's vocabulary is not cased"
[[ "$("$S" tokenize -m model.safetensors --decode "Käthe rief: „Schau mal!“")" == "Käthe rief: „Schau mal!“" ]] ||
  fail "tokenize -m does not read the model as cased"
"$S" generate -m model.safetensors -n 20 --seed 1 "Théo" > gen.txt 2> gen.err || { cat gen.err; fail "generate"; }
[[ "$(head -c 5 gen.txt)" == "Théo" ]] || fail "generate lost the prompt's letters: $(cat gen.txt)"
"$S" eval mine.txt -m model.safetensors --json > eval.json 2> eval.err || { cat eval.err; fail "eval"; }
cd ..

# --cased with an uncased vocabulary already there: refused, nothing written.
"$S" vocab mine.txt -o vocab.txt 2> /dev/null
set +e; "$S" train mine.txt --cased --steps 2 --threads 1 -o no.safetensors > /dev/null 2> no.err; rc=$?; set -e
[[ $rc -ne 0 ]] && grep -q -- "--cased: the vocabulary of 'vocab.txt' is not cased" no.err ||
  { cat no.err; fail "train --cased over an uncased vocab.txt: exit $rc"; }
[[ ! -e no.safetensors ]] || fail "a refused run left a model"
set +e; "$S" train mine.txt --cased --from tinystories --steps 2 -o no.safetensors > /dev/null 2> no.err; rc=$?; set -e
[[ $rc -ne 0 ]] && grep -q "is not cased" no.err || { cat no.err; fail "train --cased --from an uncased model: exit $rc"; }

# The default is the chapter's uncased WordPiece, as before.
[[ "$("$S" tokenize --vocab shipped "Théo said, \"Hi.\"" 2> /dev/null)" == 'the ##o said , " hi . "' ]] || fail "the default tokens changed"
echo ok
