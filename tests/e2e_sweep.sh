#!/usr/bin/env bash
# scripts/sweep end to end on a tiny grid (2 settings x 2 seeds x 12 steps, 2
# runs at a time, on 200 stories): one line a run and one a setting, the
# spread over seeds, the name-copy rate, the curves and their picture; the
# budget (steps, or minutes) in sweep.md and sweep.json, a --vocab-size
# setting's own vocabulary, each run's curve per token and per character; bad
# arguments refused with a message; --reuse measures finished runs, not
# training them again.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
SWEEP="$STORYLM_SOURCE_DIR/scripts/sweep"

first_stories 200 > slice.txt
"$SWEEP" slice.txt --storylm "$STORYLM" --setting plain= --setting "wd=--weight-decay 0.5 --dropout 0.1" \
  --seeds 3,4 --steps 12 --eval-every 6 --test-stories 20 --jobs 2 --out out > table.md 2> sweep.log \
  || { cat sweep.log; fail "sweep"; }
[[ $(wc -l < out/runs.tsv) -eq 5 ]] || fail "runs.tsv does not hold 4 runs"
[[ $(wc -l < out/sweep.tsv) -eq 3 ]] || fail "sweep.tsv does not hold 2 settings"
grep -q "^| wd | \`--weight-decay 0.5 --dropout 0.1\` | 2 | [0-9.]* ± [0-9.]* |" table.md || { cat table.md; fail "the markdown table"; }
"$PY" - out <<'PY'
import csv, math, sys
d = sys.argv[1]
rows = {r["setting"]: r for r in csv.DictReader(open(d + "/sweep.tsv"), delimiter="\t")}
runs = list(csv.DictReader(open(d + "/runs.tsv"), delimiter="\t"))
for name in ("plain", "wd"):
    losses = [float(r["loss"]) for r in runs if r["setting"] == name]
    mean = sum(losses) / 2
    sd = math.sqrt(sum((x - mean) ** 2 for x in losses))
    r = rows[name]
    if abs(float(r["loss_mean"]) - mean) > 1e-4 or abs(float(r["loss_sd"]) - sd) > 1e-4:
        sys.exit("%s: mean/sd %s/%s, runs give %.4f/%.4f" % (name, r["loss_mean"], r["loss_sd"], mean, sd))
    if not 0 <= float(r["copy_top1_mean"]) <= 1 or not 0 < float(r["copy_probability_mean"]) < 1:
        sys.exit("%s: name-copy rate %s, probability %s" % (name, r["copy_top1_mean"], r["copy_probability_mean"]))
    if len(set(losses)) != 2:
        sys.exit("%s: the two seeds gave the same loss" % name)
    if r["params"] != "352848" or not float(r["tok_per_s_mean"]) > 0:
        sys.exit("%s: parameters %s, training tok/s %s" % (name, r["params"], r["tok_per_s_mean"]))
curves = open(d + "/curves.tsv").read().split("\n")
if curves[0] != "step\tplain\twd" or not curves[1].startswith("6\t") or not curves[2].startswith("12\t"):
    sys.exit("curves.tsv: %s" % curves[:3])
PY
grep -q "<svg" out/sweep.svg || fail "no sweep.svg"

# --reuse: a grown grid measures the finished runs again without training them.
before=$(stat -c %Y.%s out/plain.seed3.safetensors out/wd.seed4.safetensors)
"$SWEEP" slice.txt --storylm "$STORYLM" --setting plain= --setting "wd=--weight-decay 0.5 --dropout 0.1" \
  --setting "ema=--ema 0.9 --ema-save" --seeds 3,4 --steps 12 --eval-every 6 --test-stories 20 --jobs 2 \
  --out out --reuse > table2.md 2> sweep2.log || { cat sweep2.log; fail "sweep --reuse"; }
[[ "$(stat -c %Y.%s out/plain.seed3.safetensors out/wd.seed4.safetensors)" == "$before" ]] \
  || fail "--reuse trained a finished run again"
[[ $(wc -l < out/runs.tsv) -eq 7 && -f out/ema.seed4.safetensors ]] || fail "--reuse: runs.tsv does not hold 6 runs"
grep -q "^| wd | .* | 2 |" table2.md || { cat table2.md; fail "--reuse lost the finished runs"; }
cmp -s <(grep "^| wd " table.md) <(grep "^| wd " table2.md) || fail "--reuse measured the finished runs differently"
# --measure-only: the finished runs tabulated, a setting never run left out and not trained.
"$SWEEP" slice.txt --storylm "$STORYLM" --setting plain= --setting "lr=--lr 0.01" --seeds 3,4 --steps 12 \
  --eval-every 6 --test-stories 20 --out out --measure-only > table3.md 2> sweep3.log || { cat sweep3.log; fail "sweep --measure-only"; }
[[ ! -e out/lr.seed3.safetensors && $(wc -l < out/runs.tsv) -eq 3 ]] || fail "--measure-only trained, or lost the finished runs"
grep -q "2 runs left out, not finished in OUT: lr/3, lr/4" sweep3.log || { cat sweep3.log; fail "--measure-only did not say what it left out"; }
cmp -s <(grep "^| plain " table.md) <(grep "^| plain " table3.md) || fail "--measure-only measured the finished runs differently"
if "$SWEEP" slice.txt --storylm "$STORYLM" --setting plain= --out nothing-here --measure-only 2> bad.err; then fail "--measure-only on a missing folder was accepted"; fi
grep -q "no folder 'nothing-here' of finished runs" bad.err && [[ ! -e nothing-here ]] || fail "--measure-only on a missing folder: message, or it made the folder"
# --minutes: the budget said in sweep.md and sweep.json; --vocab-size N: a vocabulary of its own, learnt once;
# each run's held-out curve per token and per character.
"$SWEEP" slice.txt --storylm "$STORYLM" --setting "v300=--vocab-size 300" --seeds 3 --steps 12 --eval-every 6 \
  --test-stories 20 --minutes 5 --out out2 > table4.md 2> sweep4.log || { cat sweep4.log; fail "sweep --minutes, --vocab-size"; }
grep -q "^Budget of each run: 5 minutes of wall clock (--minutes), on a schedule of 12 steps" table4.md || { cat table4.md; fail "the budget line"; }
"$PY" - out out2 <<'PY'
import json, sys
steps, minutes = (json.load(open(d + "/sweep.json")) for d in sys.argv[1:3])
if steps["budget"]["kind"] != "steps" or steps["budget"]["steps"] != 12 or minutes["budget"]["kind"] != "minutes":
    sys.exit("sweep.json's budget: %s, %s" % (steps["budget"], minutes["budget"]))
if len(open(sys.argv[2] + "/vocab-300.txt").read().splitlines()) != 300:
    sys.exit("--vocab-size 300 did not learn a vocabulary of 300")
run = minutes["runs"][0]
if run["vocab"] != sys.argv[2] + "/vocab-300.txt" or not 0 < run["loss_per_char"] < run["loss"]:
    sys.exit("the run's vocabulary or loss per character: %s, %s" % (run["vocab"], run["loss_per_char"]))
if [p[0] for p in run["curve"]] != [6, 12] or any(p[3] is None or p[3] <= 0 for p in run["curve"]):
    sys.exit("the run's curve: %s" % run["curve"])
row = minutes["settings"][0]
if abs(row["loss_per_char_mean"] - run["loss_per_char"]) > 1e-9 or row["steps_mean"] != 12:
    sys.exit("the setting's row: %s" % row)
if open(sys.argv[2] + "/v300.seed3.curve.tsv").read().split("\n")[0] != "step\tminutes\ttest_loss\ttest_loss_per_char":
    sys.exit("the run's curve.tsv")
PY
if "$SWEEP" slice.txt --storylm "$STORYLM" --setting "a b=" --out bad 2> bad.err; then fail "a bad setting name was accepted"; fi
grep -q "setting names" bad.err || fail "bad setting name: message"
if "$SWEEP" slice.txt --storylm "$STORYLM" --out bad 2> bad.err; then fail "a sweep without settings was accepted"; fi
grep -q "at least one --setting" bad.err || fail "no settings: message"
echo "sweep: all checks passed"
