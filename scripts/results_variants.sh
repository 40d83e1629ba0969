# Sourced by scripts/results: the section of the variants at one budget.
# The runs themselves are long (33 trainings), so they are not redone here:
# scripts/sweep trained them (the command is printed on the page) and its
# tables are committed in docs/variants-sweep/; this renders them, and says which
# differences are larger than the spread between seeds.

VARIANTS=docs/variants-sweep
commas() { python3 -c "print('{:,}'.format($1))"; }

# variants_table: the sweep's runs.tsv as one markdown table against the default.
variants_table() {
  python3 - "$VARIANTS/runs.tsv" "$VARIANTS/grid.tsv" "$VARIANTS/speed.tsv" <<'PY'
import csv, math, sys
runs = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
speed = {r["setting"]: r for r in csv.DictReader(open(sys.argv[3]), delimiter="\t")}
order = [l.split("\t")[0] for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")]
def stats(name, key):
    xs = [float(r[key]) for r in runs if r["setting"] == name and r[key] != "nan"]
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else float("nan")
    return m, sd, min(xs), max(xs), len(xs)
def beyond(a, b):
    # larger than the spread between seeds: the two settings' ranges over their seeds do not overlap
    return "yes" if a[3] < b[2] or b[3] < a[2] else "no"
base_loss, base_copy = stats("default", "loss"), stats("default", "copy_top1")
print("| setting | flags | parameters | seeds | held-out loss (mean ± sd) | vs default | beyond seeds' spread |"
      " name copy top-1 (mean ± sd) | vs default | beyond seeds' spread | training tok/s | vs default |")
print("|---|---|---:|---:|---:|---:|:---:|---:|---:|:---:|---:|---:|")
for name in order:
    rs = [r for r in runs if r["setting"] == name]
    if not rs:
        continue
    loss, copy = stats(name, "loss"), stats(name, "copy_top1")
    sp = speed[name]
    same = name == "default"
    print("| %s | `%s` | %s | %d | %.4f ± %.4f | %s | %s | %.1f%% ± %.1f | %s | %s | %s | %s |" % (
        name, rs[0]["flags"] or "(none)", "{:,}".format(int(rs[0]["params"])), loss[4], loss[0], loss[1],
        "" if same else "%+.4f" % (loss[0] - base_loss[0]), "" if same else beyond(loss, base_loss),
        100 * copy[0], 100 * copy[1], "" if same else "%+.1f points" % (100 * (copy[0] - base_copy[0])),
        "" if same else beyond(copy, base_copy), "{:,}".format(int(sp["tok_per_s_median"])),
        "" if same else "%.2f×" % float(sp["ratio"])))
short = ["%s (%d of 3 seeds)" % (n, len([r for r in runs if r["setting"] == n])) for n in order
         if len([r for r in runs if r["setting"] == n]) < 3]
if short:
    print("\nNot every run of the grid finished when this table was made: %s. A missing row, or one of fewer seeds, is what finished." % ", ".join(short))
PY
}

variants_section() {
  [[ -f $VARIANTS/runs.tsv && -f $VARIANTS/grid.tsv && -f $VARIANTS/speed.tsv ]] || {
    echo "results: $VARIANTS/runs.tsv, grid.tsv or speed.tsv is missing (the sweep and variant_speed commands of docs/results.md make them)" >&2; exit 1; }
  local steps
  steps=$(awk -F'\t' 'NR == 2 { print $7 }' "$VARIANTS/runs.tsv")
  say "## Variants at one budget" "" \
      "Every \`--pos\` and \`--score\` variant of [docs/variants.md](variants.md) and \`--layers 2\`, each trained" \
      "from scratch on the same stories with the same vocabulary for the same $(commas "$steps") steps of 8 stories (the same" \
      "budget for all: $(commas $((steps * 8))) stories, about $(awk -v s="$steps" 'BEGIN { printf "%.1f", s * 8 / 5527 }') passes over the training stories), 1 thread each," \
      "two at a time, seeds 1, 2 and 3:" ""
  say '```' "$ scripts/sweep tinystories-train.txt --grid $VARIANTS/grid.tsv --seeds 1,2,3 --steps $steps \\" \
      "    --eval-every 500 --jobs 2 --threads 1 --vocab models/vocab.txt --out variants-out" \
      "$ cp variants-out/{runs,sweep}.tsv variants-out/sweep.md variants-out/curves.tsv $VARIANTS/" '```' ""
  say "Held-out loss is \`storylm eval\` on the 100 test stories; name copy is Secret 2's rate (\`storylm swap\`: over" \
      "the swapped-in names, the share of later mentions where the new name's first piece is the top guess)." \
      "A difference is called larger than the seeds' spread when the two settings' ranges over their three seeds do" \
      "not overlap. Training tokens per second are not the trainings' own (they ran two at a time on a shared" \
      "machine) but \`scripts/variant_speed\`'s: \`storylm bench train\` of each setting at 1 thread, 10 steps, the" \
      "median of 3 runs, the settings interleaved round by round ($VARIANTS/speed.tsv):" "" \
      '```' "$ scripts/variant_speed tinystories-train.txt --grid $VARIANTS/grid.tsv --steps 10 --repeats 3 \\" \
      "    --out $VARIANTS/speed.tsv" '```' ""
  variants_table >> "$OUT"
  say ""
  VARIANTS_SUMMARY=$(python3 - "$VARIANTS/runs.tsv" <<'PY'
import csv, sys
runs = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
names = list(dict.fromkeys(r["setting"] for r in runs))
loss = {n: [float(r["loss"]) for r in runs if r["setting"] == n] for n in names}
mean = {n: sum(v) / len(v) for n, v in loss.items()}
apart = [n for n in names if n != "default" and (max(loss[n]) < min(loss["default"]) or min(loss[n]) > max(loss["default"]))]
best, worst = min(mean, key=mean.get), max(mean, key=mean.get)
print("Variants at one budget (3 seeds each): lowest held-out loss %s (%.4f), highest %s (%.4f), default %.4f; %d of %d "
      "differ from the default by more than the seeds' spread." % (best, mean[best], worst, mean[worst], mean["default"],
      len(apart), len(names) - 1))
PY
)
  "$S" plot "$VARIANTS/curves.tsv" -o docs/variants-curves.svg --title "Variants: held-out loss by step (mean of 3 seeds)" \
    --y-label "nats/token" > /dev/null
  say "![variants' held-out loss by step](variants-curves.svg)" ""
}

# Secret 4 on the shipped two-layer model, against the one-layer model of the same recipe
# (the first tuned recipe, models/tinystories-wd-ema.safetensors; the default model $NEW is of the final one).
layers_section() {
  local L2=models/tinystories-layers2.safetensors J="$TMP/l2"
  [[ -f $L2 ]] || { echo "results: no two-layer model $L2" >&2; exit 1; }
  mkdir -p "$J"
  local ONE=models/tinystories-wd-ema.safetensors
  "$S" pieces "$TINYSTORIES" -m $ONE --threads 1 --json > "$J/one.json"
  "$S" pieces "$TINYSTORIES" -m $L2 --threads 1 --json > "$J/two.json"
  local head
  head=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['induction_head'])" "$J/two.json")
  "$S" pieces "$TINYSTORIES" -m $L2 --threads 1 --json --ablate "$head" > "$J/two_off.json"
  LAYERS_SUMMARY=$(python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))
print('Two layers (same recipe): head %s of layer 2 reads the token after the earlier first piece (%.1f%% of its weight, %.0f times even); the first lookup of an invented name still fails.' % (t['induction_head'], 100 * t['induction_weight'], t['induction_weight'] / t['even_weight']))" "$J/two.json")
  say "## Secret 4 on two layers" "" \
      "The chapter says one layer cannot finish an invented name made of pieces, because that takes two lookups:" \
      "find the earlier first piece, then read the token after it. \`$L2\` has a second layer of 8 heads that" \
      "reads the row beside layer 1's heads (\`--layers 2\`, [models/README.md](../models/README.md) has its exact" \
      "command: the first tuned recipe, weight decay and the weights' moving average at the chapter's learning" \
      "rate, plus \`--layers 2\`). Its test loss is" \
      "$(json "eval \$TINYSTORIES -m $L2 --threads 1" "'%.4f' % j['loss']") against" \
      "$(json "eval \$TINYSTORIES -m $ONE --threads 1" "'%.4f' % j['loss']") for one layer of the same recipe, budget and seed" \
      "(\`$ONE\`); the default model, one layer with the final tuned recipe (a higher learning rate), has" \
      "$(json "eval \$TINYSTORIES -m $NEW --threads 1" "'%.4f' % j['loss']"). \`storylm pieces\` on it:" ""
  run "pieces \$TINYSTORIES -m $L2 --threads 1"
  python3 - "$J/one.json" "$J/two.json" "$J/two_off.json" "$head" >> "$OUT" <<'PY'
import json, sys
one, two, off = (json.load(open(p)) for p in sys.argv[1:4])
head = sys.argv[4]
by = lambda j: {n["name"]: n for n in j["names"]}
o, t, f = by(one), by(two), by(off)
heads = {h["head"]: h for h in two["heads"]}
even = two["even_weight"]
prev = sorted((h for h in two["heads"] if h["layer"] == 1), key=lambda h: -h["previous_token"])
print("The second piece of each invented name after its first piece, at the later mentions (probability, and how often")
print("it is the top guess), on the one-layer model of the same recipe, on the two-layer model, and on the two-layer model with")
print("its strongest layer-2 reader of the token to copy, head %s, switched off (`--ablate %s`):\n" % (head, head))
print("| name | pieces | one layer | two layers | two layers, %s off |" % head)
print("|---|---|---:|---:|---:|")
cell = lambda n: "%.4f (%.1f%%)" % (n["next_probability"], 100 * n["next_top1"])
for name in t:
    if t[name]["kind"] != "invented":
        continue
    print("| %s | %s | %s | %s | %s |" % (name, t[name]["pieces"], cell(o[name]), cell(t[name]), cell(f[name])))
print()
inv = [n for n in t if t[n]["kind"] == "invented"]
better = [n for n in inv if t[n]["next_top1"] > o[n]["next_top1"]]
first = max(t[n]["first_top1"] for n in inv)
h = heads[head]
print("- **The two steps are there, weakly.** Layer 1's head %s puts %.0f%% of its weight, at the token to copy, on the"
      % (prev[0]["head"], 100 * prev[0]["previous_token"]))
print("  token before it (the earlier first piece): the first step, a previous-token head (%s come next with %s)."
      % (" and ".join(p["head"] for p in prev[1:3]), " and ".join("%.0f%%" % (100 * p["previous_token"]) for p in prev[1:3])))
print("  At the later first piece, layer 2's head %s puts %.1f%% of its weight on the token to copy, %.0f times what a"
      % (head, 100 * h["induction"], h["induction"] / even))
print("  head reading evenly would (%.1f%%): the second step, an induction head, %s." % (100 * even,
      "though a weak one, with most of its weight elsewhere" if h["induction"] < 0.5 else "with most of its weight there"))
if better:
    print("- **It finishes some invented names the one-layer model cannot:** the second piece is the top guess at %s."
          % ", ".join("%.1f%% of %s's later mentions (one layer: %.1f%%)" % (100 * t[n]["next_top1"], n, 100 * o[n]["next_top1"])
                      for n in better))
    print("  It never is for %s." % (", ".join(n for n in inv if n not in better) or "none"))
    drops = [n for n in better if f[n]["next_probability"] < t[n]["next_probability"] / 2]
    kept = [n for n in better if n not in drops]
    if drops:
        print("  Switching head %s off takes it back down for %s: the head does the second lookup there." % (head, ", ".join(
            "%s (from %.4f to %.4f)" % (n, t[n]["next_probability"], f[n]["next_probability"]) for n in drops)))
    if kept:
        print("  For %s switching it off changes little: the second piece there is guessed from the first, as the pieces of"
              % ", ".join(kept))
        print("  common words are, not looked up.")
else:
    print("- **It does not finish the invented names either:** the second piece is the top guess for none of them.")
print("- **The first lookup still fails:** the invented first piece is the top guess at %.1f%% of the later mentions at best,"
      % (100 * first))
print("  as for the one-layer network (Secret 2): trained on 5,527 stories, neither network copies a name it has not")
print("  seen often, so at a later mention it does not bring back the first piece, and the two-step lookup is measured")
print("  here only after the first piece is given. Names swapped for invented ones in training (`--swap-names`) are")
print("  the stories that would teach it; the network was not trained with them.")
print()
PY
}
