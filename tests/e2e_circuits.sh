#!/usr/bin/env bash
# End to end, circuits, detect and icl on the plain and window8 models and a slice of
# data/stories.txt: numpy recomputes the circuits' matrix products from the
# model file (read by scripts/read_safetensors.py) and the top pairs and
# copying scores from them; detect and icl give their documented fields,
# honour --ablate where it means something (one layer: switching a head off
# changes the losses, never where the heads look), draw well-formed SVG; bad
# inputs (window8, a head out of range, stories too short) exit non-zero with
# a message.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
S="$STORYLM"
M="$STORYLM_SOURCE_DIR/models"
[[ -f "$M/tinystories-plain.safetensors" && -f "$M/tinystories-window8.safetensors" ]] || { echo "no shipped models in $M"; exit 77; }
"$PY" -c 'import numpy' 2> /dev/null || { echo "numpy is missing (apt-get install python3-numpy)"; exit 77; }

first_stories 300 > slice.txt
C=(--stories slice.txt --test-stories 20 --threads 2)

# circuits: every product recomputed by numpy from the file.
"$S" circuits -m "$M/tinystories-plain.safetensors" "${C[@]}" --top 6 --json --svg circuits.svg > circuits.json
"$S" circuits -m "$M/tinystories-plain.safetensors" "${C[@]}" --top 3 --head 5 --token-list lily,tom,##s --json > circuits5.json
"$S" circuits -m "$M/tinystories-plain.safetensors" "${C[@]}" --top 2 > circuits.txt
grep -q "looks for itself" circuits.txt || fail "circuits' table has no 'looks for itself' column"
"$PY" - "$STORYLM_SOURCE_DIR/scripts" "$M/tinystories-plain.safetensors" circuits.json circuits5.json <<'EOF' || fail "circuits' numbers against numpy"
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from read_safetensors import load
T, _ = load(sys.argv[2])
E = T["embedding"].astype(np.float64)
W1, b1 = T["hidden.weight"].astype(np.float64), T["hidden.bias"].astype(np.float64)
W2 = T["output.weight"].astype(np.float64)
V, D = E.shape
H, _, KD = T["query"].shape
VD = T["value"].shape[2]

def close(a, b, what):
    assert abs(a - b) <= 1e-3 + 1e-4 * abs(b), (what, a, b)

def self_scores(M):
    d = np.diag(M)
    others = (M >= d[:, None]).sum(axis=1) - 1  # ties count against
    return (others == 0).mean(), (others < 10).mean(), (d > M.mean(axis=1)).mean()

for path in sys.argv[3:]:
    j = json.load(open(path))
    for key in ("command", "model", "stories", "positions", "heads", "qk", "ov", "mean_input"):
        assert key in j, "circuits --json lacks " + key
    heads = sorted({row["head"] for row in j["heads"]})
    assert heads == ([5] if "circuits5" in path else list(range(H))), heads
    z = np.array(j["mean_input"][0]["z"], dtype=np.float64)
    assert z.shape == (D + H * VD,)
    gain = 1 - np.tanh(W1 @ z + b1) ** 2
    for h in heads:
        qk = (E @ T["query"][h]) @ (E @ T["key"][h]).T / np.sqrt(KD)
        slot = W1[:, D + h * VD: D + (h + 1) * VD]
        ov = (E @ T["value"][h]) @ (W2 @ (gain[:, None] * slot)).T
        for name, M, key in (("qk", qk, "value"), ("ov", ov, "centred")):
            C = M - M.mean(axis=1, keepdims=True)
            rows = [r for r in j[name] if r["head"] == h]
            a, b = ("query_id", "key_id") if name == "qk" else ("reads_id", "raises_id")
            for r in rows:  # each listed pair is the circuit's entry
                close(r["score" if name == "qk" else "change"], M[r[a], r[b]], (name, h, r))
                close(r["vs_mean"], C[r[a], r[b]], (name, h, r))
            want = np.sort((M if key == "value" else C).ravel())[::-1][:len(rows)]
            got = [r["score"] if name == "qk" else r["vs_mean"] for r in rows]
            for g, w in zip(got, want):  # and they are the largest ones, in order
                close(g, w, (name, h, "top"))
        for r in (x for x in j.get("reads_top", []) if x["head"] == h):  # --token-list: rows of the OV circuit
            close(r["change"], ov[r["reads_id"], r["raises_id"]], ("reads", r))
            want = np.sort(ov[r["reads_id"]])[::-1][r["rank"] - 1]
            close(r["change"], want, ("reads rank", r))
        row = next(r for r in j["heads"] if r["head"] == h and r["tokens"] == "all")
        for prefix, M in (("qk", qk), ("copy", ov)):
            t1, t10, above = self_scores(M)
            for key, want in (("top1", t1), ("top10", t10), ("above_mean", above)):
                assert abs(row[prefix + "_" + key] - want) <= 2.5 / V, (h, prefix, key, row[prefix + "_" + key], want)
assert len(json.load(open(sys.argv[4]))["reads_top"]) == 15
print("circuits: numpy agrees")
EOF

# detect: fields, several models, curves; --ablate changes the losses, not the weights.
SNAP=("$M"/snapshots/tinystories-plain.step*.safetensors)
D=(slice.txt --test-stories 20 --threads 2 --random 10 --length 40)
"$S" detect "${D[@]}" -m "${SNAP[0]}" -m "$M/tinystories-plain.safetensors" --json --svg detect.svg > detect.json
"$S" detect "${D[@]}" -m "$M/tinystories-plain.safetensors" --svg detect1.svg > detect.txt
"$S" detect "${D[@]}" -m "$M/tinystories-plain.safetensors" --ablate 4 --json > detect_off.json
"$PY" - detect.json detect_off.json <<'EOF' || fail "detect's output"
import json, sys
j, off = (json.load(open(p)) for p in sys.argv[1:])
for key in ("heads", "models", "random_sequences", "random_length", "seed"):
    assert key in j, "detect --json lacks " + key
assert len(j["heads"]) == 16 and len(j["models"]) == 2
for r in j["heads"]:
    for k in ("previous", "duplicate", "induction", "random_previous", "random_duplicate", "random_induction"):
        assert 0 <= r[k] <= 1, (k, r)
for m in j["models"]:
    assert m["loss_first"] > 0 and m["loss_second"] > 0
    assert abs(m["induction_loss_drop"] - (m["loss_first"] - m["loss_second"])) < 1e-9
assert j["models"][0]["step"] < j["models"][1]["step"], [m["step"] for m in j["models"]]
final = [r for r in j["heads"] if r["step"] == j["models"][1]["step"]]
best = max(final, key=lambda r: r["previous"])
assert best["previous"] > 0.15, best  # the plain model has previous-token heads (docs/results.md)
assert off["ablation"]["heads"] == [4] and off["ablation"]["text"].startswith("heads 4"), off["ablation"]
for a, b in zip(final, off["heads"]):
    for k in ("previous", "duplicate", "induction", "random_induction"):
        assert abs(a[k] - b[k]) < 1e-6, ("ablation moved the weights", k, a, b)
assert off["models"][0]["loss_first"] != j["models"][1]["loss_first"], "ablation changed no loss"
EOF

# icl: both architectures, clipping said, --ablate honoured.
"$S" icl slice.txt --test-stories 20 --threads 2 -m "$M/tinystories-plain.safetensors" -m "$M/tinystories-window8.safetensors" \
  --min-stories 3 --json --svg icl.svg > icl.json
"$S" icl slice.txt --test-stories 20 --threads 2 -m "$M/tinystories-plain.safetensors" --min-stories 3 --ablate 1,2 --json > icl_off.json
"$S" icl slice.txt --test-stories 20 --threads 2 -m "$M/tinystories-plain.safetensors" --min-stories 3 > icl.txt
grep -q "clipped to" icl.txt || fail "icl does not say that --late 500 was clipped"
"$PY" - icl.json icl_off.json <<'EOF' || fail "icl's output"
import json, math, sys
j, off = (json.load(open(p)) for p in sys.argv[1:])
s = j["scores"]
assert [r["arch"] for r in s] == ["attention", "window8"], s
for r in s:
    assert r["early"] == 50 and r["late"] < 500 and r["clipped"] == "late", r
    assert abs(r["score"] - (r["late_loss"] - r["early_loss"])) < 1e-9, r
    assert abs(r["paired_score"] - (r["late_loss"] - r["paired_early_loss"])) < 1e-9, r
pos = [p for p in j["by_position"] if p["model"] == 0]
assert pos[0]["position"] == 0 and pos[0]["stories"] == 20
band = [p for p in pos if abs(p["position"] - 50) <= 10]
pooled = sum(p["loss"] * p["stories"] for p in band) / sum(p["stories"] for p in band)
assert abs(pooled - s[0]["early_loss"]) < 1e-6, (pooled, s[0]["early_loss"])
assert abs(off["scores"][0]["early_loss"] - s[0]["early_loss"]) > 1e-4, "ablation changed nothing"
assert any("clipped" in n for n in j["notes"]), j["notes"]
EOF

"$PY" - circuits.svg detect.svg detect1.svg icl.svg <<'EOF' || fail "an SVG is not well-formed"
import sys, xml.dom.minidom
for p in sys.argv[1:]:
    xml.dom.minidom.parse(p)
EOF

# Bad inputs: a clear message and a non-zero exit.
expect_error() { # PATTERN ARGS...: storylm ARGS fails, saying PATTERN
  local want="$1"; shift
  if "$S" "$@" > out.txt 2> err.txt; then fail "storylm $* succeeded"; fi
  grep -q "$want" err.txt || { cat err.txt; fail "storylm $*: no '$want' in the message"; }
}
expect_error "attention network" circuits -m "$M/tinystories-window8.safetensors" "${C[@]}"
expect_error "attention network" detect slice.txt -m "$M/tinystories-window8.safetensors" --test-stories 20
expect_error "not a token" circuits -m "$M/tinystories-plain.safetensors" "${C[@]}" --token-list lily,zarko
expect_error "head 8 is out of range" circuits -m "$M/tinystories-plain.safetensors" "${C[@]}" --head 8
expect_error "too short" icl slice.txt -m "$M/tinystories-plain.safetensors" --test-stories 20 --early 5000 --late 6000
expect_error "must come after" icl slice.txt -m "$M/tinystories-plain.safetensors" --early 60 --late 50
expect_error "do not fit the window" detect slice.txt -m "$M/tinystories-plain.safetensors" --test-stories 20 --length 200
expect_error "out of range" detect slice.txt -m "$M/tinystories-plain.safetensors" --test-stories 20 --ablate 9
for verb in circuits detect icl; do "$S" "$verb" --help | grep -- "--json" >/dev/null || fail "$verb --help"; done
"$S" circuits --help | grep "linearised" >/dev/null || fail "circuits --help does not explain the linearisation"
echo "e2e_circuits: ok"
