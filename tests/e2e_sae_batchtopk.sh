#!/usr/bin/env bash
# End to end: sae train --kind batchtopk. The trained SAE is saved as SAELens
# saves a BatchTopK one, a JumpReLU (cfg.json's architecture "jumprelu", a
# threshold [d_sae] beside the weights, every latent's the same running
# value); sae eval reads it and the numpy reader of docs/sae.md computes the
# same explained variance, L0 and MSE from the files; sae features and
# generate --steer read it; Python's SAE.load gives its threshold and
# encodings equal to the numpy reader's. (320 steps: the threshold, a running
# mean from 0 at a rate of 0.01 a step as SAELens's, is then near its value.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

sae_tiny_model
common=(-m tiny.safetensors --test-stories 20 --threads 2)
"$STORYLM" sae train slice.txt "${common[@]}" --tokens 40960 --batch-tokens 128 --seed 3 --expansion 4 --k 8 \
  --kind batchtopk -o bt --json >train.json 2>bt.log || { cat bt.log; fail "sae train --kind batchtopk"; }
"$PY" - bt <<'PY' || fail "a BatchTopK SAE is not saved as SAELens's JumpReLU"
import json, struct, sys
d = sys.argv[1]
cfg = json.load(open(f"{d}/cfg.json"))
assert cfg["architecture"] == "jumprelu" and cfg["d_sae"] == 512 and "k" not in cfg, cfg
assert cfg["storylm"]["kind"] == "batchtopk" and cfg["storylm"]["k"] == 8, cfg["storylm"]
b = open(f"{d}/sae_weights.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
assert h["threshold"]["shape"] == [512], h
lo, hi = h["threshold"]["data_offsets"]
t = struct.unpack(f"<{(hi - lo) // 4}f", b[8 + n + lo:8 + n + hi])
assert min(t) == max(t) > 0, (min(t), max(t))
PY

"$STORYLM" sae eval bt slice.txt "${common[@]}" --json >eval.json 2>eval.log || { cat eval.log; fail "sae eval"; }
"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert 4 <= j["l0"] <= 16 and j["explained_variance"] > 0, j' \
  eval.json || fail "sae eval of a BatchTopK SAE: $(cat eval.json)"
"$STORYLM" sae features bt slice.txt "${common[@]}" --latents 2 --json >features.json 2>/dev/null || fail "sae features"
"$STORYLM" generate -m tiny.safetensors --seed 7 --tokens 20 --steer bt:3:20 "Tom" >/dev/null 2>steer.log ||
  { cat steer.log; fail "generate --steer with a BatchTopK SAE"; }

"$PY" -c "import numpy" 2>/dev/null || skip "numpy is missing (apt install python3-numpy)"
sae_numpy_agrees bt eval.json " on a JumpReLU"
python_preload "$(dirname "$STORYLM")"
"${PRELOAD[@]}" env PYTHONPATH="$STORYLM_SOURCE_DIR/python" STORYLM_LIBRARY="$(dirname "$STORYLM")/libstorylm.so" \
  "$PY" - "$STORYLM_SOURCE_DIR/tests/sae_reader.py" <<'PY' || fail "Python's SAE.load of a BatchTopK SAE"
import json, struct, sys
import numpy as np
import storylm
sae = storylm.SAE.load("bt")
assert sae.cfg.architecture == "jumprelu" and sae.threshold.shape == (512,) and "threshold" in sae.state_dict()
src = open(sys.argv[1]).read()
code = src[src.index("# ---- docs/sae.md ----"):src.index("# ---- end ----")]
ns = {"DIR": "bt", "json": json, "struct": struct, "np": np}
exec(code, ns)
x = np.random.default_rng(1).normal(size=(50, 128)).astype(np.float32) * 3
want = ns["encode"](x)
got = sae.encode(x)
assert np.array_equal(got > 0, want > 0) and np.allclose(got, want, atol=1e-4), np.abs(got - want).max()
assert np.allclose(sae.decode(got), ns["decode"](want), atol=1e-3)
print("Python: L0", float((got > 0).sum(1).mean()))
PY
echo "e2e_sae_batchtopk: ok"
