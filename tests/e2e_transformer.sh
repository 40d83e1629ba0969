#!/usr/bin/env bash
# End to end: storylm train --arch transformer learns (the test loss falls
# below the uniform log(2000)); two runs of one seed and thread count give the
# same weights, and so does a run stopped and resumed (and mpirun -np 2); info shows the exact
# parameter count and TransformerLens's names; generate and eval read it;
# --ablate L:H switches its heads off (the other probes: e2e_tfprobes);
# bad flags are refused.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 200 > slice.txt
common=(--vocab vocab.txt --threads 2 --eval-every 20 --seed 5 --test-stories 20 --arch transformer)

"$STORYLM" train slice.txt "${common[@]}" --steps 40 --out tf.safetensors 2> train.log || { cat train.log; fail "train"; }
loss=$("$STORYLM" eval slice.txt --model tf.safetensors --test-stories 20 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
echo "test loss after 40 steps: $loss"
"$PY" -c "import sys; sys.exit(0 if $loss < 6.5 else 1)" || fail "test loss $loss is not below log(2000) = 7.6 by much"

"$STORYLM" info --model tf.safetensors > info.txt
grep -q "374,480 parameters" info.txt || fail "info does not say 374,480 parameters"
grep -q "transformer: 2 pre-LN blocks, d_model 64, 8 heads of 8, d_mlp 256 (gelu), n_ctx 256" info.txt || fail "info: architecture"
for name in embed.W_E pos_embed.W_pos blocks.1.attn.W_Q blocks.1.attn.b_V blocks.0.attn.W_O blocks.0.mlp.W_in \
            blocks.1.ln2.w ln_final.b unembed.W_U unembed.b_U; do
  grep -q "  $name " info.txt || fail "info lists no $name"
done
"$PY" - tf.safetensors <<'PY' || fail "the file's header does not carry TransformerLens's config"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
h = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
md = h["__metadata__"]
assert md["act_fn"] == "gelu" and md["d_model"] == "64" and md["n_layers"] == "2" and md["d_head"] == "8"
assert md["positional_embedding_type"] == "standard" and md["d_mlp"] == "256" and md["n_ctx"] == "256"
assert h["blocks.0.attn.W_Q"]["shape"] == [8, 64, 8] and h["unembed.W_U"]["shape"] == [64, 2000]
PY

# The same seed and threads: the same bits; stopped at 20 and resumed: the same weights.
"$STORYLM" train slice.txt "${common[@]}" --steps 40 --out again.safetensors 2> again.log || { cat again.log; fail "train again"; }
[[ "$(tensor_sums tf.safetensors)" == "$(tensor_sums again.safetensors)" ]] || fail "two runs of one seed differ"
"$STORYLM" train slice.txt "${common[@]}" --steps 40 --stop-at 20 --out part.safetensors 2> part.log || { cat part.log; fail "train --stop-at"; }
"$STORYLM" train slice.txt --vocab vocab.txt --threads 2 --eval-every 20 --test-stories 20 --steps 40 --resume \
  --out part.safetensors 2> resume.log || { cat resume.log; fail "train --resume"; }
[[ "$(tensor_sums tf.safetensors)" == "$(tensor_sums part.safetensors)" ]] || fail "resumed run differs from the uninterrupted one"
if "$STORYLM" train slice.txt --vocab vocab.txt --threads 2 --steps 40 --resume --d-model 32 --out part.safetensors 2> bad.err; then
  fail "resume with another --d-model was accepted"
fi
grep -q "d_model 64" bad.err || fail "resume with another --d-model: unclear message"

# Under mpirun -np 2 with one thread each: the model of one process with 2 threads (when MPI is here).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # CI runs as root
if command -v mpirun > /dev/null && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 300 \
     mpirun --oversubscribe -x ASAN_OPTIONS -np 2 "$STORYLM" train slice.txt "${common[@]}" --threads 1 --steps 6 \
     --out mpi.safetensors 2> mpi.log; then
  "$STORYLM" train slice.txt "${common[@]}" --steps 6 --out one.safetensors 2> one.log || { cat one.log; fail "train 6 steps"; }
  [[ "$(tensor_sums mpi.safetensors)" == "$(tensor_sums one.safetensors)" ]] || fail "np 2 x 1 thread differs from 1 process x 2 threads"
else
  echo "mpirun part not run: $(tail -n 2 mpi.log 2>/dev/null || echo no mpirun)"
fi

# Another shape and scheme trains and says so.
"$STORYLM" train slice.txt "${common[@]}" --steps 4 --layers 1 --d-model 32 --n-heads 4 --d-head 8 --d-mlp 64 \
  --act relu --position-scheme t5 --out small.safetensors 2> small.log || { cat small.log; fail "train a small t5 transformer"; }
"$STORYLM" info --model small.safetensors | grep "1 pre-LN blocks, d_model 32, 4 heads of 8, d_mlp 64 (relu)" >/dev/null || fail "small: info"
"$STORYLM" distances --model small.safetensors --layer 1 --up-to 3 | grep "head 3" >/dev/null || fail "distances of a t5 transformer's block"

# Generation is deterministic when greedy.
a=$("$STORYLM" generate --model tf.safetensors -t 0 -n 30 "Lily found a")
b=$("$STORYLM" generate --model tf.safetensors -t 0 -n 30 "Lily found a")
[[ -n "$a" && "$a" == "$b" ]] || fail "greedy generation is not deterministic"
echo "greedy: $a"

# heads reads every block's heads.
"$STORYLM" heads slice.txt --model tf.safetensors --test-stories 20 > heads.txt || fail "heads of a transformer"
grep -q " 2:7 " heads.txt || { cat heads.txt; fail "heads: no row for head 2:7"; }

# detect scores every block's heads (previous-token, duplicate, induction).
"$STORYLM" detect slice.txt --model tf.safetensors --test-stories 20 > detect.txt || fail "detect on a transformer"
grep -q "2:7" detect.txt || { cat detect.txt; fail "detect: no row for head 2:7"; }

# --ablate L:H switches a head off (zero mode) in eval, generate and ablate.
"$STORYLM" ablate slice.txt --model tf.safetensors --test-stories 20 --heads 2:3 > ablate.txt || fail "ablate a transformer's head"
grep -q "^2:3 " ablate.txt || { cat ablate.txt; fail "ablate: no row for head 2:3"; }
"$STORYLM" eval slice.txt --model tf.safetensors --test-stories 20 --ablate 1:0,2:7 | grep "heads 1:0,2:7 set to 0" >/dev/null || fail "eval --ablate"
"$STORYLM" generate --model tf.safetensors --ablate 1:2 -t 0 -n 5 "Lily" > /dev/null || fail "generate --ablate"

# Bad flags are refused.
for bad in "--layers 9" "--act tanh" "--d-head 100" "--score dot"; do
  if "$STORYLM" train slice.txt "${common[@]}" --steps 2 $bad --out bad.safetensors 2> bad.err; then fail "train $bad was accepted"; fi
  grep -q "error" bad.err || fail "train $bad gave no message"
done
if "$STORYLM" train slice.txt --vocab vocab.txt --steps 2 --d-model 32 --out bad.safetensors 2> bad.err; then
  fail "--d-model without --arch transformer was accepted"
fi
echo "e2e_transformer: all passed"
