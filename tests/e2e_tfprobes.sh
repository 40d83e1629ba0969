#!/usr/bin/env bash
# End to end: the probes read every layer of the chapter's network with
# --layers 2 and every block of a transformer (a small one trained here in
# seconds): attend and trace --layer L (the JSON names the layer; the weights
# of a position add up to 1; --layer past the model's layers is refused).
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
echo "e2e_tfprobes: all passed"
