#!/usr/bin/env bash
# Model files travel: trained from an absolute path, a model records the
# stories file's name, size and FNV-1a 64 hash (info shows them), never the
# path. Mean ablation and the mean inputs of attribute and circuits then need
# --stories: without it the error (or attribute's note) names the recorded
# file; with another file than the recorded one they warn. A model file from
# before the record, holding the trainer's path, still loads and is named by
# the path's last part.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
S=$STORYLM

mkdir -p trained/deep && first_stories 200 > "$PWD/trained/deep/my stories.txt"
cp "$STORYLM_SOURCE_DIR/models/vocab.txt" vocab.txt
"$S" train "$PWD/trained/deep/my stories.txt" --vocab vocab.txt --threads 2 --steps 3 --eval-every 0 \
  --test-stories 20 --out m.safetensors 2> train.log || { cat train.log; fail "train"; }
mkdir elsewhere && mv m.safetensors elsewhere/ && cd elsewhere
M=m.safetensors

"$S" info --model $M --json > info.json
"$PY" - info.json "../trained/deep/my stories.txt" <<'EOF' || fail "the record in info --json"
import json, os, sys
md = json.load(open(sys.argv[1]))["metadata"]
text = open(sys.argv[2], "rb").read()
h = 0xcbf29ce484222325
for b in text:
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
assert md["data"] == "my stories.txt", md["data"]
assert md["data_bytes"] == str(len(text)), (md["data_bytes"], len(text))
assert md["data_fnv1a64"] == "%016x" % h, (md["data_fnv1a64"], "%016x" % h)
bad = {k: v for k, v in md.items() if "/" in v}
assert not bad, f"paths in the metadata: {bad}"
EOF
"$S" info --model $M > info.txt
grep -q "data_fnv1a64" info.txt && grep -q "my stories.txt" info.txt || fail "info's table lacks the record: $(cat info.txt)"
! grep -aq "$STORYLM_TEST_TMP" $M || fail "the model file holds the folder it was trained in"

# Without --stories: refused, the hint naming the recorded file.
expect_hint() { # what, then the verb's arguments
  local what=$1; shift
  if "$S" "$@" > out.txt 2> err.txt; then fail "$what without --stories succeeded"; fi
  grep -q -- "--stories" err.txt || fail "$what: the error does not ask for --stories: $(cat err.txt)"
  grep -q "HINT.*trained on 'my stories.txt'" err.txt || fail "$what: the hint does not name the file: $(cat err.txt)"
}
expect_hint "trace --ablate-mode mean" trace "Lily found a" --model $M --ablate 3 --ablate-mode mean
expect_hint "generate --ablate-mode mean" generate "Lily found a" --model $M -n 3 --ablate 3 --ablate-mode mean
expect_hint "circuits" circuits --model $M --top 2
"$S" attribute "Lily found a" --model $M --json > attr.json || fail "attribute without --stories"
"$PY" - attr.json <<'EOF' || fail "attribute's note without --stories"
import json, sys
a = json.load(open(sys.argv[1]))
assert any("--stories" in n and "my stories.txt" in n for n in a["notes"]), a["notes"]
assert all(p["mean"] is None for p in a["parts"]), a["parts"]
EOF

# With the recorded file: no warning; with another: a warning saying what differs.
"$S" trace "Lily found a" --model $M --ablate 3 --ablate-mode mean --stories "../trained/deep/my stories.txt" --json > same.json
first_stories 150 > other.txt
"$S" trace "Lily found a" --model $M --ablate 3 --ablate-mode mean --stories other.txt --json > other.json
"$S" circuits --model $M --top 2 --stories other.txt --json > circuits.json
"$PY" - same.json other.json circuits.json <<'EOF' || fail "the warning about other stories"
import json, sys
same, other, circ = (json.load(open(p)) for p in sys.argv[1:4])
assert "mean output" in same["ablation"]["text"] and "warning" not in same["ablation"]["text"], same["ablation"]["text"]
assert "warning: 'other.txt' has" in other["ablation"]["text"] and "my stories.txt" in other["ablation"]["text"], other["ablation"]["text"]
assert any(n.startswith("warning: 'other.txt'") for n in circ["notes"]), circ["notes"]
EOF

# A file from before the record: "data" holds a path, no size or hash. It
# loads; the hint names the path's last part; no warning can be told.
"$PY" - $M old.safetensors <<'EOF' || fail "making an old-style model file"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
md = head["__metadata__"]
md["data"] = "/home/someone/corpora/old-stories.txt"
del md["data_bytes"], md["data_fnv1a64"]
text = json.dumps(head, separators=(",", ":")).encode()
text += b" " * (-(8 + len(text)) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
EOF
"$S" info --model old.safetensors > /dev/null || fail "an old-style model file does not load"
if "$S" trace "Lily found a" --model old.safetensors --ablate 3 --ablate-mode mean 2> err.txt > /dev/null; then
  fail "old file: mean ablation without --stories succeeded"
fi
grep -q "HINT.*trained on 'old-stories.txt'" err.txt || fail "old file: the hint does not name the file: $(cat err.txt)"
"$S" trace "Lily found a" --model old.safetensors --ablate 3 --ablate-mode mean --stories other.txt --json > old.json
"$PY" -c 'import json,sys; a = json.load(open(sys.argv[1]))["ablation"]["text"]; assert "other.txt" in a and "warning" not in a, a' old.json \
  || fail "old file: mean ablation with --stories"
echo "record: name, size and hash in the model; --stories asked for and checked"
