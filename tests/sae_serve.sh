# A server with an SAE beside a model (sourced by tests/e2e_serve_sae.sh and
# tests/e2e_features_page.sh): a small model trained on 200 stories (20 held
# out) and a TopK SAE on its hook_hidden trained in seconds, in
# models/tiny.sae beside models/tiny.safetensors; models/plain.safetensors, the
# same model with no SAE beside it; `storylm serve` on a free port ($port),
# stopped at exit. $sae_cli: the CLI's arguments that read the same stories.
mkdir -p models data
first_stories 200 > data/slice.txt
"$STORYLM" train data/slice.txt --vocab "$STORYLM_SOURCE_DIR/models/vocab.txt" --threads 2 --steps 30 --seed 5 \
  --test-stories 20 --out models/tiny.safetensors 2>train.log >/dev/null || { cat train.log; fail "train"; }
"$STORYLM" sae train data/slice.txt -m models/tiny.safetensors --test-stories 20 --threads 2 --tokens 20480 \
  --batch-tokens 1024 --seed 3 --expansion 4 --k 8 --hook hook_hidden -o models/tiny.sae 2>sae.log >/dev/null ||
  { cat sae.log; fail "sae train"; }
cp models/tiny.safetensors models/plain.safetensors
sae_cli=(sae features models/tiny.sae data/slice.txt -m models/tiny.safetensors --test-stories 20 --threads 1 --json)
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$STORYLM" serve --model models/tiny.safetensors --port "$port" --stories data/slice.txt --data-dir data > serve.log 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/api/models" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { cat serve.log >&2; fail "storylm serve exited"; }
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/api/models" >/dev/null || { cat serve.log >&2; fail "storylm serve does not answer on port $port"; }
