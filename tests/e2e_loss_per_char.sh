#!/usr/bin/env bash
# Loss per character: eval (stories and --text) and train's summary report
# the loss in nats and bits per byte of the stories' UTF-8 text, each story's
# bytes as the file holds them (trimmed) plus one for its closing [EOS]; the
# characters counted here from the file itself, by hand, and the nats checked
# against the loss per token times the positions.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# ASCII white space around the stories, and accented letters (2 bytes each,
# read by the tokenizer as one plain letter)
{ first_stories 120; printf '  Zo\xc3\xab s\xc3\xa2t by the caf\xc3\xa9.  \n'; } >stories.txt
"$STORYLM" vocab stories.txt -o vocab.txt 2>/dev/null || fail "storylm vocab"
"$STORYLM" train stories.txt --vocab vocab.txt --steps 6 --batch 4 --test-stories 12 --threads 2 --eval-every 3 \
  -o m.safetensors --json >train.json 2>train.log || { cat train.log; fail "training the test's model"; }
"$STORYLM" eval stories.txt -m m.safetensors --test-stories 12 --json >test.json || fail "eval --json"
"$STORYLM" eval stories.txt -m m.safetensors --all --json >all.json || fail "eval --all --json"
"$STORYLM" eval --text 'Lily sat by the café.' -m m.safetensors --json >text.json || fail "eval --text --json"
"$STORYLM" eval stories.txt -m m.safetensors --all >all.txt || fail "eval"
grep -q 'loss (bits/character)' all.txt || fail "eval's table has no bits per character"
grep -q 'nats (.*bits) per character' train.log || fail "train's summary has no loss per character"

"$PY" - <<'EOF' || fail "loss per character"
import json, math
stories = [s.strip(b" \t\r\n\v\f") for s in open("stories.txt", "rb").read().split(b"\n<|endoftext|>\n")]
stories = [s for s in stories if s]
d = json.load(open("all.json"))
assert d["stories_evaluated"] == len(stories), (d["stories_evaluated"], len(stories))
want = sum(len(s) + 1 for s in stories)  # each story's bytes and its closing [EOS]
assert d["characters"] == want, (d["characters"], want)
for name in ("all.json", "test.json", "text.json"):
    d = json.load(open(name))
    nats = d["loss"] * d["positions"] / d["characters"]
    assert math.isclose(d["loss_per_char"], nats, rel_tol=1e-6), (name, d["loss_per_char"], nats)
    assert math.isclose(d["bits_per_char"], nats / math.log(2), rel_tol=1e-6), name
t = json.load(open("text.json"))
assert t["characters"] == len("Lily sat by the café.".encode()) == 22, t["characters"]
tr, te = json.load(open("train.json")), json.load(open("test.json"))
# train's last evaluation is of the model it ends with; kept or not, its
# characters are eval's: the same ratio of characters to positions
assert math.isclose(tr["test_loss_per_char"] / tr["test_loss"], te["loss_per_char"] / te["loss"], rel_tol=1e-9), (tr, te)
assert math.isclose(tr["test_bits_per_char"], tr["test_loss_per_char"] / math.log(2), rel_tol=1e-9)
EOF
echo "loss per character: ok"
