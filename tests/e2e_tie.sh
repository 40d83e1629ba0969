#!/usr/bin/env bash
# End to end: --tie-embeddings (the unembedding is the embedding transposed)
# on a tiny transformer trained here: the file holds embed.W_E and no
# unembed.W_U, its metadata says tie_embeddings "true" (an untied file has no
# such key), info counts d_vocab x d_model parameters fewer; eval, generate,
# attribute and circuits read it; a resume keeps it and refuses changing it;
# --arch attention refuses the flag; a file whose tie_embeddings is neither
# true nor false, or that lost the key, is refused naming what is wrong.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 200 > slice.txt
common=(--vocab vocab.txt --threads 2 --eval-every 10 --seed 5 --test-stories 20 --arch transformer --d-model 32 --d-mlp 64)
T="Lily found a red ball. She gave the ball to Tom and Lily smiled."

"$STORYLM" train slice.txt "${common[@]}" --tie-embeddings --steps 20 --out tied.safetensors 2> train.log ||
  { cat train.log; fail "train --tie-embeddings"; }
"$STORYLM" train slice.txt "${common[@]}" --steps 20 --out untied.safetensors 2> train2.log ||
  { cat train2.log; fail "train untied"; }
"$STORYLM" info --model tied.safetensors > info.txt
grep -q -- "--tie-embeddings (W_U = W_E^T)" info.txt || { cat info.txt; fail "info does not say the model is tied"; }
! grep -q "unembed.W_U" info.txt || fail "info lists unembed.W_U of a tied model"
"$STORYLM" info --model tied.safetensors --json > tied.json
"$STORYLM" info --model untied.safetensors --json > untied.json
"$PY" - tied.safetensors untied.safetensors tied.json untied.json <<'PY' || fail "the tied file's tensors, metadata or count"
import json, struct, sys
def header(path):
    b = open(path, "rb").read()
    return json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
tied, untied = header(sys.argv[1]), header(sys.argv[2])
assert "unembed.W_U" not in tied and "unembed.W_U" in untied and tied["embed.W_E"]["shape"] == untied["embed.W_E"]["shape"]
assert tied["__metadata__"]["tie_embeddings"] == "true" and "tie_embeddings" not in untied["__metadata__"]
ti, ui = json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
V, D = untied["embed.W_E"]["shape"]
assert ui["model"]["parameters"] - ti["model"]["parameters"] == V * D, (ui["model"]["parameters"], ti["model"]["parameters"])
assert ti["config"]["tie_embeddings"] is True and "tie_embeddings" not in ui["config"]
PY

for verb in "eval slice.txt --test-stories 20" "generate --seed 3 -n 20 Lily" "attribute --pos 5" \
  "circuits --layer 1 --head 0 --stories slice.txt --test-stories 10"; do
  read -ra args <<< "$verb"
  [[ ${args[0]} == attribute ]] && args+=("$T")
  "$STORYLM" "${args[@]}" --model tied.safetensors --json > out.json 2> err.txt || { cat err.txt; fail "$verb on a tied model"; }
done

# a resume keeps the tie (and its bits go on from the file); changing it is refused
"$STORYLM" train slice.txt "${common[@]}" --tie-embeddings --steps 20 --stop-at 10 --out part.safetensors 2> part.log ||
  { cat part.log; fail "train --stop-at"; }
"$STORYLM" train slice.txt "${common[@]}" --tie-embeddings --steps 20 --resume --out part.safetensors 2> resume.log ||
  { cat resume.log; fail "resume a tied model"; }
cmp -s <(tensor_sums part.safetensors) <(tensor_sums tied.safetensors) || fail "stopped and resumed is not the run's bits"
if "$STORYLM" train slice.txt "${common[@]}" --tie-embeddings --steps 30 --resume --out untied.safetensors 2> err.txt; then
  fail "resuming an untied model with --tie-embeddings was accepted"; fi
grep -q -- "--tie-embeddings out when resuming" err.txt || { cat err.txt; fail "resume --tie-embeddings: message"; }

if "$STORYLM" train slice.txt --vocab vocab.txt --test-stories 20 --steps 2 --tie-embeddings --out a.safetensors 2> err.txt; then
  fail "--tie-embeddings on the attention network was accepted"; fi
grep -q -- "--tie-embeddings are not for --arch attention" err.txt || { cat err.txt; fail "--arch attention --tie-embeddings: message"; }

# the metadata's key: neither true nor false, or gone from a file without unembed.W_U
"$PY" - tied.safetensors <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
for name, value in (("bad.safetensors", "maybe"), ("lost.safetensors", None)):
    if value is None:
        del h["__metadata__"]["tie_embeddings"]
    else:
        h["__metadata__"]["tie_embeddings"] = value
    text = json.dumps(h).encode()
    text += b" " * (-len(text) % 8)
    open(name, "wb").write(struct.pack("<Q", len(text)) + text + b[8 + n:])
PY
if "$STORYLM" info --model bad.safetensors > /dev/null 2> err.txt; then fail "tie_embeddings 'maybe' was accepted"; fi
grep -q "metadata tie_embeddings 'maybe' is not true or false" err.txt || { cat err.txt; fail "bad tie_embeddings: message"; }
if "$STORYLM" info --model lost.safetensors > /dev/null 2> err.txt; then fail "a tied file without its key was accepted"; fi
grep -q "tensor 'unembed.W_U' is missing" err.txt || { cat err.txt; fail "lost tie_embeddings: message"; }
echo "tie: all checks passed"
