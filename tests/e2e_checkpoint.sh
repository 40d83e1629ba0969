#!/usr/bin/env bash
# Model files end to end: numpy alone (scripts/read_safetensors.py) reads what
# storylm writes bit for bit; `storylm info` shows the sizes and counts and the
# same checksums numpy computes; missing and damaged files get clear messages.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree
READER="$STORYLM_SOURCE_DIR/scripts/read_safetensors.py"
T="$STORYLM_TEST_TMP/checkpoint" # a folder of its own inside the scratch one (emptied by common.sh)
mkdir -p "$T"
[ -x "$PY" ] || fail "$PY is missing: this test reads models with /usr/bin/python3 and numpy"
"$PY" -c 'import numpy' 2>/dev/null || fail "numpy is missing for $PY: install python3-numpy"

# Models with known numbers (and raw dumps of them) come from the unit test's program.
HELPER=""
for candidate in "$(dirname "$STORYLM")/tests/test_checkpoint" "$PWD/test_checkpoint"; do
    if [ -x "$candidate" ]; then HELPER=$candidate && break; fi
done
[ -n "$HELPER" ] || fail "cannot find the test_checkpoint program beside $STORYLM"
"$HELPER" --write-models "$T"

for arch in attention window8; do
    model="$T/$arch.safetensors"

    # numpy reads every tensor, of the model and of its optimizer state, as the C side holds it
    "$PY" - "$READER" "$T" "$arch" <<'EOF'
import os, sys
import numpy as np
reader, d, arch = sys.argv[1:4]
sys.path.insert(0, os.path.dirname(reader))
import read_safetensors as rs

def check(ok, what):
    if not ok:
        sys.exit(f"FAIL {arch}: {what}")

layout = [(n, int(o), int(s)) for n, o, s in (line.split() for line in open(f"{d}/{arch}.layout.txt"))]
def compare(path, prefix, dump):
    tensors, meta = rs.load(path)
    numbers = np.fromfile(f"{d}/{arch}.{dump}.f32", dtype="<f4")  # the C side's floats, as in memory
    for name, offset, size in layout:
        t = tensors[prefix + name]
        check(t.dtype == np.float32 and t.size == size, f"{prefix}{name}: {t.dtype} {t.shape}")
        check(np.array_equal(t.ravel().view("<u4"), numbers[offset:offset + size].view("<u4")),
              f"{prefix}{name} differs from the C side's numbers")
    return tensors, meta

tensors, meta = compare(f"{d}/{arch}.safetensors", "", "params")
check(list(tensors) == [n for n, _, _ in layout], f"tensor names {list(tensors)}")
adam, adam_meta = compare(f"{d}/{arch}.adam.safetensors", "m.", "adam_m")
compare(f"{d}/{arch}.adam.safetensors", "v.", "adam_v")
check(len(adam) == 2 * len(layout), "optimizer state tensors")
total = sum(t.size for t in tensors.values())
check(total == {"attention": 352848, "window8": 354896}[arch], f"total {total}")
check(tensors["embedding"].shape == (2000, 32), "embedding shape")
check(tensors["hidden.weight"].shape == ((128, 160) if arch == "attention" else (128, 256)), "hidden.weight shape")
if arch == "attention":
    check(tensors["query"].shape == (8, 32, 8) and tensors["value"].shape == (8, 32, 16), "query/value shapes")
    check(tensors["distance"].shape == (8, 256), "distance shape")
check(meta["format"] == "storylm" and meta["format_version"] == "1" and meta["arch"] == arch, "format keys")
check(meta["vocab_size"] == "2000" and len(meta["vocab"].splitlines()) == 2000, "vocab")
check(meta["vocab"].splitlines()[2:5] == ['"', "\\", "\u00fc"], "escaped vocab lines")
check(meta["data"] == 'stories "one"\n\\two \u00e9.txt', "metadata text")
check(adam_meta["format"] == "storylm-adam" and adam_meta["step"] == meta["step"] == "77", "steps")
check(adam_meta["run_id"] == meta["run_id"] and len(meta["run_id"]) == 16, "run ids")
with open(f"{d}/{arch}.safetensors", "rb") as f:
    n = int.from_bytes(f.read(8), "little")
check((8 + n) % 8 == 0, "data start not 8-byte aligned")
EOF

    # info --json agrees with numpy: names, shapes, counts, sums and byte checksums
    "$STORYLM" info --model "$model" --json >"$T/$arch.info.json"
    "$PY" "$READER" "$model" --json >"$T/$arch.numpy.json"
    "$PY" - "$T/$arch.info.json" "$T/$arch.numpy.json" "$model" "$arch" <<'EOF'
import json, math, os, sys
info_path, numpy_path, model, arch = sys.argv[1:5]
info, ref = json.load(open(info_path)), json.load(open(numpy_path))
def check(ok, what):
    if not ok:
        sys.exit(f"FAIL {arch} info --json: {what}")
m = info["model"]
check(info["command"] == "info" and m["file"] == model, "command and model file")
check(m["parameters"] == {"attention": 352848, "window8": 354896}[arch], f"parameters {m['parameters']}")
check(m["arch"] == arch and info["vocab_size"] == 2000 and info["config"]["row_dim"] == 32, "config")
check(m["file_bytes"] == os.path.getsize(model), "file size")
check([t["name"] for t in info["tensors"]] == [t["name"] for t in ref["tensors"]], "tensor order")
for ours, theirs in zip(info["tensors"], ref["tensors"]):
    for key in ("shape", "count", "fnv1a64"):
        check(ours[key] == theirs[key], f"{ours['name']} {key}: {ours[key]} vs numpy {theirs[key]}")
    # the sums agree to the last bit or two: cJSON prints 15 digits where they round-trip closely enough
    check(math.isclose(ours["sum"], theirs["sum"], rel_tol=1e-13, abs_tol=1e-13), f"{ours['name']} sum")
    check(ours["nonfinite"] == 0, "nonfinite")
for key, value in info["metadata"].items():
    check(ref["metadata"].get(key) == value, f"metadata {key}")
check(set(info["metadata"]) == {"steps", "seed", "data", "test_loss", "step", "run_id"}, f"keys {set(info['metadata'])}")
check(info["optimizer"] == {"path": model[:-len(".safetensors")] + ".adam.safetensors", "step": 77, "pairs": True},
      f"optimizer {info['optimizer']}")
EOF

    # the table
    "$STORYLM" info --model "$model" >"$T/$arch.info.txt"
    want_total=$([ "$arch" = attention ] && echo 352,848 || echo 354,896)
    grep -q "total *$want_total parameters" "$T/$arch.info.txt" || fail "$arch: no total $want_total in info"
    grep -q "^architecture  $arch" "$T/$arch.info.txt" || fail "$arch: no architecture line"
    grep -q "^vocabulary    2,000 tokens" "$T/$arch.info.txt" || fail "$arch: no vocabulary line"
    grep -q "^  embedding  *\[2000, 32\]  *64,000" "$T/$arch.info.txt" || fail "$arch: no embedding row"
    grep -q "^  test_loss  *3.14159" "$T/$arch.info.txt" || fail "$arch: no test_loss"
    grep -q "step 77, pairs with this model" "$T/$arch.info.txt" || fail "$arch: optimizer not shown"
done
grep -q "^  distance  *\[8, 256\]  *2,048" "$T/attention.info.txt" || fail "no distance row"
grep -q "^  hidden.weight  *\[128, 256\]  *32,768" "$T/window8.info.txt" || fail "no window8 hidden row"

# A file another writer made (tensors in another order, header unpadded) reads the same.
"$PY" - "$READER" "$T/attention.safetensors" "$T/rewritten.safetensors" <<'EOF'
import json, os, struct, sys
reader, src, dst = sys.argv[1:4]
sys.path.insert(0, os.path.dirname(reader))
import read_safetensors as rs
tensors, meta = rs.load(src)
header, blobs, pos = {"__metadata__": meta}, [], 0
for name in sorted(tensors, reverse=True):
    raw = tensors[name].astype("<f4").tobytes()
    header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [pos, pos + len(raw)]}
    blobs.append(raw)
    pos += len(raw)
text = json.dumps(header, sort_keys=True).encode()
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
EOF
"$STORYLM" info --model "$T/rewritten.safetensors" --json >"$T/rewritten.info.json"
"$PY" - "$T/attention.info.json" "$T/rewritten.info.json" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
if [(t["name"], t["fnv1a64"]) for t in a["tensors"]] != [(t["name"], t["fnv1a64"]) for t in b["tensors"]]:
    sys.exit("FAIL: a rewritten file reads differently")
if b["metadata"] != a["metadata"] or b["optimizer"] is not None:
    sys.exit("FAIL: rewritten metadata")
EOF

# No model here: info falls back to the shipped model as every verb does, and says so;
# a model file that is not there is refused, saying how to get one.
mkdir -p "$T/empty"
if [[ -f $STORYLM_SOURCE_DIR/models/tinystories.safetensors ]]; then
  (cd "$T/empty" && "$STORYLM" info) >"$T/out.txt" 2>"$T/err.txt" || fail "info without a model here: $(cat "$T/err.txt")"
  grep -q "using the shipped model" "$T/err.txt" || fail "info did not say it uses the shipped model: $(cat "$T/err.txt")"
fi
if (cd "$T/empty" && "$STORYLM" info --model model.safetensors) 2>"$T/err.txt"; then fail "info of a missing model succeeded"; fi
grep -q "no model file 'model.safetensors'" "$T/err.txt" || fail "no-model message: $(cat "$T/err.txt")"
grep -q "HINT: train one with 'storylm train STORIES', or give --model" "$T/err.txt" || fail "no-model hint"

# A damaged model: refused with the file named, by storylm and by the numpy reader.
head -c 1000000 "$T/attention.safetensors" >"$T/cut.safetensors"
if "$STORYLM" info --model "$T/cut.safetensors" 2>"$T/err.txt"; then fail "a truncated model was accepted"; fi
grep -q "cut.safetensors'.*run past the end of the data" "$T/err.txt" || fail "truncation message: $(cat "$T/err.txt")"
if "$PY" "$READER" "$T/cut.safetensors" 2>"$T/err.txt"; then fail "numpy reader accepted a truncated file"; fi
grep -q "do not fit" "$T/err.txt" || fail "numpy reader message: $(cat "$T/err.txt")"

# The optimizer state given as the model: the hint says what to give instead.
if "$STORYLM" info --model "$T/attention.adam.safetensors" 2>"$T/err.txt"; then fail "optimizer state taken as a model"; fi
grep -q "HINT: give the model file, not its optimizer state" "$T/err.txt" || fail "adam-as-model hint"

# An optimizer state of another model beside a model: shown as unreadable, the model still fine.
cp "$T/attention.safetensors" "$T/mixed.safetensors"
cp "$T/window8.adam.safetensors" "$T/mixed.adam.safetensors"
"$STORYLM" info --model "$T/mixed.safetensors" >"$T/mixed.txt"
grep -q "cannot be read: .*architecture window8, not attention" "$T/mixed.txt" || fail "mixed pair: $(cat "$T/mixed.txt")"

# Flags.
"$STORYLM" info --help | grep -- "--model FILE" >/dev/null || fail "info --help"
set +e
"$STORYLM" info --bogus 2>/dev/null
rc=$?
set -e
[ "$rc" = 2 ] || fail "unknown flag gave exit code $rc, not 2"

# Without numpy the reader says so instead of a traceback.
mkdir -p "$T/nonumpy/numpy"
echo 'raise ImportError("numpy hidden for the test")' >"$T/nonumpy/numpy/__init__.py"
if PYTHONPATH="$T/nonumpy" "$PY" "$READER" "$T/attention.safetensors" 2>"$T/err.txt"; then fail "reader ran without numpy"; fi
grep -q "numpy is missing" "$T/err.txt" || fail "no-numpy message: $(cat "$T/err.txt")"

echo "e2e_checkpoint: all checks passed"
