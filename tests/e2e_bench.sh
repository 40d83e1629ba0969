#!/usr/bin/env bash
# End to end: storylm bench's three measurements (what scripts/bench runs)
# give sane numbers, and scripts/bench's PyTorch peer is the same network as
# storylm's: its loss on the held-out stories of a storylm model equals
# storylm eval's (when /usr/bin/python3 has torch; skipped, and said so, if not).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])['$2'])" "$1"; }

# The first 300 stories of the project's own corpus, a model trained a little on them.
first_stories 300 > slice.txt
"$STORYLM" train slice.txt --vocab vocab.txt --steps 30 --eval-every 0 --test-stories 20 --out m.safetensors 2> train.log ||
  { cat train.log; fail "train"; }
"$STORYLM" stories slice.txt --model m.safetensors --test-stories 20 --ids --split train > train_ids.txt
"$STORYLM" stories slice.txt --model m.safetensors --test-stories 20 --ids --split test > test_ids.txt

for threads in 1 2; do
  j=$("$STORYLM" bench train train_ids.txt --steps 3 --threads "$threads")
  echo "bench train, $threads threads: $j"
  [[ $(field "$j" threads) == "$threads" ]] || fail "bench train ran on $(field "$j" threads) threads, not $threads"
  python3 - "$j" <<'EOF' || fail "bench train: implausible numbers"
import json, math, sys
d = json.loads(sys.argv[1])
# 3 steps of 8 stories, each story of the corpus well over 20 tokens; a fresh model's loss near log(2000) = 7.6
assert d["tokens"] > 3 * 8 * 20 and 0 < d["seconds"] < 60 and 0 < d["cpu_seconds"], d
assert math.isfinite(d["loss"]) and 5 < d["loss"] < 8.5, d
EOF
done

# A variant is timed on the same stories (the same tokens) with its own network (another loss).
base=$("$STORYLM" bench train train_ids.txt --steps 2 --threads 1)
for v in "--layers 2" "--position-scheme rope --score additive" "--arch transformer"; do
  j=$("$STORYLM" bench train train_ids.txt --steps 2 --threads 1 $v)
  echo "bench train $v: $j"
  [[ $(field "$j" tokens) == $(field "$base" tokens) ]] || fail "bench train $v timed other stories: $j against $base"
  [[ $(field "$j" loss) != $(field "$base" loss) ]] || fail "bench train $v trained the default network: $j"
done
if grep -qw avx512_bf16 /proc/cpuinfo; then # every architecture trains in BF16 (storylm train takes it), so bench times it
  for arch in window8 transformer; do
    j=$("$STORYLM" bench train train_ids.txt --steps 2 --threads 1 --arch $arch --precision bf16) ||
      fail "bench train --arch $arch --precision bf16 was refused"
    [[ $(field "$j" precision) == bf16 ]] || fail "bench train --arch $arch --precision bf16: $j"
  done
fi
# The transformer's shapes scripts/bench times: the shipped one's and the tied one of 4 blocks (docs/transformer.md's counts).
for v in "--layers 2:358096" "--layers 4 --tie-embeddings:330064"; do
  j=$("$STORYLM" bench train train_ids.txt --steps 1 --threads 1 --arch transformer --position-scheme alibi ${v%%:*})
  [[ $(field "$j" parameters) == "${v##*:}" ]] || fail "bench train --arch transformer ${v%%:*}: $j"
done
if "$STORYLM" bench train train_ids.txt --tie-embeddings 2> bad.err; then fail "bench train --tie-embeddings of the attention network was accepted"; fi
grep -q -- "--tie-embeddings" bad.err || fail "bench train --tie-embeddings: the message does not name it"
if "$STORYLM" bench train train_ids.txt --position-scheme spiral 2> bad.err; then fail "bench train --position-scheme spiral was accepted"; fi
grep -q "spiral" bad.err || fail "bench train --position-scheme spiral: the message does not name it"
# A wrong name is a usage error (exit 2), as in storylm train and generate, before any file is read.
for v in "train train_ids.txt --position-scheme spiral" "generate no-such.safetensors --precision fp16" \
  "train train_ids.txt --score cosine" "train train_ids.txt --arch lstm"; do
  rc=0; "$STORYLM" bench $v 2> bad.err || rc=$?
  [[ $rc == 2 ]] || fail "bench $v exited $rc, not 2 (a usage error): $(cat bad.err)"
  grep -q "${v##* }" bad.err || fail "bench $v: the message does not name ${v##* }: $(cat bad.err)"
done

j=$("$STORYLM" bench generate m.safetensors --tokens 50 --prompt "Lily found a")
echo "bench generate: $j"
[[ $(field "$j" tokens) == 50 && $(field "$j" prompt_tokens) -ge 3 ]] || fail "bench generate: $j"
# --json, which every verb takes, prints the same line (bench prints nothing else)
jj=$("$STORYLM" bench generate m.safetensors --tokens 50 --prompt "Lily found a" --json)
[[ $(field "$jj" tokens) == 50 ]] || fail "bench generate --json: $jj"
j=$("$STORYLM" bench generate m.safetensors --tokens 20 --samples 4 --prompt "Lily found a")
echo "bench generate --samples 4: $j"
[[ $(field "$j" tokens) == 80 && $(field "$j" samples) == 4 ]] || fail "bench generate --samples 4: $j"
python3 -c "import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d['cpu_seconds'] > 0 else 1)" "$j" ||
  fail "bench generate --samples 4: no CPU time: $j"

j=$("$STORYLM" bench encode vocab.txt slice.txt)
echo "bench encode: $j"
[[ $(field "$j" bytes) == $(wc -c < slice.txt) ]] || fail "bench encode did not read the whole file: $j"
ids=$("$STORYLM" tokenize --vocab vocab.txt --ids --lines slice.txt | wc -w)
[[ $(field "$j" ids) == "$ids" ]] || fail "bench encode made $(field "$j" ids) ids, storylm tokenize --lines $ids"

if "$STORYLM" bench fly 2> bad.err; then fail "bench fly was accepted"; fi
grep -q "error" bad.err || fail "bench fly: no message"
if "$STORYLM" bench train missing.txt 2> bad.err; then fail "bench train of a missing file was accepted"; fi
grep -q "missing.txt" bad.err || fail "bench train missing.txt: the message does not name the file"

# scripts/bench --only batch: the shipped model's generation rows alone, each a median with its ratio.
python3 "$STORYLM_SOURCE_DIR/scripts/bench" "$STORYLM" --only batch --reps 1 > batch.out 2> batch.err ||
  { cat batch.err; fail "scripts/bench --only batch"; }
cat batch.out
grep -Eq '64 samples against 1 \(shipped model\) +\| [0-9]+ tok/s .*\| [0-9.]+x +\| >= 3x' batch.out ||
  fail "scripts/bench --only batch: no 64-sample row with its ratio"
if grep -qw avx512_bf16 /proc/cpuinfo; then
  grep -Eq "BF16, 64 samples against FP32's 1 +\| [0-9]+ tok/s .*\| [0-9.]+x +\| >= 3x" batch.out ||
    fail "scripts/bench --only batch: no BF16 row"
else
  grep -q "generation in BF16" batch.out || fail "scripts/bench --only batch: no word on BF16 without avx512_bf16"
fi

# The PyTorch peer computes what storylm computes.
if /usr/bin/python3 -c "import torch" 2> /dev/null; then
  peer=$(/usr/bin/python3 "$STORYLM_SOURCE_DIR/scripts/torch_peer.py" loss m.safetensors test_ids.txt)
  ours=$("$STORYLM" eval slice.txt --model m.safetensors --test-stories 20 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
  echo "held-out loss: storylm $ours, PyTorch peer $peer"
  python3 -c "import sys; sys.exit(0 if abs($ours - $peer) < 1e-4 * $ours else 1)" ||
    fail "the PyTorch peer's loss $peer differs from storylm's $ours: not the same network"
  # its batched generation (the 64-sample row of scripts/bench): B stories of N tokens each
  printf 'generate 6 3\ntrain_tf 1\nquit\n' | /usr/bin/python3 "$STORYLM_SOURCE_DIR/scripts/torch_peer.py" serve train_ids.txt m.safetensors \
    > peer.out || fail "the PyTorch peer's serve"
  python3 -c "import json,sys; d=json.loads(open('peer.out').read().splitlines()[1]); sys.exit(0 if d['tokens'] == 18 and d['cpu_seconds'] > 0 else 1)" ||
    fail "the PyTorch peer's batched generation: $(cat peer.out)"
  python3 -c "import json,sys; d=json.loads(open('peer.out').read().splitlines()[2]); sys.exit(0 if d['tokens'] > 0 and d['cpu_seconds'] > 0 else 1)" ||
    fail "the PyTorch peer's transformer training (train_tf): $(cat peer.out)"
else
  echo "e2e_bench: /usr/bin/python3 has no torch: the PyTorch peer check is skipped"
fi
echo "e2e_bench: all passed"
