#!/usr/bin/env bash
# End to end: --arch attn-only (TransformerLens's attn_only) through every
# verb on a tiny model trained here: train learns, two runs of one seed give
# the same bits, a run stopped and resumed too, BF16 by the same rules (where
# the CPU has it); info (308,048 parameters, no MLP tensor, TransformerLens's
# config without d_mlp and act_fn); --d-mlp and --act refused; generate, eval,
# heads, detect, ablate (zero and mean), attend, trace (no MLP neurons), stats, cache (the hook
# points without mlp and resid_mid), attribute (no MLP part), patch, circuits,
# pieces, swap, icl, distances; the server's views answer as the CLI's --json;
# Python loads it and its hooks are the cache's.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 200 > slice.txt
common=(--vocab vocab.txt --threads 2 --eval-every 20 --seed 5 --test-stories 20 --arch attn-only)
T="Lily found a red ball. She gave the ball to Tom and Lily smiled."
U="Lily found a red ball. She gave the ball to Tom and Tom smiled."

"$STORYLM" train slice.txt "${common[@]}" --steps 40 --out ao.safetensors 2> train.log || { cat train.log; fail "train"; }
loss=$("$STORYLM" eval slice.txt --model ao.safetensors --test-stories 20 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
echo "test loss after 40 steps: $loss"
"$PY" -c "import sys; sys.exit(0 if $loss < 6.5 else 1)" || fail "test loss $loss is not below log(2000) = 7.6 by much"

"$STORYLM" info --model ao.safetensors > info.txt
grep -q "308,048 parameters" info.txt || { cat info.txt; fail "info does not say 308,048 parameters"; }
grep -q "attn-only: 2 pre-LN attention blocks (no MLP), d_model 64, 8 heads of 8, n_ctx 256" info.txt || fail "info: architecture"
! grep -E "mlp|ln2" info.txt || fail "info lists an MLP tensor"
"$STORYLM" info --model ao.safetensors --json > info.json
"$PY" - ao.safetensors info.json <<'PY' || fail "the file's header does not carry TransformerLens's attn_only config"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
h = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
md = h["__metadata__"]
assert md["arch"] == "attn-only" and md["d_model"] == "64" and md["n_layers"] == "2" and md["d_head"] == "8"
assert md["positional_embedding_type"] == "standard" and "d_mlp" not in md and "act_fn" not in md
assert h["blocks.1.attn.W_Q"]["shape"] == [8, 64, 8] and not [k for k in h if "mlp" in k or "ln2" in k]
info = json.load(open(sys.argv[2]))
assert "act_fn" not in info["config"] and info["config"]["hidden_dim"] == 0
PY

# The same seed and threads: the same bits; stopped at 20 and resumed: the same weights.
"$STORYLM" train slice.txt "${common[@]}" --steps 40 --out again.safetensors 2> again.log || { cat again.log; fail "train again"; }
[[ "$(tensor_sums ao.safetensors)" == "$(tensor_sums again.safetensors)" ]] || fail "two runs of one seed differ"
"$STORYLM" train slice.txt "${common[@]}" --steps 40 --stop-at 20 --out part.safetensors 2> part.log || { cat part.log; fail "train --stop-at"; }
"$STORYLM" train slice.txt --vocab vocab.txt --threads 2 --eval-every 20 --test-stories 20 --steps 40 --resume \
  --out part.safetensors 2> resume.log || { cat resume.log; fail "train --resume"; }
[[ "$(tensor_sums ao.safetensors)" == "$(tensor_sums part.safetensors)" ]] || fail "resumed run differs from the uninterrupted one"

# Its blocks have no MLP: --d-mlp and --act are refused, saying why; a small t5-free shape with per-distance scores trains.
for bad in "--d-mlp 64" "--act relu"; do
  if "$STORYLM" train slice.txt "${common[@]}" --steps 2 $bad --out bad.safetensors 2> bad.err; then fail "train $bad was accepted"; fi
  grep -q "no MLP\|has none" bad.err || { cat bad.err; fail "train $bad: the message does not say why"; }
done
"$STORYLM" train slice.txt "${common[@]}" --steps 4 --layers 1 --d-model 32 --n-heads 4 --d-head 8 \
  --position-scheme distance --out small.safetensors 2> small.log || { cat small.log; fail "train a small attn-only model"; }
"$STORYLM" info --model small.safetensors | grep -q "1 pre-LN attention blocks (no MLP), d_model 32, 4 heads of 8" || fail "small: info"
"$STORYLM" distances --model small.safetensors --layer 1 --up-to 3 | grep -q "head 3" || fail "distances of attn-only's block"

# BF16 by the same rules: the same bits twice, the test loss within 1% of FP32's.
if grep -qw avx512_bf16 /proc/cpuinfo; then
  "$STORYLM" train slice.txt "${common[@]}" --steps 40 --precision bf16 --out b1.safetensors 2> b1.log || { cat b1.log; fail "train bf16"; }
  "$STORYLM" train slice.txt "${common[@]}" --steps 40 --precision bf16 --out b2.safetensors 2> b2.log || { cat b2.log; fail "train bf16 again"; }
  [[ "$(tensor_sums b1.safetensors)" == "$(tensor_sums b2.safetensors)" ]] || fail "bf16 twice gave other bits"
  [[ "$(tensor_sums b1.safetensors)" != "$(tensor_sums ao.safetensors)" ]] || fail "the bf16 run is the fp32 run"
  b=$("$STORYLM" eval slice.txt --model b1.safetensors --test-stories 20 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
  echo "test loss after 40 steps: fp32 $loss, bf16 $b"
  "$PY" -c "import sys; sys.exit(0 if abs($loss - $b) < 0.01 * $loss else 1)" || fail "bf16's test loss $b is not within 1% of fp32's $loss"
  "$STORYLM" generate --model ao.safetensors --precision bf16 -n 20 --seed 3 --json Lily > /dev/null || fail "generate --precision bf16"
fi

# Generation: greedy is deterministic; --json; a batch's sample is itself alone; --ablate.
a=$("$STORYLM" generate --model ao.safetensors -t 0 -n 30 "Lily found a")
[[ -n "$a" && "$a" == "$("$STORYLM" generate --model ao.safetensors -t 0 -n 30 "Lily found a")" ]] || fail "greedy generation"
"$STORYLM" generate --model ao.safetensors -n 20 --seed 4 --samples 2 --json Tom > two.json || fail "generate --samples 2"
"$STORYLM" generate --model ao.safetensors --ablate 1:2,2:0 -t 0 -n 5 Lily > /dev/null || fail "generate --ablate"

# Every probe: every block's heads, named L:H.
M=(--model ao.safetensors)
"$STORYLM" eval slice.txt "${M[@]}" --test-stories 20 --ablate 1:0,2:7 | grep -q "heads 1:0,2:7 set to 0" || fail "eval --ablate"
"$STORYLM" heads slice.txt "${M[@]}" --test-stories 20 | grep -q " 2:7 " || fail "heads: no row for 2:7"
"$STORYLM" detect slice.txt "${M[@]}" --test-stories 20 | grep -q "2:7" || fail "detect: no row for 2:7"
"$STORYLM" ablate slice.txt "${M[@]}" --test-stories 20 --heads 2:3 | grep -q "^2:3 " || fail "ablate: no row for 2:3"
"$STORYLM" ablate slice.txt "${M[@]}" --test-stories 20 --heads 1:1 --ablate-mode mean --json > /dev/null || fail "ablate mean"
"$STORYLM" attend "$T" "${M[@]}" --head 2:3 --json > attend.json || fail "attend --head 2:3"
"$STORYLM" trace "$T" "${M[@]}" --layer 2 --pos 6 --json > trace.json || fail "trace --layer 2"
"$STORYLM" trace "$T" "${M[@]}" --layer 2 --pos 6 > trace.txt || fail "trace --layer 2"
grep -q "head 2:7" trace.txt && ! grep -q "MLP" trace.txt || { cat trace.txt; fail "trace: every head's z, and no MLP neurons"; }
"$STORYLM" stats slice.txt "${M[@]}" --test-stories 20 --json > /dev/null || fail "stats"
"$STORYLM" attribute "$T" "${M[@]}" --pos 8 --json > attribute.json || fail "attribute"
"$STORYLM" patch "$T" "$U" "${M[@]}" --json > /dev/null || fail "patch"
"$STORYLM" circuits "${M[@]}" --layer 2 --head 1 --stories slice.txt --test-stories 20 --json > /dev/null || fail "circuits"
"$STORYLM" pieces slice.txt "${M[@]}" --test-stories 20 --json > /dev/null || fail "pieces"
"$STORYLM" swap slice.txt "${M[@]}" --test-stories 20 --json --svg swap.svg > /dev/null || fail "swap"
grep -q ">attn-only<" swap.svg || fail "swap --svg: the legend does not name the model's architecture"
"$STORYLM" swap slice.txt "${M[@]}" --test-stories 20 --baseline small.safetensors --svg swap2.svg > /dev/null ||
  fail "swap --baseline"
grep -q ">ao.safetensors<" swap2.svg && grep -q ">small.safetensors<" swap2.svg ||
  fail "swap --svg: two attn-only models are not told apart by their files"
"$STORYLM" icl slice.txt "${M[@]}" --test-stories 20 --json > /dev/null || fail "icl"
"$PY" - attribute.json <<'PY' || fail "attribute's parts: embed, pos_embed, every head and b_O, and no MLP"
import json, sys
names = [p["part"] for p in json.load(open(sys.argv[1]))["parts"]]
assert names[:2] == ["embed", "pos_embed"] and "head 2:7" in names and "b_O 2" in names, names
assert not [n for n in names if "mlp" in n] and len(names) == 2 + 2 * (8 + 1), names
PY
"$STORYLM" cache "$T" "${M[@]}" -o acts.safetensors 2> /dev/null || fail "cache"
"$PY" - acts.safetensors <<'PY' || fail "cache: the hook points of attn_only"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
h = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
names = set(h) - {"__metadata__"}
for want in ["hook_embed", "hook_pos_embed", "blocks.1.hook_resid_pre", "blocks.1.attn.hook_pattern",
             "blocks.1.attn.hook_z", "blocks.1.hook_resid_post", "ln_final.hook_normalized", "hook_logits"]:
    assert want in names, want
assert not [n for n in names if "mlp" in n or "resid_mid" in n], names
PY

# The server's views answer as the CLI's --json.
"$PY" - "$STORYLM" ao.safetensors slice.txt "$T" <<PY || fail "the server on an attn-only model"
import sys
sys.path.insert(0, "$STORYLM_SOURCE_DIR/tests/serve")
from client import Server, cli_json
S, M, STORIES, T = sys.argv[1:5]
srv = Server(S, "--model", M, "--stories", STORIES, "--threads", "2")
try:
    for route, body, cli in [("attend", {"text": T, "head": "2:3"}, ["attend", T, "--head", "2:3"]),
                             ("attribute", {"text": T, "pos": 8}, ["attribute", T, "--pos", "8"]),
                             ("trace", {"text": T, "layer": 2, "pos": 6}, ["trace", T, "--layer", "2", "--pos", "6"])]:
        status, got = srv.post("/api/" + route, body)
        assert status == 200, (route, status, got)
        want = cli_json(S, *cli, "--model", M)
        assert got == want, route
    status, got = srv.post("/api/generate", {"prompt": "Lily", "max_tokens": 5, "seed": 3})
    assert status == 200, (status, got)
finally:
    srv.stop()
PY

# Python: the model's hook names are the cache's, run_with_cache and generate work.
BUILD=$(dirname "$STORYLM")
if [[ -f $BUILD/libstorylm.so ]] && ! grep -q '^STORYLM_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null &&
   "$PY" -c 'import numpy' 2>/dev/null; then
  STORYLM_LIBRARY=$BUILD/libstorylm.so PYTHONPATH=$STORYLM_SOURCE_DIR/python "$PY" - ao.safetensors "$T" <<'PY' ||
import sys
import storylm
m = storylm.load(sys.argv[1])
assert m.hook_names[:3] == ["hook_embed", "hook_pos_embed", "blocks.0.hook_resid_pre"], m.hook_names
assert not [n for n in m.hook_names if "mlp" in n or "resid_mid" in n], m.hook_names
logits, cache = m.run_with_cache(sys.argv[2])
assert cache["blocks.1.attn.hook_pattern"].shape[0] == 8 and "blocks.1.hook_resid_post" in cache
def off(z, hook):
    z[:, 3, :] = 0
a = m.run_with_hooks(sys.argv[2], [("blocks.0.attn.hook_z", off)], return_type="loss")
b = m.loss(sys.argv[2], ablate="1:3")
assert abs(float(a) - float(b)) < 1e-6, (a, b)
m.generate("Lily", max_tokens=5, seed=1)
PY
    fail "Python on an attn-only model"
fi
echo "e2e_attn_only: all passed"
