# scripts/proxy_stories end to end: the proxy holds the first N training stories
# and every held-out test story of the file, so storylm holds out the very same
# stories in it (the eval of a model on the proxy equals its eval on the file);
# bad arguments are refused with a message.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
P="$STORYLM_SOURCE_DIR/scripts/proxy_stories"
M="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
first_stories 300 > full.txt
export STORYLM
"$P" full.txt 180 -o proxy.txt --test-stories 20 2> err.txt || fail "proxy_stories failed: $(cat err.txt)"
"$STORYLM" stories proxy.txt --json --test-stories 20 > p.json
"$STORYLM" stories full.txt --json --test-stories 20 > f.json
"$PY" - p.json f.json <<'PY' || fail "the proxy does not hold 180 training stories and the same 20 test stories"
import json, sys
p, f = (json.load(open(x)) for x in sys.argv[1:])
assert p["stories"]["stories"] == 200 and p["train_stories"] == 180 and p["stories"]["test_stories"] == 20, p["stories"]
PY
"$STORYLM" eval proxy.txt -m "$M" --test-stories 20 --json > pe.json
"$STORYLM" eval full.txt -m "$M" --test-stories 20 --json > fe.json
"$PY" - pe.json fe.json <<'PY' || fail "a model's test loss on the proxy differs from its test loss on the file"
import json, sys
a, b = (json.load(open(x)) for x in sys.argv[1:])
assert a["loss"] == b["loss"] and a["positions"] == b["positions"], (a["loss"], b["loss"])
print(f"proxy and file: test loss {a['loss']:.6f} on {a['positions']} positions")
PY
# bad arguments
rc=0; "$P" full.txt 0 -o x.txt 2> err.txt || rc=$?
[[ $rc != 0 ]] && grep -q "at least 1" err.txt || fail "N=0 was not refused: $(cat err.txt)"
rc=0; "$P" full.txt 100 -o x.txt --test-stories 20 2> err.txt || rc=$?
[[ $rc != 0 ]] && grep -q "at least 180" err.txt || fail "too small an N for 20 test stories was not refused: $(cat err.txt)"
rc=0; "$P" full.txt 100000 -o x.txt 2> err.txt || rc=$?
[[ $rc != 0 ]] && grep -q "only 270 training stories" err.txt || fail "too large an N was not refused: $(cat err.txt)"
rc=0; "$P" missing.txt 10 -o x.txt 2> err.txt || rc=$?
[[ $rc != 0 ]] && grep -q "failed" err.txt || fail "a missing file was not refused: $(cat err.txt)"
rc=0; "$P" full.txt 180 -o no/such/dir/x.txt --test-stories 20 2> err.txt || rc=$?
[[ $rc != 0 ]] && grep -q "cannot write no/such/dir/x.txt" err.txt && ! grep -q Traceback err.txt || fail "an unwritable output was not refused with a message: $(cat err.txt)"
echo "ok"
