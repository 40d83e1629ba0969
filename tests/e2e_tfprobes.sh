#!/usr/bin/env bash
# End to end: the probes read every layer of the chapter's network with
# --layers 2 and every block of a transformer (a small one trained here in
# seconds): attend and trace --layer L (the JSON names the layer; the weights
# of a position add up to 1; --layer past the model's layers is refused);
# --ablate-mode mean in eval, ablate and generate; attribute (direct logit attribution);
# patch (every block's heads and the residual stream); circuits --layer L; pieces, stats;
# cache on a transformer (TransformerLens's hook names and shapes, checked
# against the model's tensors; stories packed as each alone).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 120 > slice.txt
small=(--vocab vocab.txt --threads 1 --eval-every 0 --seed 3 --test-stories 20 --steps 6)
"$STORYLM" train slice.txt "${small[@]}" --arch transformer --d-model 32 --n-heads 4 --d-head 8 --d-mlp 64 \
  --out tf.safetensors 2> tf.log || { cat tf.log; fail "train a small transformer"; }
"$STORYLM" train slice.txt "${small[@]}" --layers 2 --out two.safetensors 2> two.log || { cat two.log; fail "train --layers 2"; }
TEXT="Lily saw a cat. The cat saw Lily"

# attend --layer L: each layer's heads, the weights of the position read adding up to 1.
for m in tf two; do
  for layer in 1 2; do
    "$STORYLM" attend "$TEXT" --model $m.safetensors --layer $layer --json > attend.json || fail "attend $m --layer $layer"
    "$PY" - attend.json $layer <<'PY' || fail "attend $m --layer $layer: wrong JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["layer"] == int(sys.argv[2]), r.get("layer")
heads = {}
for k in r["keys"]:
    heads[k["head"]] = heads.get(k["head"], 0) + k["weight"]
    assert abs(k["score"] - k["dot"] - k["distance_score"]) < 1e-3
assert heads and all(abs(s - 1) < 1e-4 for s in heads.values()), heads
PY
    "$STORYLM" trace "$TEXT" --model $m.safetensors --layer $layer --units 5 --json > trace.json || fail "trace $m --layer $layer"
    "$PY" - trace.json $layer <<'PY' || fail "trace $m --layer $layer: wrong JSON"
import json, sys
r = json.load(open(sys.argv[1]))
L = int(sys.argv[2])
assert r["layer"] == L
parts = [p["part"] for p in r["inputs"]]
assert parts[1] == "head %d:0" % L and parts[0] in ("row", "resid_pre"), parts
assert len(r["hidden"]) == 5 and abs(sum(g["probability"] for g in r["guesses"])) <= 1
PY
  done
  "$STORYLM" attend "$TEXT" --model $m.safetensors --layer 2 --svg map.svg > /dev/null || fail "attend --svg of $m's layer 2"
  grep -q "<svg" map.svg || fail "attend --svg wrote no picture"
  rc=0
  "$STORYLM" attend "$TEXT" --model $m.safetensors --layer 3 > /dev/null 2> bad.err || rc=$?
  [[ $rc -eq 1 ]] && grep -q "has 2 layer" bad.err || fail "attend --layer 3 on $m: exit $rc, $(cat bad.err)"
done
# The two layers' weights differ (layer 2 is not layer 1 read twice).
a=$("$STORYLM" attend "$TEXT" --model tf.safetensors --layer 1 --head 0 --json | "$PY" -c 'import json,sys; print([k["weight"] for k in json.load(sys.stdin)["keys"]])')
b=$("$STORYLM" attend "$TEXT" --model tf.safetensors --layer 2 --head 0 --json | "$PY" -c 'import json,sys; print([k["weight"] for k in json.load(sys.stdin)["keys"]])')
[[ "$a" != "$b" ]] || fail "attend --layer 1 and 2 of the transformer give the same weights"

# --ablate-mode mean on a transformer: eval, ablate and generate take it, and it is not zero mode.
mean=$("$STORYLM" eval slice.txt --model tf.safetensors --test-stories 20 --ablate 2:1 --ablate-mode mean --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
zero=$("$STORYLM" eval slice.txt --model tf.safetensors --test-stories 20 --ablate 2:1 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
[[ "$mean" != "$zero" ]] || fail "eval --ablate-mode mean gives zero mode's loss $zero"
"$STORYLM" ablate slice.txt --model tf.safetensors --test-stories 20 --heads 1:0,2:3 --ablate-mode mean > ablate.txt ||
  fail "ablate --ablate-mode mean on a transformer"
grep -q "^1:0,2:3 " ablate.txt || { cat ablate.txt; fail "ablate --ablate-mode mean: no row for 1:0,2:3"; }
"$STORYLM" generate --model tf.safetensors --ablate 1:2 --ablate-mode mean --stories slice.txt -t 0 -n 5 "Lily" \
  > /dev/null 2> gen.err || fail "generate --ablate-mode mean on a transformer: $(cat gen.err)"

# attribute on a transformer: every part of the residual stream, the direct logit attribution
# beside the removals; a bias's mean is itself, so replacing it by its mean changes nothing.
"$STORYLM" attribute "$TEXT" --model tf.safetensors --stories slice.txt --test-stories 20 --json > attr.json ||
  fail "attribute on a transformer"
"$PY" - attr.json <<'PY' || fail "attribute on a transformer: wrong JSON"
import json, sys
r = json.load(open(sys.argv[1]))
parts = {p["part"]: p for p in r["parts"]}
want = ["embed", "pos_embed"] + ["%s %d%s" % (k, l, h) for l in (1, 2) for k, h in
        [("head", ":%d" % h) for h in range(4)] + [("b_O", ""), ("mlp", "")]]
assert [p["part"] for p in r["parts"]] == want, list(parts)
assert abs(parts["b_O 1"]["mean"]) < 1e-6 and abs(parts["b_O 2"]["mean"]) < 1e-6
assert all(isinstance(p.get("mean"), (int, float)) for p in r["parts"])
PY
"$STORYLM" attribute "$TEXT" --model tf.safetensors --svg attr.svg > /dev/null || fail "attribute --svg on a transformer"

# patch on a transformer: every block's heads, and the residual stream at each block and position.
"$STORYLM" patch "Lily saw a cat. Lily" "Tom saw a cat. Tom" --model tf.safetensors --json > patch.json ||
  fail "patch on a transformer"
"$PY" - patch.json <<'PY' || fail "patch on a transformer: wrong JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["all_rows"] == 1 and r["hidden"] == 1 and r["clean_diff"] == r["clean_diff_model"]
assert len(r["heads"]) == 8 and "head_7" in r["positions"][0]
rows = r["resid"]
assert list(rows[0])[2:] == ["blocks.0.hook_resid_pre", "blocks.1.hook_resid_pre", "blocks.1.hook_resid_post"]
assert rows[-1]["blocks.1.hook_resid_post"] == 1 and all(x["blocks.1.hook_resid_post"] == 0 for x in rows[:-1])
assert [x["blocks.0.hook_resid_pre"] for x in rows] == [x["row"] for x in r["positions"]]
PY
"$STORYLM" patch "Lily saw a cat. Lily" "Tom saw a cat. Tom" --model tf.safetensors --svg patch.svg > /dev/null ||
  fail "patch --svg on a transformer"

# circuits --layer L on a transformer: that block's heads, the full QK and OV circuits.
"$STORYLM" circuits --model tf.safetensors --stories slice.txt --test-stories 20 --layer 2 --top-k 2 --json > circ.json ||
  fail "circuits on a transformer"
# The full circuits read no mean input, so none is reported.
"$PY" -c 'import json,sys; r = json.load(open("circ.json")); assert r["layer"] == 2 and len(r["heads"]) == 8 and "mean_input" not in r, r.keys()' ||
  fail "circuits --layer 2: wrong JSON"
rc=0
"$STORYLM" circuits --model tf.safetensors --stories slice.txt --layer 3 > /dev/null 2> bad.err || rc=$?
[[ $rc -eq 1 ]] && grep -q "block" bad.err || fail "circuits --layer 3 on two blocks: exit $rc, $(cat bad.err)"

# pieces and stats read every block's heads.
"$STORYLM" pieces slice.txt --model tf.safetensors --test-stories 20 --json > pieces.json || fail "pieces on a transformer"
"$PY" -c 'import json; r = json.load(open("pieces.json")); print(sorted(r))' > /dev/null
grep -q '"2:3"' pieces.json || fail "pieces: no row for head 2:3 in the two lookups"
"$STORYLM" stats slice.txt --model tf.safetensors --test-stories 20 --json > stats.json || fail "stats on a transformer"
"$PY" -c 'import json; r = json.load(open("stats.json")); assert len(r["heads"]) == 8, r["heads"]' ||
  fail "stats: not every block's heads"

# cache on a transformer: TransformerLens's hook names and shapes, numbers that
# hold together with the model's tensors, and stories packed as each alone.
"$PY" -c 'import numpy' 2>/dev/null || skip "numpy is missing for $PY (the cache's checks read it)"
"$STORYLM" cache "$TEXT" --model tf.safetensors -o one.safetensors > /dev/null || fail "cache of a text on a transformer"
"$STORYLM" cache --stories slice.txt --test-stories 3 --model tf.safetensors -o packed.safetensors > /dev/null ||
  fail "cache --stories on a transformer"
"$PY" - "$STORYLM_SOURCE_DIR/scripts" <<'PY' || fail "the transformer's cache"
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from read_safetensors import load
w = load("tf.safetensors")[0]
close = lambda a, b: np.abs(a - b).max() <= 1e-4 * max(1.0, np.abs(b).max())


def check(c, lo, hi):
    """Story positions lo..hi-1 of cache c hold together with the model's tensors."""
    T = hi - lo
    at = lambda name: c[name][lo:hi]
    assert close(at("hook_embed"), w["embed.W_E"][at("tokens").astype(int)])
    assert close(at("hook_embed") + at("hook_pos_embed"), at("blocks.0.hook_resid_pre"))
    for l in range(2):
        b = "blocks.%d." % l
        p = c[b + "attn.hook_pattern"][:, lo:hi]
        assert not p[:, :, T:].any(), "keys past the story"
        p = p[:, :, :T]
        assert np.allclose(p.sum(-1), 1, atol=1e-5) and np.all(np.triu(p, 1) == 0)
        z = at(b + "attn.hook_z")
        assert close(z, np.einsum("hqk,khd->qhd", p, at(b + "attn.hook_v")))
        attn_out = np.einsum("qhd,hdm->qm", z, w[b + "attn.W_O"]) + w[b + "attn.b_O"]
        assert close(at(b + "hook_attn_out"), attn_out) and close(at(b + "attn.hook_result").sum(1) + w[b + "attn.b_O"], attn_out)
        assert close(at(b + "hook_resid_mid"), at(b + "hook_resid_pre") + attn_out)
        mlp_out = at(b + "mlp.hook_post") @ w[b + "mlp.W_out"] + w[b + "mlp.b_out"]
        assert close(at(b + "hook_mlp_out"), mlp_out)
        assert close(at(b + "hook_resid_post"), at(b + "hook_resid_mid") + mlp_out)
    x = at("blocks.1.hook_resid_post")
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w["ln_final.w"] + w["ln_final.b"]
    assert close(at("ln_final.hook_normalized"), x)
    assert close(at("hook_logits"), x @ w["unembed.W_U"] + w["unembed.b_U"])


c = load("one.safetensors")[0]
T = c["tokens"].shape[0]
names = [n for n in c if n not in ("tokens", "story_starts", "loss")]
want = ["hook_embed", "hook_pos_embed"] + ["blocks.%d.%s" % (l, n) for l in range(2) for n in (
    "hook_resid_pre", "ln1.hook_scale", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k", "attn.hook_v",
    "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z", "attn.hook_result", "hook_attn_out",
    "hook_resid_mid", "ln2.hook_scale", "ln2.hook_normalized", "mlp.hook_pre", "mlp.hook_post", "hook_mlp_out",
    "hook_resid_post")] + ["ln_final.hook_scale", "ln_final.hook_normalized", "hook_logits"]
assert names == want, names
assert c["blocks.1.attn.hook_pattern"].shape == (4, T, T) and c["blocks.0.attn.hook_q"].shape == (T, 4, 8)
check(c, 0, T)
packed = load("packed.safetensors")[0]
s = packed["story_starts"].astype(int)
assert len(s) == 4 and packed["blocks.0.attn.hook_pattern"].shape[2] == max(np.diff(s))
for i in range(3):
    check(packed, s[i], s[i + 1])
print("cache: %d hooks, held together with the model's tensors, also 3 stories packed" % len(names))
PY
echo "e2e_tfprobes: all passed"
