#!/usr/bin/env bash
# A writer's own stories, started from a trained model (train --from):
# - on stories the shipped model never saw (models/tinystories-test.txt, the
#   100 it held out), fine-tuning for as many steps as a run from scratch (the
#   same network, so the same time) ends more than 1 nat a token lower on the
#   held-out stories;
# - the model keeps the base's architecture and vocabulary (--from transformer
#   by its short name too), records "from", and says the [UNK] share;
# - flags that would change the architecture or the vocabulary are refused,
#   and so is a name that is no model, listing the short names;
# - a fine-tuned run stopped part way resumes with the command it printed
#   (--from BASE, not --vocab BASE) and ends with the uninterrupted run's
#   model, bit for bit, its --json naming the base as "from".
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
S="$STORYLM"
cp "$STORYLM_SOURCE_DIR/models/tinystories-test.txt" mine.txt
common=(--steps 100 --eval-every 25 --threads 1 --seed 5)
json() { "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

"$S" train mine.txt "${common[@]}" --from tinystories -o ft.safetensors --json > ft.json 2> ft.err ||
  { cat ft.err; fail "train --from tinystories"; }
grep -q "fine-tuning .*tinystories.safetensors (attention, 352848 parameters) at --lr 0.003: its vocabulary of 2000 pieces spells 0 of the stories' [0-9]* tokens as \[UNK\]" ft.err ||
  { cat ft.err; fail "fine-tuning did not say its base, rate and [UNK] share"; }
"$S" train mine.txt "${common[@]}" --vocab shipped -o scratch.safetensors --json > scratch.json 2> scratch.err ||
  { cat scratch.err; fail "train from scratch"; }
ft=$(json ft.json 'j["kept"]["test_loss"]') scratch=$(json scratch.json 'j["kept"]["test_loss"]')
echo "held-out loss after 100 steps: fine-tuned $ft, from scratch $scratch"
"$PY" -c "import sys; sys.exit(0 if $ft < $scratch - 1 else 1)" || fail "fine-tuning ($ft) is not 1 nat below from scratch ($scratch)"
[[ $(json ft.json 'j["from"]["file"], j["model"]["arch"], j["vocab"]["size"]') == "('tinystories.safetensors', 'attention', 2000)" ]] ||
  fail "the summary's base: $(json ft.json 'j["from"], j["model"]')"
[[ $("$S" info --model ft.safetensors --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["from"])') == tinystories.safetensors ]] ||
  fail "the model does not record what it was fine-tuned from"

# --from by a shipped model's short name: the transformer, its architecture kept.
"$S" train mine.txt --steps 2 --eval-every 0 --threads 1 --from transformer -o tf.safetensors --json > tf.json 2> tf.err ||
  { cat tf.err; fail "train --from transformer"; }
[[ $(json tf.json 'j["model"]["arch"]') == transformer ]] || fail "--from transformer trained a $(json tf.json 'j["model"]["arch"]')"

# Refused: flags that would change what is kept, a name that is no model.
for flag in "--vocab vocab.txt" "--arch window8" "--layers 2" "--vocab-size 500"; do
  set +e; "$S" train mine.txt --from tinystories $flag -o no.safetensors > /dev/null 2> no.err; rc=$?; set -e
  [[ $rc -eq 2 ]] && grep -q "keeps the model's architecture and vocabulary: leave ${flag%% *} out" no.err ||
    { cat no.err; fail "--from with $flag: exit $rc"; }
done
set +e; "$S" train mine.txt --from nosuch -o no.safetensors > /dev/null 2> no.err; rc=$?; set -e
[[ $rc -ne 0 ]] && grep -q "no model file 'nosuch', nor a shipped model of that name" no.err && grep -q "tinystories (the default), transformer" no.err ||
  { cat no.err; fail "--from nosuch: exit $rc"; }
[[ ! -e no.safetensors ]] || fail "a refused run left a model"

# Stopped and resumed with the command it printed: the uninterrupted run's model.
"$S" train mine.txt "${common[@]}" --from tinystories -o part.safetensors --stop-at 60 > part.out 2> part.err ||
  { cat part.err; fail "train --from --stop-at"; }
resume=$(sed -n 's/^resume it:  //p' part.out)
[[ -n $resume ]] || { cat part.out; fail "no resume command"; }
[[ $resume == *" --from "*tinystories.safetensors* && $resume != *" --vocab "* ]] || fail "the resume command names the base as a vocabulary: $resume"
eval "$resume --json" > resume.json 2> resume.err || { cat resume.err; fail "the resume command: $resume"; }
[[ $(json resume.json 'j["from"]["file"]') == tinystories.safetensors ]] || fail "the resumed run's --json: from $(json resume.json 'j["from"]')"
[[ "$(tensor_sums ft.safetensors)" == "$(tensor_sums part.safetensors)" ]] || fail "the resumed fine-tuning differs from the uninterrupted one"
echo ok
