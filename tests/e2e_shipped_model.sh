#!/usr/bin/env bash
# End to end, the shipped model: from a directory without model.safetensors,
# generate and eval find models/tinystories.safetensors (beside the build, or
# in the source tree of a build folder outside it) and say so on stderr,
# giving the same text as with --model; a ./model.safetensors, when there is
# one, wins. And eval of the shipped model
# on the held-out stories of the TinyStories file it was trained on gives the
# test loss, perplexity and accuracy its model card (models/README.md) records
# (skipped, saying so, when that file is not on this machine).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
S="$STORYLM"
SHIPPED="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
CARD="$STORYLM_SOURCE_DIR/models/README.md"
[[ -f "$SHIPPED" && -f "$CARD" ]] || fail "no shipped model $SHIPPED or no model card $CARD"

# No --model, no ./model.safetensors: the shipped model, named on stderr.
"$S" generate "Lily found a" -t 0 -n 30 > gen.txt 2> gen.err || { cat gen.err; fail "generate without --model"; }
grep -q "shipped model .*models/tinystories.safetensors" gen.err || { cat gen.err; fail "generate did not say it uses the shipped model"; }
[[ "$(head -c 12 gen.txt)" == "Lily found a" ]] || fail "the output does not start with the prompt: $(head -c 80 gen.txt)"
(( $(wc -w < gen.txt) >= 8 )) || fail "too little text generated: $(cat gen.txt)"
"$S" generate "Lily found a" -t 0 -n 30 --model "$SHIPPED" > gen_explicit.txt 2> /dev/null
cmp -s gen.txt gen_explicit.txt || fail "without --model the text differs from --model $SHIPPED"
"$S" info --model "$SHIPPED" > info.txt || fail "info of the shipped model"
grep -q "352,848 parameters" info.txt || fail "info of the shipped model: $(head -5 info.txt)"

# A model trained here wins over the shipped one.
cp "$STORYLM_SOURCE_DIR/models/tinystories-window8.safetensors" model.safetensors
"$S" generate "Lily found a" -t 0 -n 5 > /dev/null 2> local.err
grep -q "using model.safetensors" local.err || { cat local.err; fail "./model.safetensors was not used"; }
rm model.safetensors

# The model card's test numbers, measured again.
DATA="${TINYSTORIES:-$STORYLM_SOURCE_DIR/../shared/data/tinystories-train.txt}"
if [[ ! -f "$DATA" ]]; then
  echo "SKIPPED the eval check: no TinyStories training file (set TINYSTORIES=FILE)"
  exit 0
fi
card_number() { # the number in the card's table row "| NAME | NUMBER ..."
  sed -n "s/^| $1 | \([0-9.]*\).*/\1/p" "$CARD" | head -1
}
want_loss=$(card_number "test loss")
want_acc=$(card_number "test accuracy")
[[ -n "$want_loss" && -n "$want_acc" ]] || fail "the model card has no '| test loss |' or '| test accuracy |' row"
"$S" eval "$DATA" --threads 2 --json > eval.json 2> eval.err || { cat eval.err; fail "eval without --model"; }
grep -q "shipped model" eval.err || fail "eval did not say it uses the shipped model"
python3 - eval.json "$want_loss" "$want_acc" <<'EOF' || fail "eval differs from the model card"
import json, sys
j = json.load(open(sys.argv[1]))
loss, acc = float(sys.argv[2]), float(sys.argv[3])
print(f"eval: loss {j['loss']:.4f} (card {loss}), accuracy {100 * j['accuracy']:.2f}% (card {acc}%), "
      f"{j['stories_evaluated']} stories, {j['positions']} positions")
assert j["stories_evaluated"] == 100 and j["split"] == "test", j
assert abs(j["loss"] - loss) < 0.002, (j["loss"], loss)
assert abs(100 * j["accuracy"] - acc) < 0.05, (j["accuracy"], acc)
EOF
echo "shipped model: OK"
