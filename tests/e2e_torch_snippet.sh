#!/usr/bin/env bash
# docs/model-file.md's PyTorch loader (the python block of "The model file in
# PyTorch", taken from that page itself) reads a storylm model file with nothing but torch and continues a prompt
# greedily: the same tokens as `storylm generate -t 0`. Skipped (77) where
# Debian's python3-torch is not installed (CI does not install it).
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
"$PY" -c 'import torch' 2>/dev/null || { echo "SKIPPED: no PyTorch for $PY (apt-get install python3-torch)"; exit 77; }
MODEL="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
SNIPPET=snippet.py
awk '/^## The model file in PyTorch/ {s = 1} s && /^```python/ {c = 1; next} c && /^```/ {exit} c' \
  "$STORYLM_SOURCE_DIR/docs/model-file.md" > "$SNIPPET"
grep -q "^import .*torch" "$SNIPPET" && (( $(wc -l < "$SNIPPET") <= 25 )) || fail "no short PyTorch block in docs/model-file.md's 'The model file in PyTorch'"

# The model's own vocabulary, for storylm tokenize.
"$PY" - "$MODEL" > vocab.txt <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", raw[:8])[0]
v = json.loads(raw[8:8 + n])["__metadata__"]["vocab"]; sys.stdout.write(v if v.endswith("\n") else v + "\n")
PY
for prompt in "Lily found a" "Once upon a time, Tom" "The dog"; do
  pieces=$("$STORYLM" tokenize --vocab vocab.txt "$prompt")
  "$PY" "$SNIPPET" "$MODEL" "$pieces" 40 > torch.txt || fail "the PyTorch loader failed on '$prompt'"
  "$STORYLM" generate "$prompt" -t 0 -n 40 --model "$MODEL" > storylm.txt 2> /dev/null || fail "storylm generate '$prompt'"
  "$STORYLM" tokenize --vocab vocab.txt - < storylm.txt > storylm_pieces.txt
  cmp -s <(tr -s ' \n' '  ' < torch.txt | sed 's/ *$//') <(tr -s ' \n' '  ' < storylm_pieces.txt | sed 's/ *$//') || {
    echo "torch:   $(cat torch.txt)"; echo "storylm: $(cat storylm_pieces.txt)"; fail "PyTorch and storylm disagree on '$prompt'"; }
done
echo "PASSED: the PyTorch loader continues 3 prompts exactly as storylm generate -t 0"
