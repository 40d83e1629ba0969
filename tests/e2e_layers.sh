#!/usr/bin/env bash
# End to end, issue 12's --layers N: a two-layer network trains on a slice of
# data/stories.txt, deterministically; info shows its layers, tensors and
# parameter count (412,240); eval, --ablate and generation run on it; a resume keeps the
# layers and refuses a contradicting --layers; window8 and --layers 5 are
# refused with a message.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 300 > slice.txt
common=(--vocab vocab.txt --threads 2 --seed 5 --test-stories 20)
"$STORYLM" train slice.txt "${common[@]}" --steps 30 --layers 2 --out l2.safetensors 2> l2.log || { cat l2.log; fail "train --layers 2"; }
"$STORYLM" train slice.txt "${common[@]}" --steps 30 --layers 2 --out again.safetensors 2> again.log || { cat again.log; fail "train --layers 2 again"; }
[[ "$(tensor_sums l2.safetensors)" == "$(tensor_sums again.safetensors)" ]] || fail "two runs of --layers 2 differ"

"$STORYLM" info --model l2.safetensors > info.txt
grep -q "^layers        2" info.txt || { cat info.txt; fail "info does not show the layers"; }
grep -q "layer2.query  *\[8, 160, 8\]" info.txt || { cat info.txt; fail "info does not list layer2.query [8, 160, 8]"; }
grep -q "hidden.weight  *\[128, 288\]" info.txt || { cat info.txt; fail "hidden.weight is not [128, 288]"; }
grep -q "total  *412,240 parameters" info.txt || { cat info.txt; fail "--layers 2 does not have 412,240 parameters"; }
got=$("$STORYLM" info --model l2.safetensors --json | "$PY" -c 'import json,sys; j=json.load(sys.stdin); print(j["model"]["layers"], j["config"]["layers"], j["model"]["parameters"])')
[[ "$got" == "2 2 412240" ]] || fail "info --json says '$got', not '2 2 412240'"
"$STORYLM" train slice.txt "${common[@]}" --steps 5 --out l1.safetensors 2> l1.log || { cat l1.log; fail "train one layer"; }
one=$("$STORYLM" info --model l1.safetensors --json | "$PY" -c 'import json,sys; j=json.load(sys.stdin); print("layers" in j["model"], j["config"]["layers"], j["model"]["parameters"])')
[[ "$one" == "False 1 352848" ]] || fail "a one-layer model's JSON: '$one'"
if "$STORYLM" info --model l1.safetensors | grep "^layers" >/dev/null; then fail "info shows layers for a one-layer model"; fi

loss=$("$STORYLM" eval slice.txt --model l2.safetensors --test-stories 20 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
ablated=$("$STORYLM" eval slice.txt --model l2.safetensors --test-stories 20 --ablate 0,3 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
"$PY" -c "import sys; sys.exit(0 if 0 < $loss < 7.5 and 0 < $ablated < 9 and $ablated != $loss else 1)" || fail "test loss $loss (ablated $ablated)"
echo "--layers 2: test loss after 30 steps $loss, layer 1's heads 0 and 3 off $ablated"

a=$("$STORYLM" generate --model l2.safetensors -t 0 -n 30 "Lily found a")
b=$("$STORYLM" generate --model l2.safetensors -t 0 -n 30 "Lily found a")
[[ -n "$a" && "$a" == "$b" ]] || fail "greedy generation of a two-layer model is not deterministic"

for v in t5/additive rope/general absolute/scaled-dot; do
  pos=${v%/*} score=${v#*/}
  "$STORYLM" train slice.txt "${common[@]}" --steps 5 --layers 2 --position-scheme "$pos" --score "$score" --out "v-$pos.safetensors" 2> v.log \
    || { cat v.log; fail "train --layers 2 --position-scheme $pos --score $score"; }
  "$STORYLM" info --model "v-$pos.safetensors" | grep "^layers        2" >/dev/null || fail "$v: info does not show the layers"
done

# Heads named by layer: --ablate L:H (a plain H is layer 1's), ablate's rows, pieces' two lookups.
l2h3=$("$STORYLM" eval slice.txt --model l2.safetensors --test-stories 20 --ablate 2:3 --json | "$PY" -c 'import json,sys; j=json.load(sys.stdin); print(j["loss"], j["ablation"]["heads"], j["ablation"]["names"])')
[[ "$l2h3" == *" [11] 2:3" && "$l2h3" != "$loss "* ]] || fail "--ablate 2:3: '$l2h3'"
plain=$("$STORYLM" eval slice.txt --model l2.safetensors --test-stories 20 --ablate 3 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
first=$("$STORYLM" eval slice.txt --model l2.safetensors --test-stories 20 --ablate 1:3 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
[[ "$plain" == "$first" ]] || fail "--ablate 3 ($plain) is not layer 1's head 3 ($first)"
if "$STORYLM" eval slice.txt --model l2.safetensors --test-stories 20 --ablate 3:1 2> bad.txt; then fail "--ablate 3:1 on two layers"; fi
grep -q "layer 3 is out of range" bad.txt || { cat bad.txt; fail "--ablate 3:1's message"; }
"$STORYLM" ablate slice.txt --model l2.safetensors --test-stories 20 --json > ablate.json || fail "ablate on two layers"
"$PY" -c 'import json,sys; rows=[r["heads"] for r in json.load(open("ablate.json"))["ablations"]]; sys.exit(0 if rows[1:] == ["%d:%d" % (l, h) for l in (1, 2) for h in range(8)] else 1)' \
  || fail "ablate's rows are not the heads 1:0 .. 2:7"
"$STORYLM" pieces slice.txt --model l2.safetensors --test-stories 20 --json > pieces.json || fail "pieces on two layers"
"$PY" - <<'PY' || fail "pieces' heads on two layers"
import json
j = json.load(open("pieces.json"))
heads = j["heads"]
assert [h["head"] for h in heads] == ["%d:%d" % (l, h) for l in (1, 2) for h in range(8)], heads
assert all(0 < h["previous_token"] < 1 and 0 <= h["induction"] < 1 for h in heads)
best = max((h for h in heads if h["layer"] == 2), key=lambda h: h["induction"])
assert j["induction_head"] == best["head"] and abs(j["induction_weight"] - best["induction"]) < 1e-9
assert j["heads_mentions"] > 0 and 0 < j["even_weight"] < 1
PY
"$STORYLM" pieces slice.txt --model l1.safetensors --test-stories 20 --json | "$PY" -c 'import json,sys; sys.exit(0 if "heads" not in json.load(sys.stdin) else 1)' \
  || fail "pieces on one layer grew a heads table"
"$STORYLM" distances --model l2.safetensors --layer 2 --up-to 3 > /dev/null || fail "distances --layer 2"
if "$STORYLM" distances --model l2.safetensors --layer 3 2> bad.txt; then fail "distances --layer 3 on two layers"; fi
"$STORYLM" heads slice.txt --model l2.safetensors --test-stories 20 --json --svg heads.svg > heads.json || fail "heads on two layers"
"$PY" -c 'import json,sys; j=json.load(open("heads.json")); sys.exit(0 if [r["head"] for r in j["heads"]] == ["%d:%d" % (l, h) for l in (1, 2) for h in range(8)] else 1)' \
  || fail "heads' rows are not the heads 1:0 .. 2:7"
grep -q "head 2:7" heads.svg || fail "heads' picture has no panel for head 2:7"
"$STORYLM" detect slice.txt --model l2.safetensors --test-stories 20 --random 3 --json > detect.json || fail "detect on two layers"
"$PY" -c 'import json,sys; j=json.load(open("detect.json")); sys.exit(0 if [r["head"] for r in j["heads"]] == ["%d:%d" % (l, h) for l in (1, 2) for h in range(8)] else 1)' \
  || fail "detect's rows are not the heads 1:0 .. 2:7"
# attend and trace --layer: e2e_tfprobes; patch, attribute, cache, circuits and stats: e2e_layers_probes

# A resume keeps the layers; a contradicting --layers, window8 with layers and --layers 5 are refused.
"$STORYLM" train slice.txt "${common[@]}" --steps 35 --resume --out l2.safetensors 2> resume.log || { cat resume.log; fail "resume a two-layer model"; }
"$STORYLM" info --model l2.safetensors | grep "^layers        2" >/dev/null || fail "the resumed model lost its layers"
if "$STORYLM" train slice.txt "${common[@]}" --steps 40 --resume --layers 3 --out l2.safetensors 2> refused.txt; then
  fail "resuming a two-layer model with --layers 3 was not refused"
fi
grep -q "cannot resume.*with --layers 3: it is a model of 2 layers" refused.txt || { cat refused.txt; fail "resume's message"; }
if "$STORYLM" train slice.txt "${common[@]}" --steps 5 --arch window8 --layers 2 --out w8.safetensors 2> w8.txt; then
  fail "--arch window8 --layers 2 was not refused"
fi
grep -q "for the attention network" w8.txt || { cat w8.txt; fail "window8's message"; }
if "$STORYLM" train slice.txt "${common[@]}" --steps 5 --layers 5 --out l5.safetensors 2> l5.txt; then
  fail "--layers 5 was not refused"
fi
grep -q -- "--layers" l5.txt || { cat l5.txt; fail "--layers 5's message"; }
echo "--layers trains, evaluates, resumes and refuses what it cannot do"
