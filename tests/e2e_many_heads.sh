#!/usr/bin/env bash
# Heads past a machine word. Transformers of 40 heads in all (5 blocks of 8)
# and of 128 (8 blocks of 16), trained one step here, run generate, eval,
# attend, trace, cache and ablate with heads above 32 and above 64 switched off
# (the sanitizer build reports any shift past a word): switching head 39 off
# changes the numbers, switching none off (ablate's first row) does not.
# A head is named H or L:H wherever one is named: attend --head 2:3 is
# attend --layer 2 --head 3, --head 12 reads a block of 16 heads, and a head
# past the model's is refused with its range (exit 1; 2 for a value that
# names no head), by the server (400) and by Python; a file claiming more
# heads than a model may have is refused at load.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
M="$STORYLM_SOURCE_DIR/models"
BUILD=$(dirname "$STORYLM")
T="Lily found a red ball. She gave the ball to Tom and Lily smiled."
first_stories 300 > s.txt
tiny=(train s.txt --vocab "$M/vocab.txt" --arch transformer --d-model 16 --d-head 4 --d-mlp 16 --steps 1
  --threads 1 --test-stories 20 --seed 3)
"$STORYLM" "${tiny[@]}" --layers 5 --n-heads 8 -o tf40.safetensors > train40.log 2>&1 || { cat train40.log; fail "train 5 blocks of 8"; }
"$STORYLM" "${tiny[@]}" --layers 8 --n-heads 16 -o tf128.safetensors > train128.log 2>&1 || { cat train128.log; fail "train 8 blocks of 16"; }

# json KEY < FILE: a value of a JSON answer ("a.b" for nested keys).
json() { "$PY" -c 'import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."): v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v))' "$1"; }
run() { # NAME ARGS...: storylm ARGS --json into NAME.json, failing the test on any error or report
  local name=$1; shift
  "$STORYLM" "$@" --json > "$name.json" 2> "$name.err" || { cat "$name.err"; fail "storylm $*"; }
}

# every verb, with a head above 32 (5:7 = 39; 8:15 = 127) and one above 64 (5:3 of 16 = 67) off
for m in tf40 tf128; do
  if [[ $m == tf40 ]]; then off=5:7 others=1:0,5:7; else off=8:15 others=5:3,8:15; fi
  run "$m.eval" eval s.txt -m $m.safetensors --test-stories 20 --threads 1
  run "$m.eval_off" eval s.txt -m $m.safetensors --test-stories 20 --threads 1 --ablate $off
  run "$m.eval_others" eval s.txt -m $m.safetensors --test-stories 20 --threads 1 --ablate $others
  [[ $(json loss < $m.eval.json) != $(json loss < $m.eval_off.json) ]] || fail "$m: --ablate $off changes no loss"
  [[ $(json ablation.names < $m.eval_off.json) == "\"$off\"" ]] || fail "$m: the report names $(json ablation.names < $m.eval_off.json), not $off"
  run "$m.gen" generate Lily -m $m.safetensors -n 12 -t 0 --seed 1
  run "$m.gen_off" generate Lily -m $m.safetensors -n 12 -t 0 --seed 1 --ablate $others
  [[ $(json samples.0.tokens.0.logprob < $m.gen.json) != $(json samples.0.tokens.0.logprob < $m.gen_off.json) ]] ||
    fail "$m: generate --ablate $others changes no log-probability"
  run "$m.attend" attend "$T" -m $m.safetensors --head $off --ablate $others
  run "$m.trace" trace "$T" -m $m.safetensors --layer 5 --ablate $others
  run "$m.cache" cache "$T" -m $m.safetensors --ablate $off -o $m.cache.safetensors
  run "$m.ablate" ablate s.txt -m $m.safetensors --test-stories 20 --threads 1 --heads $off
  # ablate's first row, nothing off, is eval's loss; its second, the head off, eval --ablate's
  "$PY" - $m.ablate.json $m.eval.json $m.eval_off.json "$off" <<'EOF' || fail "$m: ablate --heads against eval"
import json, sys
a, e, off = [json.load(open(f)) for f in sys.argv[1:4]]
rows = a["ablations"]
assert [r["heads"] for r in rows] == ["none", sys.argv[4]], rows
assert abs(rows[0]["loss"] - e["loss"]) < 1e-9 and abs(rows[1]["loss"] - off["loss"]) < 1e-9, (rows, e, off)
EOF
done
# the cache holds the switched-off head's z as 0 and its neighbours' as computed
"$PY" - tf128.cache.safetensors <<'EOF' || fail "the cache of a head above 64 switched off"
import sys
sys.path.insert(0, __import__("os").environ["STORYLM_SOURCE_DIR"] + "/scripts")
from read_safetensors import load
t = load(sys.argv[1])[0]
z = t["blocks.7.attn.hook_z"]  # [N, H, d_head]
assert z.shape[1] == 16 and (z[:, 15] == 0).all() and (z[:, 14] != 0).any(), z.shape
EOF

# L:H wherever a head is named: --head 8:12 is --layer 8 --head 12 on 16 heads a block
run h812 attend "$T" -m tf128.safetensors --head 8:12
run l8h12 attend "$T" -m tf128.safetensors --layer 8 --head 12
cmp -s h812.json l8h12.json || fail "attend --head 8:12 differs from --layer 8 --head 12"
run lookup812 lookup "$T" -m tf128.safetensors --head 8:12
run lookup_l8h12 lookup "$T" -m tf128.safetensors --layer 8 --head 12
cmp -s lookup812.json lookup_l8h12.json || fail "lookup --head 8:12 differs from --layer 8 --head 12"
[[ $(json head < lookup812.json) == 12 && $(json layer < lookup812.json) == 8 ]] || fail "lookup --head 8:12 reads another head"
[[ $(json keys.0.head < h812.json) == 12 ]] || fail "attend --head 8:12 shows head $(json keys.0.head < h812.json)"
L2="$M/tinystories-layers2.safetensors"
if [[ -f $L2 ]]; then
  run h23 attend "$T" -m "$L2" --head 2:3
  run l2h3 attend "$T" -m "$L2" --layer 2 --head 3
  cmp -s h23.json l2h3.json || fail "attend --head 2:3 differs from --layer 2 --head 3"
fi

# refused: the value and the model's range in one message
refused() { # CODE WORDS -- ARGS
  local code=$1 words=$2; shift 3
  set +e; "$STORYLM" "$@" > bad.out 2> bad.err; local rc=$?; set -e
  [[ $rc -eq $code ]] || { cat bad.err; fail "'$*' exited $rc, not $code"; }
  grep -qF -- "$words" bad.err || { cat bad.err; fail "'$*' did not say '$words'"; }
}
range="this model has layers 1 to 8 of heads 0 to 15 (L:H, e.g. 8:15)"
refused 1 "--head 8:16 is out of range: $range" -- attend "$T" -m tf128.safetensors --head 8:16
refused 1 "--head 16 is out of range: $range" -- attend "$T" -m tf128.safetensors --layer 2 --head 16
refused 1 "--ablate 1:0,9:0: layer 9 is out of range: $range" -- eval s.txt -m tf128.safetensors --ablate 1:0,9:0
refused 1 "--heads 8:99: head 99 is out of range: $range" -- ablate s.txt -m tf128.safetensors --heads 8:99
refused 1 "--head 6:1 is out of range: this model has layers 1 to 5 of heads 0 to 7" -- circuits -m tf40.safetensors --stories s.txt --head 6:1
refused 2 "--head x names no head" -- attend "$T" -m tf128.safetensors --head x
refused 2 "--head 2:3 names layer 2, and the layer given is 3" -- attend "$T" -m tf128.safetensors --layer 3 --head 2:3

# a file claiming more heads a block, or more blocks, than a model may have is refused at load
"$PY" - tf128.safetensors <<'EOF'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
for name, edit in [("h33", {"n_heads": "33"}), ("l9", {"layers": "9"})]:
    header = json.loads(data[8:8 + n])
    header["__metadata__"].update(edit)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    open(name + ".safetensors", "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
EOF
refused 1 "metadata n_heads '33' is not a whole number from 1 to 32" -- info -m h33.safetensors
refused 1 "metadata layers '9' is not a whole number from 1 to 8" -- eval s.txt -m l9.safetensors --ablate 9:0

# the server: "head" and "heads" as numbers or names, "ablate" as a list of both
if "$STORYLM" help | grep -q '^  serve '; then
  mkdir -p data && cp s.txt data/stories.txt
  "$PY" - "$STORYLM" "$T" "$range" <<'EOF' || fail "the server's head fields"
import os, sys
sys.path.insert(0, os.environ["STORYLM_SOURCE_DIR"] + "/tests/serve")
from client import Server, cli_json
S, T, rng = sys.argv[1:4]
srv = Server(S, "--model", "tf128.safetensors", "--stories", "s.txt", "--threads", "2")
try:
    want = cli_json(S, "attend", T, "-m", "tf128.safetensors", "--head", "8:12", "--threads", "1")
    for body in ({"head": "8:12"}, {"head": 12, "layer": 8}, {"head": "12", "layer": 8}):
        status, got = srv.post("/api/attend", {"text": T, **body})
        assert status == 200 and got == want, (body, status, str(got)[:300])
    status, got = srv.get("/api/attend?text=Lily&head=8:12")
    assert status == 200, (status, got)
    status, got = srv.post("/api/attend", {"text": T, "head": "8:16"})
    assert status == 400 and got["error"] == '"head": "8:16" is out of range: ' + rng, (status, got)
    want = cli_json(S, "eval", "--text", T, "-m", "tf128.safetensors", "--ablate", "5:3,8:15", "--threads", "1")
    status, got = srv.post("/api/eval", {"text": T, "ablate": ["5:3", "8:15"]})
    assert status == 200 and got["loss"] == want["loss"], (status, got, want)
    status, got = srv.post("/api/eval", {"text": T, "ablate": [3, "9:0"]})
    assert status == 400 and got["error"] == '"ablate": "3,9:0": layer 9 is out of range: ' + rng, (status, got)
    status, got = srv.post("/api/ablate", {"heads": "8:99"})
    assert status == 400 and "head 99 is out of range: " + rng in got["error"], (status, got)
    status, got = srv.post("/api/attend", {"text": T, "head": [1, 2]})  # a list where one head goes
    assert status == 400, (status, got)
    # a head field is a field of the view's table: its type checked, a field beside it no view takes refused
    status, got = srv.post("/api/attend", {"text": T, "head": {"layer": 2}})
    assert status == 400 and got["error"].startswith('"head": {"layer":2} is not a head or a list of heads'), got
    status, got = srv.post("/api/attend", {"text": T, "head": "8:12", "heda": 1})
    assert status == 400 and got["error"] == 'unknown field "heda"', (status, got)
finally:
    srv.stop_cleanly()
print("server: head fields OK")
EOF
fi

# Python: ablate= on a model of 128 heads (its passes under the sanitizers too)
"$PY" -c 'import numpy' 2>/dev/null || skip "numpy is missing for $PY"
python_preload "$BUILD"
want=$(json loss < <("$STORYLM" eval --text "$T" -m tf128.safetensors --ablate 5:3,8:15 --json))
text=$(json samples.0.text < <("$STORYLM" generate Lily -m tf128.safetensors -n 8 --seed 2 --ablate 8:15 --json))
"${PRELOAD[@]}" env STORYLM_LIBRARY="$BUILD/libstorylm.so" PYTHONPATH="$STORYLM_SOURCE_DIR/python" \
  "$PY" - tf128.safetensors "$T" "$want" "$range" "$text" <<'EOF' || fail "Python's ablate="
import json, sys, storylm
m = storylm.load(sys.argv[1])
T, want, rng, text = sys.argv[2], float(sys.argv[3]), sys.argv[4], json.loads(sys.argv[5])
assert m.loss(T, ablate="5:3,8:15") == want, (m.loss(T, ablate="5:3,8:15"), want)
assert m.loss(T, ablate=["5:3", "8:15"]) == want and m.loss(T) != want
logits, cache = m.run_with_cache(T, ablate="8:15")
assert (cache["blocks.7.attn.hook_z"][:, 15] == 0).all()
got = m.generate("Lily", max_tokens=8, seed=2, ablate="8:15")
assert got == text, (got, text)
try:
    m.loss(T, ablate="8:16")
    raise SystemExit("ablate=8:16 was accepted")
except storylm.StorylmError as err:
    assert err.message == "ablate='8:16': head 16 is out of range: " + rng, err.message
print("python: ablate= OK")
EOF
echo "many heads: OK"
