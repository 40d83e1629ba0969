#!/usr/bin/env bash
# End to end, patch, attribute and cache on the chapter's plain model: their numbers
# against the PyTorch reference (tests/fixtures/interp.json, written by
# scripts/torch_interp.py; no torch needed here); patching every row gives
# back the clean run exactly; the cache read back with the independent numpy
# reader equals trace's and attend's numbers and eval's loss; --ablate is
# honoured; every --svg is well-formed XML; bad inputs get a clear message.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
S="$STORYLM"
M="$STORYLM_SOURCE_DIR/models/tinystories-plain.safetensors"
W8="$STORYLM_SOURCE_DIR/models/tinystories-window8.safetensors"
FIX="$STORYLM_SOURCE_DIR/tests/fixtures/interp.json"
[[ -f "$M" && -f "$W8" ]] || { echo "e2e_interp: the shipped models are missing: skipped"; exit 77; }
"$PY" -c "import numpy" 2> /dev/null || { echo "e2e_interp: /usr/bin/python3 has no numpy: skipped"; exit 77; }
first_stories 200 > slice.txt
P=(-m "$M" --threads 1)
field() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))$1)" "$FIX"; }

# patch against the reference, with the fixture's tokens and with the defaults
for i in 0 1; do
  clean=$(field "['patch'][$i]['clean']")
  corrupt=$(field "['patch'][$i]['corrupt']")
  "$S" patch "$clean" "$corrupt" "${P[@]}" --answer "$(field "['patch'][$i]['answer']")" \
    --wrong "$(field "['patch'][$i]['wrong']")" --json --svg "patch$i.svg" > "patch$i.json" || fail "patch case $i"
done
"$S" patch "$(field "['patch'][0]['clean']")" "$(field "['patch'][0]['corrupt']")" "${P[@]}" --json > patch_default.json
"$PY" - "$FIX" patch0.json patch1.json patch_default.json <<'EOF' || fail "patch against the PyTorch reference"
import json, sys
fix = json.load(open(sys.argv[1]))["patch"]
worst = 0
for ref, path in zip(fix, sys.argv[2:4]):
    got = json.load(open(path))
    assert got["tokens"] == len(ref["clean_ids"]), (got["tokens"], len(ref["clean_ids"]))
    assert (got["answer_id"], got["wrong_id"]) == (ref["answer_id"], ref["wrong_id"])
    assert abs(got["clean_diff"] - ref["clean_diff"]) < 1e-4 and abs(got["corrupt_diff"] - ref["corrupt_diff"]) < 1e-4
    # patching every row (or every head output and the last row, or the hidden layer) is the clean run, exactly
    assert got["all_rows"] == 1 and got["outputs_and_row"] == 1 and got["hidden"] == 1, got
    pos = got["positions"]
    pairs = [(p["row"], ref["rows"][u]) for u, p in enumerate(pos)]
    pairs += [(p["head_%d" % h], ref["reads"][h][u]) for u, p in enumerate(pos) for h in range(8)]
    pairs += [(hd["query"], ref["query"][hd["head"]]) for hd in got["heads"]]
    pairs += [(hd["output"], ref["output"][hd["head"]]) for hd in got["heads"]]
    for g, r in pairs:
        worst = max(worst, abs(g - r))
print("patch: worst difference from PyTorch %.2e" % worst)
assert worst < 2e-4, worst
d = json.load(open(sys.argv[4]))
assert (d["answer"], d["wrong"]) == (fix[0]["answer"], fix[0]["wrong"]), (d["answer"], d["wrong"])
EOF

# attribute against the reference: gradient x activation, zero removal, surprisal
for i in 0 1; do
  "$S" attribute "$(field "['attribute'][$i]['text']")" "${P[@]}" --pos "$(field "['attribute'][$i]['pos']")" \
    --token "$(field "['attribute'][$i]['token']")" --stories slice.txt --test-stories 10 --json --svg "attr$i.svg" \
    > "attr$i.json" || fail "attribute case $i"
done
"$PY" - "$FIX" attr0.json attr1.json <<'EOF' || fail "attribute against the PyTorch reference"
import json, math, sys
fix = json.load(open(sys.argv[1]))["attribute"]
worst = 0
for ref, path in zip(fix, sys.argv[2:]):
    got = json.load(open(path))
    assert got["token_id"] == ref["token_id"]
    pairs = [(got["logit"], ref["logit"])]
    pairs += [(p["grad_x_act"], g) for p, g in zip(got["parts"], ref["grad_x_act"])]
    pairs += [(p["zero"], g) for p, g in zip(got["parts"], ref["zero"])]
    assert len(got["surprisal"]) == len(ref["surprisal"])
    pairs += [(s["nats"], r) for s, r in zip(got["surprisal"], ref["surprisal"])]
    for g, r in pairs:
        worst = max(worst, abs(g - r) / max(1, abs(r)))
    assert all(p["mean"] is not None and math.isfinite(p["mean"]) for p in got["parts"]), "mean removal missing"
print("attribute: worst difference from PyTorch %.2e" % worst)
assert worst < 1e-4, worst
EOF

# --ablate: a switched-off head brings nothing back and adds nothing
"$S" patch "$(field "['patch'][0]['clean']")" "$(field "['patch'][0]['corrupt']")" "${P[@]}" --ablate 6 \
  --answer max --wrong the --json > patch_off.json
"$S" attribute "$(field "['attribute'][0]['text']")" "${P[@]}" --ablate 6 --json > attr_off.json
"$PY" - patch_off.json attr_off.json <<'EOF' || fail "--ablate in patch and attribute"
import json, sys
p, a = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert p["heads"][6]["output"] == 0 and all(r["head_6"] == 0 for r in p["positions"]), p["heads"][6]
assert p["ablation"]["heads"] == [6] and "heads 6" in p["ablation"]["text"] and p["all_rows"] == 1
assert a["parts"][7]["zero"] == 0 and a["parts"][7]["grad_x_act"] == 0, a["parts"][7]
EOF

# cache: read back with the numpy reader, against trace, attend and eval
TEXT="Mia had a red ball. Mia gave the ball to Max. Max"
"$S" cache "$TEXT" "${P[@]}" -o acts.safetensors > cache.txt || fail "cache a text"
grep -q "attention" cache.txt || fail "cache's table names no tensors"
"$S" trace "$TEXT" "${P[@]}" --json > trace.json
"$S" attend "$TEXT" "${P[@]}" --pos 9 --json > attend.json
"$S" cache --stories slice.txt --test-stories 8 "${P[@]}" --ablate 2 -o stories.safetensors --json > cache.json
"$S" eval slice.txt --test-stories 8 "${P[@]}" --ablate 2 --json > eval.json
"$PY" - "$STORYLM_SOURCE_DIR/scripts" acts.safetensors trace.json attend.json stories.safetensors eval.json "$M" <<'EOF' ||
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from read_safetensors import load
t, meta = load(sys.argv[2])
trace, attend = json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
N = t["tokens"].shape[0]
assert meta["format"] == "storylm-activations" and meta["text"].startswith("Mia had")
assert t["rows"].shape == (N, 32) and t["queries"].shape == (N, 8, 8) and t["values"].shape == (N, 8, 16)
assert t["attention"].shape == (8, N, N) and t["logits"].shape == (N, 2000) and t["hidden"].shape == (N, 128)
assert list(t["story_starts"]) == [0, N]
inputs = {p["part"]: np.array(p["numbers"], dtype=np.float32) for p in trace["inputs"]}
assert np.array_equal(inputs["row"], t["rows"][-1])
for h in range(8):
    assert np.array_equal(inputs["head %d" % h], t["head_outputs"][-1, h]), h
for u in trace["hidden"]:
    assert abs(t["hidden"][-1, u["unit"]] - u["value"]) < 1e-6
l = t["logits"][-1].astype(np.float64)
prob = np.exp(l - l.max()) / np.exp(l - l.max()).sum()
for g in trace["guesses"]:
    assert abs(prob[g["id"]] - g["probability"]) < 1e-6, g
# the rows and keys are the model's own arithmetic
model, _ = load(sys.argv[7])
ids = t["tokens"].astype(int)
assert np.array_equal(t["rows"], model["embedding"][ids])
k = np.einsum("nd,hdk->nhk", t["rows"].astype(np.float64), model["key"].astype(np.float64))
assert np.abs(k - t["keys"]).max() < 1e-4
for key in attend["keys"]:
    w = t["attention"][key["head"], attend["position"], key["distance"]]
    assert abs(w - key["weight"]) < 1e-7, (key, w)
assert abs(t["attention"].sum(axis=2) - 1).max() < 1e-5
s, _ = load(sys.argv[5])
ev = json.load(open(sys.argv[6]))
starts = s["story_starts"].astype(int)
S = len(starts) - 1
assert S == 8 and starts[-1] == s["tokens"].shape[0]
assert np.all(s["head_outputs"][:, 2] == 0), "head 2 switched off"
loss = s["loss"].astype(np.float64).sum() / (starts[-1] - S)
assert abs(loss - ev["loss"]) < 1e-5, (loss, ev["loss"])
assert np.all(s["loss"][starts[1:] - 1] == 0)
print("cache: %d positions of a text and %d of 8 stories agree with trace, attend and eval" % (N, starts[-1]))
EOF
  fail "cache read back"

# every picture is well-formed SVG
for f in patch0.svg patch1.svg attr0.svg attr1.svg; do
  "$PY" -c "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); assert d.documentElement.tagName == 'svg'" "$f" ||
    fail "$f is not well-formed SVG"
done

# bad inputs: a clear message and a non-zero exit
expect_fail() { # PATTERN ARGS...: the command fails and says PATTERN
  local pattern="$1"; shift
  if "$S" "$@" > out.txt 2> err.txt; then fail "storylm $* succeeded"; fi
  grep -q -- "$pattern" err.txt || { cat err.txt; fail "storylm $*: no '$pattern' in the message"; }
}
expect_fail "clean   (6 tokens): \[EOS\] mia had a red ball" patch "Mia had a red ball" "Mia had a big red ball" "${P[@]}"
expect_fail "corrupt (7 tokens)" patch "Mia had a red ball" "Mia had a big red ball" "${P[@]}"
expect_fail "not one token" patch "Mia had a ball" "Tom had a ball" "${P[@]}" --answer zzqqxx
expect_fail "same token" patch "Mia had a ball" "Tom had a ball" "${P[@]}" --answer ball --wrong ball
expect_fail "needs the attention network" patch "Mia had a ball" "Tom had a ball" -m "$W8"
expect_fail "needs the attention network" attribute "Mia had a ball" -m "$W8"
expect_fail "needs the attention network" cache "Mia had a ball" -m "$W8" -o w8.safetensors
expect_fail "outside the text's 5 positions" attribute "Mia had a ball" "${P[@]}" --pos 5
expect_fail "outside the text's 5 positions" attribute "Mia had a ball" "${P[@]}" --pos -6
expect_fail "not one token" attribute "Mia had a ball" "${P[@]}" --token zzqqxx
expect_fail "-o FILE" cache "Mia had a ball" "${P[@]}"
expect_fail "one of the two" cache "Mia had a ball" --stories slice.txt "${P[@]}" -o x.safetensors
expect_fail "ablate-mode" patch "Mia had a ball" "Tom had a ball" "${P[@]}" --ablate 1 --ablate-mode half
"$S" attribute "Mia had a ball" "${P[@]}" --pos -1 --json > /dev/null || fail "attribute --pos -1"
"$S" cache --help | grep "head_outputs  \[N, H, 16\]" >/dev/null || fail "cache --help does not document the tensors"
echo "e2e_interp: ok"
