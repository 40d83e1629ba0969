# Sourced by scripts/results: the sections of the transformer at one budget and
# of Secret 4 answered (invented names in training). The runs are not redone
# here (each takes up to 15 minutes); models/README.md has their commands and
# models/training-*.log their progress lines, from which the curves are drawn.

# pooled_next JSON: the invented names' next piece as top guess, pooled over their later mentions.
pooled_next() {
  python3 -c "
import json, sys
inv = [r for r in json.load(open(sys.argv[1]))['names'] if r['kind'] == 'invented']
n = sum(r['mentions'] for r in inv)
print('%.1f%%' % (100 * sum(r['next_top1'] * r['mentions'] for r in inv) / n))" "$1"
}

induction_section() {
  local IND=models/tinystories-induction.safetensors ONE=models/tinystories-induction1.safetensors J="$TMP/ind"
  local L2=models/tinystories-layers2.safetensors TFI=models/tinystories-induction-transformer.safetensors
  [[ -f $IND && -f $ONE && -f $TFI ]] || { echo "results: no $IND, $ONE or $TFI" >&2; exit 1; }
  mkdir -p "$J"
  "$S" pieces "$TINYSTORIES" -m $IND --threads 1 --json > "$J/two.json"
  "$S" pieces "$TINYSTORIES" -m $ONE --threads 1 --json > "$J/one.json"
  "$S" pieces "$TINYSTORIES" -m $L2 --threads 1 --json > "$J/l2.json"
  local head
  head=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['induction_head'])" "$J/two.json")
  "$S" pieces "$TINYSTORIES" -m $IND --threads 1 --json --ablate 2:4,2:5 > "$J/off.json"
  "$S" pieces "$TINYSTORIES" -m $TFI --threads 1 --json > "$J/tf.json"
  "$S" pieces "$TINYSTORIES" -m $TFI --threads 1 --json --ablate 2:2,2:6 > "$J/tfoff.json"
  INDUCTION_SUMMARY="Trained with invented names (\`--invent-names 0.5\`), two layers finish an invented name at $(pooled_next "$J/two.json") of its later mentions (one layer of the same budget: $(pooled_next "$J/one.json")); switching off layer 2's heads 2:4 and 2:5 takes it to $(pooled_next "$J/off.json"). The transformer trained with \`--invent-names 0.8\` finishes $(pooled_next "$J/tf.json"); without its heads 2:2 and 2:6, $(pooled_next "$J/tfoff.json")."
  say "## Secret 4 answered: invented names in training" "" \
      "\`$IND\` is the two-layer network above trained with half of its training stories' heroes renamed to a name" \
      "invented for each draw (\`--invent-names 0.5\`, 3,000 steps; [docs/induction.md](induction.md) has the command," \
      "the heads and when they form). \`$ONE\` is one layer with the same flags and budget. Their test losses:" \
      "$(json "eval \$TINYSTORIES -m $IND --threads 1" "'%.4f' % j['loss']") (two layers) and" \
      "$(json "eval \$TINYSTORIES -m $ONE --threads 1" "'%.4f' % j['loss']") (one layer). \`storylm pieces\` on the two-layer one:" ""
  run "pieces \$TINYSTORIES -m $IND --threads 1"
  say "The next piece of the invented names as the top guess at their later mentions, pooled over the four names" \
      "(\`storylm pieces ... --json\`):" "" \
      "| model | next piece top guess, pooled |" "|---|---:|" \
      "| one layer, \`--invent-names 0.5\` (\`$ONE\`) | $(pooled_next "$J/one.json") |" \
      "| two layers, no invented names (\`$L2\`, 12,000 steps) | $(pooled_next "$J/l2.json") |" \
      "| two layers, \`--invent-names 0.5\` (\`$IND\`) | $(pooled_next "$J/two.json") |" \
      "| the same, heads 2:4 and 2:5 switched off (\`--ablate 2:4,2:5\`) | $(pooled_next "$J/off.json") |" \
      "| the transformer, \`--invent-names 0.8\`, 8,000 steps (\`$TFI\`) | $(pooled_next "$J/tf.json") |" \
      "| the same, block 2's heads 2:2 and 2:6 switched off (\`--ablate 2:2,2:6\`) | $(pooled_next "$J/tfoff.json") |" "" \
      "Layer 2's head $head puts the most weight on the token to copy; heads 2:4 and 2:5 together are the" \
      "second lookup. When they form, by snapshot (from [docs/induction-score.tsv](induction-score.tsv)):" "" \
      "![the induction head forms](induction-score.svg)" ""
}

# ema_tsv LOG -> "step<TAB>train<TAB>test" per evaluation; test: the saved model's (the moving average's with --ema-save).
ema_tsv() {
  awk '/^step/ { split($2, s, "/"); sum += $5; n++
                 if ($7 == "test") { printf "%d\t%.4f\t%.4f\n", s[1], sum / n, $11 == "ema" ? $12 : $8; sum = 0; n = 0 } }' "$1"
}

transformer_section() {
  local TF=models/tinystories-transformer.safetensors TL=models/training-transformer.log AL=models/training-attention-24000.log
  [[ -f $TF && -f $TL && -f $AL ]] || { echo "results: no $TF, $TL or $AL" >&2; exit 1; }
  ema_tsv $TL > "$TMP/t.tsv"
  ema_tsv $AL > "$TMP/a.tsv"
  python3 - "$TMP/t.tsv" "$TMP/a.tsv" > docs/transformer-curves.tsv <<'PY'
import sys
rows = {}
for k, path in enumerate(sys.argv[1:]):
    for line in open(path):
        step, train, test = line.split()
        rows.setdefault(int(step), ["nan"] * 4)[2 * k:2 * k + 2] = [train, test]
print("step\ttransformer train\ttransformer test\tattention train\tattention test")
for step in sorted(rows):
    print("\t".join([str(step)] + rows[step]))
PY
  "$S" plot docs/transformer-curves.tsv -o docs/transformer-curves.svg --force \
    --title "24,000 steps each, same recipe: the transformer and the chapter's network" --y-label "loss" --y-max 5
  local last_a
  last_a=$(grep -E '^(done|stopped) after|^moving average' $AL | tail -2 | paste -sd ';' | sed 's/;/; /')
  TRANSFORMER_SUMMARY="The transformer (2 blocks, ALiBi, 358,096 parameters), 24,000 steps in 14 minutes on the 2-core machine: test loss $(json "eval \$TINYSTORIES -m $TF --threads 1" "'%.4f' % j['loss']"), against $(tail -1 "$TMP/a.tsv" | cut -f3) for the chapter's network with the same recipe, steps and time bound."
  say "## The transformer at one budget" "" \
      "\`$TF\` is the tiny transformer ([docs/transformer.md](transformer.md)) trained 24,000 steps within 15 minutes" \
      "at two threads on this 2-core machine, otherwise idle; the chapter's attention network was trained with the same" \
      "recipe, steps, threads and time bound (only its progress lines are kept). The exact commands and times are in" \
      "[models/README.md](../models/README.md); their progress lines in \`$TL\` and \`$AL\`." ""
  run "eval \$TINYSTORIES -m $TF --threads 1"
  say "The chapter's network's run ended (its last lines): \`$last_a\`." "" \
      "Train and test loss by step (the test loss is the saved model's, the moving average of the weights):" "" \
      "![the transformer and the chapter's network](transformer-curves.svg)" "" \
      "Drawn with \`storylm plot docs/transformer-curves.tsv -o docs/transformer-curves.svg ...\` from" \
      "[docs/transformer-curves.tsv](transformer-curves.tsv)." ""
}
