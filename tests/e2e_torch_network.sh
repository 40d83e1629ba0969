#!/usr/bin/env bash
# The page's "The algorithm" offers the chapter's network in PyTorch too
# (python/examples/attention_network.py, the regions the page shows): on the
# shipped model its loss on a story equals `storylm eval --text`, and Adam's
# steps on that story lower it. Skipped (77) where Debian's python3-torch is
# not installed (CI does not install it).
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no PyTorch for $PY (apt-get install python3-torch)"
MODEL="$STORYLM_SOURCE_DIR/models/tinystories.safetensors"
text="Lily found a shiny shell on the beach. She put it in her pocket and ran home to show her mom."
"$STORYLM" vocab --model "$MODEL" -o vocab.txt > /dev/null
pieces=$("$STORYLM" tokenize --vocab vocab.txt "$text")
"$PY" "$STORYLM_SOURCE_DIR/python/examples/attention_network.py" "$MODEL" "$pieces" 3 > torch.txt ||
  fail "the PyTorch network failed"
want=$("$STORYLM" eval --text "$text" --model "$MODEL" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
"$PY" - "$want" torch.txt <<'PY' || fail "PyTorch and storylm disagree: $(cat torch.txt)"
import sys
lines = open(sys.argv[2]).read().split("\n")
got = float(lines[0].split()[1]); want = float(sys.argv[1])
steps = [float(l.split()[-1]) for l in lines[1:] if l]
assert abs(got - want) < 1e-4, (got, want)
assert len(steps) == 3 and steps[-1] < got, steps
print("PyTorch's loss %.6f = storylm eval --text %.6f; after 3 Adam steps %.6f" % (got, want, steps[-1]))
PY
