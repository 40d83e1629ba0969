#!/usr/bin/env bash
# End to end: storylm sae train and eval on tiny trained models. An SAE on
# hook_hidden is written in SAELens's files (cfg.json's keys, the tensors'
# names and shapes, sparsity.safetensors); two runs of one seed give the same
# bits; sae eval gives SAELens's metrics, and the numpy reader of docs/sae.md
# (tests/sae_reader.py) computes the same explained variance, L0 and MSE from
# the files and storylm cache's activations; a transformer's
# blocks.1.hook_mlp_out trains and evaluates spliced; Ctrl-C saves an SAE that
# eval reads; bad input is refused with a message: a missing DIR, a hook the
# model lacks, a truncated weights file, a NaN, a bad --kind.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

sae_tiny_model
common=(-m tiny.safetensors --test-stories 20 --threads 2)
small=(--tokens 20480 --batch-tokens 1024 --seed 3 --expansion 4 --k 8)

"$STORYLM" sae --help >sae_help.txt || fail "sae --help" # into a file: grep -q on a pipe would cut it short
grep -q "storylm sae train" sae_help.txt && grep -q -- "--latent I,J" sae_help.txt || fail "sae --help lacks a sub-verb's help"
"$STORYLM" sae train --help >help.txt
grep -q -- "--expansion N.*(default: 16)" help.txt || fail "sae train --help does not give --expansion's default"
grep -q -- "--k N.*(default: 32)" help.txt || fail "sae train --help does not give --k's default"

"$STORYLM" sae train slice.txt "${common[@]}" "${small[@]}" --hook hook_hidden -o sae1 --json >train1.json 2>train1.log ||
  { cat train1.log; fail "sae train"; }
grep -q "^step " train1.log || fail "sae train printed no progress line"
for f in cfg.json sae_weights.safetensors sparsity.safetensors; do [[ -s sae1/$f ]] || fail "sae1/$f is missing"; done
"$PY" - sae1 <<'PY' || fail "the files are not SAELens's"
import json, struct, sys
d = sys.argv[1]
cfg = json.load(open(f"{d}/cfg.json"))
for k, v in {"architecture": "topk", "d_in": 128, "d_sae": 512, "k": 8, "hook_name": "hook_hidden",
             "apply_b_dec_to_input": True, "normalize_activations": "none", "dtype": "float32"}.items():
    assert cfg[k] == v, (k, cfg.get(k), v)
assert cfg["metadata"]["hook_name"] == "hook_hidden" and cfg["model_name"] == "tiny.safetensors"
def header(p):
    b = open(p, "rb").read()
    return json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
h = header(f"{d}/sae_weights.safetensors")
shapes = {k: v["shape"] for k, v in h.items() if k != "__metadata__"}
assert shapes == {"W_enc": [128, 512], "b_enc": [512], "W_dec": [512, 128], "b_dec": [128]}, shapes
assert {k: v["shape"] for k, v in header(f"{d}/sparsity.safetensors").items() if k != "__metadata__"} == {"sparsity": [512]}
PY

# the same seed and threads: the same bits
"$STORYLM" sae train slice.txt "${common[@]}" "${small[@]}" --hook hook_hidden -o sae2 2>/dev/null >/dev/null || fail "sae train again"
cmp sae1/sae_weights.safetensors sae2/sae_weights.safetensors || fail "two runs of one seed differ"
# an SAE is kept unless --force
if "$STORYLM" sae train slice.txt "${common[@]}" "${small[@]}" -o sae2 2>err.txt >/dev/null; then fail "replaced an SAE"; fi
grep -q "holds an SAE already" err.txt || { cat err.txt; fail "no message for an SAE already there"; }

"$STORYLM" sae eval sae1 slice.txt "${common[@]}" --json >eval1.json 2>eval.log || { cat eval.log; fail "sae eval"; }
"$STORYLM" sae eval sae1 slice.txt "${common[@]}" >eval1.txt 2>/dev/null || fail "sae eval (table)"
grep -q "explained variance" eval1.txt && grep -q "ce_loss_score" eval1.txt || fail "sae eval's table"
"$PY" - eval1.json <<'PY' || fail "sae eval's numbers"
import json, math, sys
j = json.load(open(sys.argv[1]))
for k in ["explained_variance", "mse", "l0", "l1", "cossim", "dead_share", "ce_loss_score", "kl_div_score",
          "ce_loss_with_sae", "ce_loss_without_sae", "ce_loss_with_ablation"]:
    assert isinstance(j[k], float) or isinstance(j[k], int), k
assert 0 < j["l0"] <= 8, j["l0"]
assert 0 < j["explained_variance"] <= 1 and 0 < j["cossim"] <= 1, j
assert j["ce_loss_with_ablation"] > j["ce_loss_without_sae"], j
print("eval:", {k: round(j[k], 4) for k in ["explained_variance", "l0", "ce_loss_score", "kl_div_score", "dead_share"]})
PY

# the numpy reader of docs/sae.md computes the same numbers from the files
if "$PY" -c "import numpy" 2>/dev/null; then
  sed -n '/^# ---- docs\/sae.md ----$/,/^# ---- end ----$/p' "$STORYLM_SOURCE_DIR/tests/sae_reader.py" | sed '1d;$d' >reader.py
  "$PY" - "$STORYLM_SOURCE_DIR/docs/sae.md" reader.py <<'PY' || fail "docs/sae.md's numpy lines differ from tests/sae_reader.py's"
import sys
doc, lines = open(sys.argv[1]).read(), open(sys.argv[2]).read()
assert lines.strip() in doc, "the reader's lines are not in the page"
PY
  sae_numpy_agrees sae1 eval1.json ""
else
  echo "numpy is missing: the reader's check skipped (apt install python3-numpy)"
fi

expect_error_early() { if "$@" >/dev/null 2>err.txt; then fail "$*: exit 0"; fi; }
# features: density of every latent, the densest latents' contexts and tokens, or those named
"$STORYLM" sae features sae1 slice.txt "${common[@]}" --latents 3 --json >features.json 2>/dev/null || fail "sae features"
"$STORYLM" sae features sae1 slice.txt "${common[@]}" --latent 5,7 >features.txt 2>/dev/null || fail "sae features --latent"
grep -q "^latent 5 " features.txt && grep -q "^latent 7 " features.txt && grep -q "promotes:" features.txt ||
  fail "sae features' table"
"$PY" - features.json <<'PY' || fail "sae features' JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert len(j["density"]) == 512 and len(j["features"]) == 3, (len(j["density"]), len(j["features"]))
d = [f["density"] for f in j["features"]]
assert d == sorted(d, reverse=True) and d[0] == max(j["density"]), d
for f in j["features"]:
    assert f["contexts"] and all("[" in c["text"] for c in f["contexts"]), f
    assert len(f["promotes"]) == 5 and f["promotes"][0]["log_prob_change"] >= f["suppresses"][0]["log_prob_change"], f
    for c in f["contexts"]:  # the window's tokens (8 before, 2 after), the latent's value at each; the firing one's
        pos = [t["position"] for t in c["tokens"]]
        assert pos == list(range(max(0, c["position"] - 8), pos[-1] + 1)) and c["position"] <= pos[-1] <= c["position"] + 2, c
        fired = c["tokens"][pos.index(c["position"])]
        assert abs(fired["value"] - c["value"]) <= 1e-5 * c["value"] and min(t["value"] for t in c["tokens"]) >= 0, c
PY
expect_error_early "$STORYLM" sae features sae1 slice.txt "${common[@]}" --latent 5,x
grep -q -- "--latent 5,x is not a list of latents" err.txt || { cat err.txt; fail "sae features --latent 5,x: no message"; }
expect_error_early "$STORYLM" sae features sae1 slice.txt "${common[@]}" --latent 9999
grep -q "no latent 9999" err.txt || { cat err.txt; fail "sae features --latent 9999: no message"; }

# an L1 SAE trains and evaluates too
"$STORYLM" sae train slice.txt "${common[@]}" "${small[@]}" --kind l1 -o sae_l1 2>l1.log >/dev/null || { cat l1.log; fail "sae train --kind l1"; }
"$PY" -c 'import json; assert json.load(open("sae_l1/cfg.json"))["architecture"] == "standard"' ||
  fail "an L1 SAE's architecture is not standard"
"$STORYLM" sae eval sae_l1 slice.txt "${common[@]}" --json >/dev/null 2>&1 || fail "sae eval of an L1 SAE"

# a transformer's MLP output, spliced in as resid_mid + the SAE's reconstruction
"$STORYLM" train slice.txt --vocab vocab.txt --arch transformer --threads 2 --steps 20 --seed 5 --test-stories 20 \
  --out tf.safetensors 2>tf.log >/dev/null || { cat tf.log; fail "train a transformer"; }
tf=(-m tf.safetensors --test-stories 20 --threads 2)
"$STORYLM" sae train slice.txt "${tf[@]}" "${small[@]}" --hook blocks.1.hook_mlp_out -o sae_tf 2>tf_sae.log >/dev/null ||
  { cat tf_sae.log; fail "sae train on blocks.1.hook_mlp_out"; }
"$STORYLM" sae eval sae_tf slice.txt "${tf[@]}" --json >eval_tf.json 2>/dev/null || fail "sae eval on blocks.1.hook_mlp_out"
"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["d_sae"] == 256 and j["ce_loss_score"] is not None, j' eval_tf.json ||
  fail "eval of the transformer's SAE"
if "$PY" -c "import numpy" 2>/dev/null; then
  "$STORYLM" cache --stories slice.txt "${tf[@]}" -o tf_acts.safetensors 2>/dev/null >/dev/null || fail "storylm cache (transformer)"
  "$PY" "$STORYLM_SOURCE_DIR/tests/sae_reader.py" sae_tf tf_acts.safetensors >tf_numpy.json || fail "the numpy reader (transformer)"
  "$PY" -c '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert abs(a["explained_variance"] - b["explained_variance"]) < 1e-4 and abs(a["l0"] - b["l0"]) < 1e-3, (a, b)' \
    tf_numpy.json eval_tf.json || fail "numpy and sae eval differ on hook_mlp_out"
fi

# Ctrl-C saves an SAE that eval reads, and exits 130
"$STORYLM" sae train slice.txt "${common[@]}" --tokens 200000000 --batch-tokens 256 --expansion 4 -o sae_int 2>int.log >/dev/null &
pid=$!
for _ in $(seq 1 600); do grep -q "^step " int.log 2>/dev/null && break; sleep 0.1; done
kill -INT $pid
rc=0
wait $pid || rc=$?
[[ $rc == 130 ]] || { cat int.log; fail "an interrupted sae train exited $rc, not 130"; }
grep -q "^stopped after" int.log || fail "an interrupted run does not say it stopped"
"$STORYLM" sae eval sae_int slice.txt "${common[@]}" --json >/dev/null 2>&1 || fail "the interrupted run's SAE does not load"

# bad input
expect_error() { # WHAT PATTERN COMMAND...: the command fails and says PATTERN
  local what=$1 pattern=$2
  shift 2
  if "$@" >out.txt 2>err.txt; then fail "$what: exit 0"; fi
  grep -q -- "$pattern" err.txt || { cat err.txt; fail "$what: no '$pattern' in the message"; }
}
expect_error "a missing DIR" "no SAE folder 'nowhere'" "$STORYLM" sae eval nowhere slice.txt "${common[@]}"
expect_error "a hook the model lacks" "the model has no hook point 'blocks.0.hook_resid_post'" \
  "$STORYLM" sae train slice.txt "${common[@]}" --hook blocks.0.hook_resid_post -o sae_x
expect_error "a hook of no row a position" "a row of numbers a position" \
  "$STORYLM" sae train slice.txt "${common[@]}" --hook blocks.0.attn.hook_pattern -o sae_x
expect_error "a bad --kind" "kind" "$STORYLM" sae train slice.txt "${common[@]}" --kind relu -o sae_x
expect_error "no sub-verb" "give train, eval or features" "$STORYLM" sae
mkdir -p cut nan
cp sae1/cfg.json cut/ && head -c 3000 sae1/sae_weights.safetensors >cut/sae_weights.safetensors
expect_error "a truncated weights file" "sae_weights.safetensors" "$STORYLM" sae eval cut slice.txt "${common[@]}"
cp sae1/cfg.json nan/
"$PY" - sae1/sae_weights.safetensors nan/sae_weights.safetensors <<'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
off = json.loads(b[8:8 + n])["W_dec"]["data_offsets"][0]
b[8 + n + off:8 + n + off + 4] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(b)
PY
expect_error "a NaN" "W_dec holds a value that is not finite" "$STORYLM" sae eval nan slice.txt "${common[@]}"
echo "e2e_sae: ok"
