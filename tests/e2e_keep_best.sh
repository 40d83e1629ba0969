#!/usr/bin/env bash
# A writer's small corpus never ends on its worst model:
# - the steps left out fit the corpus (60 stories: 30 passes, 250 steps, not 3,000);
# - --out holds the model of the lowest test loss evaluated, and the summary
#   (stderr and --json) says which step it is; the run stops by itself when
#   --patience evaluations found no lower test loss, and says how not to;
# - a run stopped part way and resumed keeps the same best model and the
#   same patience, bit for bit as the uninterrupted run;
# - --keep-last keeps the last model, as runs did before;
# - vocab learns a 60-story corpus's vocabulary as train does, and stories
#   counts its tokens with ./vocab.txt, as train would;
# - a Ctrl-C at once saves nothing, so the same command then trains.
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
S="$STORYLM"

# 60 stories of the project's corpus: learnt by heart within a few hundred steps.
first_stories 60 > s60.txt
# vocab takes the small corpora train takes: as many pieces as the words give, said, the vocabulary train learns.
"$S" vocab s60.txt -o vocab.txt 2> vocab.err || { cat vocab.err; fail "vocab of 60 stories"; }
grep -q "the words of s60.txt give only [0-9]* pieces, so the vocabulary has" vocab.err || { cat vocab.err; fail "vocab did not say its size"; }
"$S" train s60.txt --stop-at 1 -o learn.safetensors --vocab learnt.txt > /dev/null 2>&1 || fail "train learning a vocabulary"
cmp -s vocab.txt learnt.txt || fail "vocab and train learn different vocabularies from 60 stories"
common=(--vocab vocab.txt --threads 1 --seed 3 --lr 0.01)

# The steps fit the corpus: 54 training stories, 30 passes of 8 a step, rounded up to 50.
"$S" train s60.txt "${common[@]}" --stop-at 1 -o fit.safetensors > /dev/null 2> fit.err || { cat fit.err; fail "train --stop-at 1"; }
grep -q "54 training stories: 250 steps (30 passes over them), evaluated every 25" fit.err ||
  { cat fit.err; fail "the default steps do not fit 60 stories"; }

# stories counts with the vocabulary train uses here, ./vocab.txt.
"$S" stories s60.txt --json > st.json 2> st.err || { cat st.err; fail "stories s60.txt"; }
grep -q "counting with the vocabulary in vocab.txt, as train would" st.err || { cat st.err; fail "stories did not say its vocabulary"; }
tokens=$("$PY" -c 'import json; print(json.load(open("st.json"))["tokens"])')
grep -q "s60.txt: 60 stories, $tokens tokens" fit.err || { grep tokens fit.err; fail "stories counts $tokens tokens, train another number"; }

# Overfitting: the best model is kept and the run stops by itself.
"$S" train s60.txt "${common[@]}" --steps 600 --eval-every 20 --patience 3 -o m.safetensors --json > m.json 2> m.err ||
  { cat m.err; fail "train 600 steps"; }
"$PY" - m.json m.err <<'PY' || fail "the kept model is not the best evaluated"
import json, re, sys
j = json.load(open(sys.argv[1]))
err = open(sys.argv[2]).read().replace("\r", "\n")
tests = [(int(a), float(b)) for a, b in re.findall(r"step +(\d+)/\d+ \| loss [\d.]+ \| test ([\d.]+)", err)]
best = min(tests, key=lambda t: t[1])
kept, stop = j["kept"], j["early_stop"]
assert stop == {"stopped": True, "patience": 3, "off": "--patience 0"}, stop
assert kept["file"] == "m.safetensors" and kept["step"] == best[0] and abs(kept["test_loss"] - best[1]) < 1e-4, (kept, best)
assert j["step"] == best[0] + 3 * 20 < 600, (j["step"], best)
assert "stopped early: the last 3 evaluations found no test loss below step %d's; --patience 0" % best[0] in err, err
assert "kept: step %d, test loss %.4f, the lowest evaluated, in m.safetensors" % best in err, err
PY
kept=$("$PY" -c 'import json; print(json.load(open("m.json"))["kept"]["step"])')
meta=$("$S" info --model m.safetensors --json | "$PY" -c 'import json,sys; m=json.load(sys.stdin)["metadata"]; print(m["step"], m["best_step"], m["evals_since_best"])')
[[ $meta == "$kept $kept 0" ]] || fail "m.safetensors holds step/best/patience '$meta', not the kept step $kept"
loss=$("$S" eval s60.txt --model m.safetensors --json 2> /dev/null | "$PY" -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["loss"])')
want=$("$PY" -c 'import json; print("%.4f" % json.load(open("m.json"))["kept"]["test_loss"])')
[[ $loss == "$want" ]] || fail "eval of the kept model gives $loss, the run said $want"

# Stopped at a step after the best and resumed: the same kept model and the same early stop.
"$S" train s60.txt "${common[@]}" --steps 600 --eval-every 20 --patience 3 -o part.safetensors --stop-at $((kept + 40)) \
  > /dev/null 2> part.err || { cat part.err; fail "train --stop-at"; }
"$S" train s60.txt "${common[@]}" --steps 600 --eval-every 20 --patience 3 -o part.safetensors --resume --json \
  > part.json 2> resume.err || { cat resume.err; fail "train --resume"; }
grep -q "resuming from step $kept of 600" resume.err || { cat resume.err; fail "the resume did not start from the kept step $kept"; }
[[ "$(tensor_sums m.safetensors)" == "$(tensor_sums part.safetensors)" ]] || fail "the resumed run kept another model"
"$PY" -c 'import json; a, b = (json.load(open(f)) for f in ("m.json", "part.json")); assert (a["step"], a["kept"]["step"], a["kept"]["test_loss"]) == (b["step"], b["kept"]["step"], b["kept"]["test_loss"]), (a, b)' ||
  fail "the resumed run stopped elsewhere"

# --keep-last: the last model, as before; --patience 0 trains every step.
"$S" train s60.txt "${common[@]}" --steps 200 --eval-every 20 --patience 0 --keep-last -o last.safetensors --json \
  > last.json 2> last.err || { cat last.err; fail "train --keep-last"; }
"$PY" -c 'import json; j = json.load(open("last.json")); assert j["step"] == 200 and j["kept"]["step"] == 200 and not j["early_stop"]["stopped"], j' ||
  fail "--keep-last --patience 0 did not keep step 200"
# Ctrl-C at once: nothing saved, and the same command then trains (no 1-step model blocks it).
mkdir -p fresh && cd fresh && cp ../s60.txt ../vocab.txt .
"$S" train s60.txt --threads 1 --eval-every 1000 > int.out 2> int.err &
pid=$!
for _ in $(seq 600); do grep -q "held out for testing" int.err 2> /dev/null && break; sleep 0.05; done
kill -INT $pid
rc=0; wait $pid || rc=$?
[[ $rc -eq 130 ]] && grep -q "in its first seconds: nothing saved, so the same command starts afresh" int.err ||
  { cat int.err; fail "Ctrl-C at once: exit $rc"; }
[[ ! -e model.safetensors && ! -e model.adam.safetensors ]] || fail "Ctrl-C at once left a model"
"$S" train s60.txt --threads 1 --steps 2 > again.out 2> again.err || { cat again.err; fail "the same command after Ctrl-C"; }
echo "ok"
