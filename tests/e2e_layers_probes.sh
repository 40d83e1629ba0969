#!/usr/bin/env bash
# End to end: patch, attribute, cache, circuits and stats answer on a model of two layers of
# heads (trained here in seconds), with --json, and mean something for both layers:
#   patch      every layer's heads (1:0 .. 2:7) through the hook points; the texts' shared
#              positions carry nothing, every row or the hidden layer patched is the clean run;
#   attribute  the parts of what the hidden layer reads: the row and every layer's heads; removing
#              a last-layer head's part is what --ablate of that head does to the logit;
#   cache      every hook point of both layers under its hook name, z's slots equal to hook_z;
#   circuits   --layer 2 (or --head 2:H): numpy recomputes the direct path from the token rows
#              (layer2.query's rows that read the row) and the OV circuit through the hidden layer;
#   stats      16 heads, numbered l*8 + h.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$PY" -c 'import numpy' 2> /dev/null || skip "numpy is missing (apt-get install python3-numpy)"

first_stories 120 > slice.txt
"$STORYLM" train slice.txt --vocab vocab.txt --threads 1 --eval-every 0 --seed 3 --test-stories 20 --steps 6 \
  --layers 2 --out two.safetensors 2> two.log || { cat two.log; fail "train --layers 2"; }
CLEAN="Lily saw a cat. The cat saw Lily"
CORRUPT="Lily saw a dog. The cat saw Lily"

# patch: 16 heads by layer; the positions before the texts differ carry nothing.
"$STORYLM" patch "$CLEAN" "$CORRUPT" --model two.safetensors --answer . --wrong and --json > patch.json \
  || fail "patch on two layers"
"$PY" - <<'PY' || fail "patch's answer on two layers"
import json
j = json.load(open("patch.json"))
pos, heads = j["positions"], j["heads"]
assert len(heads) == 16, len(heads)
names = [k for k in pos[0] if k.startswith("head_")]
assert names == ["head_%d" % g for g in range(16)], names
differ = next(r["position"] for r in pos if r["clean"] != r["corrupt"])
assert differ == 4, differ
for r in pos[:differ]:  # the same tokens before the change: nothing to bring back
    assert r["row"] == 0 and all(r[n] == 0 for n in names), r
assert pos[differ]["row"] != 0
# a layer-2 head reads layer 1's outputs: its keys and values after the change carry some of it
assert any(r[n] != 0 for r in pos[differ + 1:] for n in names[8:]), "layer 2 reads nothing of layer 1"
for key in ("all_rows", "hidden", "outputs_and_row"):  # the clean run through the hook points
    assert abs(j[key] - 1) < 1e-6, (key, j[key])
assert j["clean_diff"] == j["clean_diff_model"] and j["corrupt_diff"] == j["corrupt_diff_model"]
assert "resid" not in j, "a residual stream table on the attention network"
PY

# attribute: the row and 16 heads; a last-layer head's zero effect is --ablate's change of the logit.
"$STORYLM" attribute "$CLEAN" --model two.safetensors --pos 5 --token cat --stories slice.txt --test-stories 20 \
  --json > attr.json || fail "attribute on two layers"
"$STORYLM" attribute "$CLEAN" --model two.safetensors --pos 5 --token cat --ablate 2:3 --json > attr23.json \
  || fail "attribute --ablate 2:3 on two layers"
"$PY" - <<'PY' || fail "attribute's parts on two layers"
import json, math
j, off = json.load(open("attr.json")), json.load(open("attr23.json"))
parts = [p["part"] for p in j["parts"]]
assert parts == ["row"] + ["head %d:%d" % (l, h) for l in (1, 2) for h in range(8)], parts
assert all(math.isfinite(p["mean"]) for p in j["parts"]), "no mean effect with --stories"
assert any("every layer's heads" in n for n in j["notes"]), j["notes"]
zero = next(p["zero"] for p in j["parts"] if p["part"] == "head 2:3")
assert abs((j["logit"] - zero) - off["logit"]) < 1e-6, (j["logit"], zero, off["logit"])
PY

# cache: every hook point of both layers, each by its hook name; z holds hook_z of both layers.
"$STORYLM" cache "$CLEAN" --model two.safetensors -o cache.safetensors --json > cache.json || fail "cache on two layers"
"$STORYLM" cache slice.txt --model two.safetensors -o stories.safetensors --json > /dev/null || fail "cache of stories"
"$PY" - "$STORYLM_SOURCE_DIR/scripts" <<'PY' || fail "cache's tensors on two layers"
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from read_safetensors import load
C, _ = load("cache.safetensors")
block = ["hook_q", "hook_k", "hook_v", "hook_distance_score", "hook_attn_scores", "hook_pattern", "hook_z"]
want = ["tokens", "story_starts", "hook_embed"] + ["blocks.%d.attn.%s" % (l, p) for l in (0, 1) for p in block] \
    + ["hook_hidden_in", "hook_hidden", "hook_logits", "loss"]
assert sorted(C) == sorted(want), sorted(C)
T = C["tokens"].shape[0]
z = C["hook_hidden_in"]
assert z.shape == (T, 32 + 2 * 128) and np.array_equal(z[:, :32], C["hook_embed"])
for l in (0, 1):
    assert C["blocks.%d.attn.hook_pattern" % l].shape == (8, T, T)
    assert np.allclose(C["blocks.%d.attn.hook_pattern" % l].sum(axis=2), 1, atol=1e-5)
    s = C["blocks.%d.attn.hook_attn_scores" % l]
    e = np.exp(s - s.max(axis=2, keepdims=True))
    assert np.allclose(e / e.sum(axis=2, keepdims=True), C["blocks.%d.attn.hook_pattern" % l], atol=1e-6)
    assert np.array_equal(z[:, 32 + l * 128: 32 + (l + 1) * 128], C["blocks.%d.attn.hook_z" % l].reshape(T, 128))
S, _ = load("stories.safetensors")
starts = S["story_starts"].astype(int)
assert S["blocks.1.attn.hook_pattern"].shape[:2] == (8, starts[-1])
PY

# circuits --layer 2: the direct path from the token rows, recomputed by numpy.
"$STORYLM" circuits --model two.safetensors --stories slice.txt --test-stories 20 --layer 2 --top 5 --json \
  > circuits.json || fail "circuits --layer 2 on two layers"
"$STORYLM" circuits --model two.safetensors --stories slice.txt --test-stories 20 --head 2:1 --top 5 --json \
  > circuits21.json || fail "circuits --head 2:1 on two layers"
"$PY" - "$STORYLM_SOURCE_DIR/scripts" <<'PY' || fail "circuits' numbers on two layers"
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from read_safetensors import load
T, _ = load("two.safetensors")
E = T["embedding"].astype(np.float64)
W1, b1, W2 = (T[n].astype(np.float64) for n in ("hidden.weight", "hidden.bias", "output.weight"))
D, KD = E.shape[1], 8
for path, heads in (("circuits.json", list(range(8))), ("circuits21.json", [1])):
    j = json.load(open(path))
    assert j["layer"] == 2, j.get("layer")
    assert sorted({r["head"] for r in j["heads"]}) == heads
    z = np.array(j["mean_input"][0]["z"], dtype=np.float64)
    assert z.shape == (D + 2 * 8 * 16,)
    gain = 1 - np.tanh(W1 @ z + b1) ** 2
    for h in heads:
        Q, K, V = (T["layer2." + n][h][:D].astype(np.float64) for n in ("query", "key", "value"))
        qk = (E @ Q) @ (E @ K).T / np.sqrt(KD)
        slot = W1[:, D + (8 + h) * 16: D + (9 + h) * 16]
        ov = (E @ V) @ (W2 @ (gain[:, None] * slot)).T
        for r in (x for x in j["qk"] if x["head"] == h):
            assert abs(r["score"] - qk[r["query_id"], r["key_id"]]) <= 1e-3, r
        for r in (x for x in j["ov"] if x["head"] == h):
            assert abs(r["change"] - ov[r["reads_id"], r["raises_id"]]) <= 1e-3, r
print("circuits --layer 2: numpy agrees")
PY
if "$STORYLM" circuits --model two.safetensors --stories slice.txt --test-stories 20 --layer 3 2> bad.err; then
  fail "circuits --layer 3 on two layers"
fi
grep -q "the model has 2 layer" bad.err || { cat bad.err; fail "circuits --layer 3's message"; }

# stats: every layer's heads.
"$STORYLM" stats slice.txt --model two.safetensors --test-stories 20 --json > stats.json || fail "stats on two layers"
"$PY" - <<'PY' || fail "stats on two layers"
import json
j = json.load(open("stats.json"))
rows = j["heads"]
assert [r["head"] for r in rows] == list(range(16)), [r["head"] for r in rows]
assert all(-1 <= r["correlation"] <= 1 and 0 <= r["closest_not_largest"] <= 1 for r in rows), rows
assert [r["correlation"] for r in rows[:8]] != [r["correlation"] for r in rows[8:]]
PY
echo "patch, attribute, cache, circuits and stats read both layers of a two-layer model"
