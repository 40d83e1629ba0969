#!/usr/bin/env bash
# The playground page in a real browser (issue 10): starts the real `storylm serve`
# on a free local port, loads the page in Debian's headless Chromium through
# puppeteer-core (tests/browser, pinned by its package-lock.json) and
#   - types a story, clicks a token, picks a head and checks the weights the page
#     shows against `storylm attend --json`, and with all 8 heads in view against
#     `attend --wide --json`;
#   - checks the next-token guesses against `storylm trace --json`, switches a head
#     off, sees guesses and loss change and checks them against `trace --ablate`,
#     and with its mean output against `trace --ablate-mode mean`;
#   - renames the hero and checks each mention's probabilities against `storylm swap --text`;
#   - streams a generation and checks its text against `storylm generate --seed`,
#     then stops a long one;
#   - sees a refused stories path shown as an error;
#   - starts a 20-step training, sees its loss curve grow, uses the new model.
# Screenshots go to $STORYLM_TEST_TMP/shots (look at them). Without chromium, node
# or the npm packages the test says SKIPPED and exits 77.
set -euo pipefail
source "$(dirname "$0")/common.sh"
src="$STORYLM_SOURCE_DIR"
require_chromium
"$STORYLM" serve --help >/dev/null 2>&1 || skip "this storylm has no serve verb"

# The server's world: the shipped models under models/, the stories under data/
# (the only folder training may read), its own folder for the models it trains.
mkdir -p models/snapshots data shots
cp "$src/models/tinystories.safetensors" models/
# the default model's own snapshots (Secret 1 compares snapshots of the same run only), and
# one of another run, which must not be offered beside it
cp "$src"/models/snapshots/tinystories.step*.safetensors models/snapshots/ 2>/dev/null || true
cp "$src/models/snapshots/tinystories-plain.step250.safetensors" models/snapshots/
# every shipped model, as the picker of an installed server lists them (two-layer ones, the
# transformer, window8); not their held-out stories, so that the server's stories are
# data/stories.txt for every model, as the CLI's numbers below are (e2e_serve_teach tests those)
cp "$src"/models/tinystories-*.safetensors models/
cp "$src/data/stories.txt" data/stories.txt
model="$STORYLM_TEST_TMP/models/tinystories.safetensors"

port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$STORYLM" serve --model "$model" --port "$port" --stories data/stories.txt --data-dir data > serve.log 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/api/models" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { cat serve.log >&2; fail "storylm serve exited"; }
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/api/models" >/dev/null || { cat serve.log >&2; fail "storylm serve does not answer on port $port"; }

# What the CLI says, for the page to be checked against, at its default
# threads (the server computes a request on one thread; the numbers have the
# same bits at any thread count).
text="Lily found a shiny shell on the beach. She put it in her pocket and ran home to show her mom. Her mom smiled and asked Lily where"
pos=9 head=2 ablate=4
gen_n=40 gen_t=0.8 gen_k=0 gen_p=0.95 gen_seed=7
"$STORYLM" attend "$text" --model "$model" --pos $pos --head $head --json > attend.json
"$STORYLM" attend "$text" --model "$model" --pos $pos --wide --json > attend_wide.json
"$STORYLM" trace "$text" --model "$model" --json > trace.json
"$STORYLM" trace "$text" --model "$model" --ablate $ablate --json > trace_ablated.json
"$STORYLM" trace "$text" --model "$model" --ablate $ablate --ablate-mode mean --stories data/stories.txt --json > trace_mean.json
baseline=()
[[ -f models/tinystories-window8.safetensors ]] && baseline=(--baseline models/tinystories-window8.safetensors)
"$STORYLM" swap data/stories.txt --text "$text" --names fred "${baseline[@]}" --model "$model" --json > swap.json
"$STORYLM" generate "$text" --model "$model" -n $gen_n -t $gen_t -k $gen_k -p $gen_p --seed $gen_seed > generate.txt
"$STORYLM" generate "$text" --model "$model" -n 1 --json > generate_defaults.json # the sampler's defaults, as the CLI has them
# Every model the picker lists: its shape, its loss on the story (eval --text), with a head
# of its last layer off when it has several, and that layer's distance scores (L, its
# layers in info's config); Secret 3 (ablate) on the default model and Secret 4 (pieces)
# on it and on the two-layer model (the page shows the two side by side). The server
# computes on one thread: --threads 1.
for f in models/*.safetensors models/snapshots/*.safetensors; do
  b=$(basename "$f")
  "$STORYLM" eval --text "$text" --model "$f" --threads 1 --json > "eval-$b.json"
  "$STORYLM" info --model "$f" --json > "info-$b.json"
  "$STORYLM" info --model "$f" | sed -n 's/^architecture  *//p' > "desc-$b.txt"   # how the page must describe it
  "$STORYLM" guess "$text" --model "$f" --threads 1 --json > "guess-$b.json"
  last=$("$PY" -c 'import json,sys; print(json.load(sys.stdin)["config"].get("layers", 1))' < "info-$b.json")
  if (( last > 1 )) && "$STORYLM" distances --model "$f" --layer "$last" --up-to 1 --json > "dist-$b.json" 2>/dev/null; then
    "$STORYLM" eval --text "$text" --model "$f" --ablate "$last:1" --threads 1 --json > "eval-off-$b.json"
    # the attention view of the last layer, where attend reads a layer (--layer L)
    "$STORYLM" attend "$text" --model "$f" --layer "$last" --pos $pos --wide --json > "attend-layer-$b.json" 2>/dev/null ||
      rm -f "attend-layer-$b.json"
  fi
done
"$STORYLM" ablate data/stories.txt --model "$model" --threads 1 --json > ablate.json
pieces_names=zarko,lily
"$STORYLM" pieces data/stories.txt --model "$model" --names $pieces_names --threads 1 --json > "pieces-tinystories.safetensors.json"
for f in models/*.safetensors; do # the models of several layers, one of which the page shows beside it
  [[ -f "dist-$(basename "$f").json" ]] &&
    "$STORYLM" pieces data/stories.txt --model "$f" --names $pieces_names --threads 1 --json > "pieces-$(basename "$f").json"
done
export pieces_names
first_stories 300 > upload.txt   # a stories file of one's own, sent from the page
upload_stories=$("$STORYLM" stories upload.txt --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["stories"]["stories"])')
export upload_stories

# A 256-token story for timing clicks: the story told again and again, cut to fit.
long="$text"
while (( $("$STORYLM" tokenize --model "$model" --ids "$long" | wc -w) < 256 )); do long="$long. $text"; done
while (( $("$STORYLM" tokenize --model "$model" --ids "$long" | wc -w) + 1 > 256 )); do long="${long% *}"; done
long_tokens=$(( $("$STORYLM" tokenize --model "$model" --ids "$long" | wc -w) + 1 ))   # with [EOS]
export long long_tokens
"$PY" - "$chromium" "$text" $pos $head $ablate $gen_n $gen_t $gen_k $gen_p $gen_seed > expect.json <<'EOF'
import glob, json, os, sys
chromium, text, pos, head, ablate, n, t, k, p, seed = sys.argv[1:]
load = lambda f: json.load(open(f))

def models():
    out = {}
    for f in sorted(glob.glob("models/*.safetensors") + glob.glob("models/snapshots/*.safetensors")):
        b = os.path.basename(f)
        info = load("info-%s.json" % b)
        cfg = info["config"]
        layers = int(cfg.get("layers", 1))
        heads = 0 if info["model"]["arch"] == "window8" else int(cfg["n_heads"])
        m = {"layers": layers, "heads": heads, "loss": load("eval-%s.json" % b)["loss"], "guesses": load("guess-%s.json" % b)["guesses"]}
        if os.path.exists("eval-off-%s.json" % b):
            m["distances_last_layer"] = load("dist-%s.json" % b)["scores"][1]
            m["loss_ablated"] = load("eval-off-%s.json" % b)["loss"]
        if os.path.exists("attend-layer-%s.json" % b):
            m["attend_last_layer"] = load("attend-layer-%s.json" % b)
        m["run"] = info.get("metadata", {}).get("trained_run")
        m["arch"] = info["model"]["arch"]
        m["description"] = open("desc-%s.txt" % b).read().strip()
        m["mlp"] = "act_fn" in cfg   # its blocks have an MLP
        m["readout"] = "residual" if "ln_final" in " ".join(t["name"] for t in info["tensors"]) else "tanh"
        out[b] = m
    return out
print(json.dumps({
    "chromium": chromium, "text": text, "pos": int(pos), "head": int(head), "ablate_head": int(ablate),
    "attend": load("attend.json"), "attend_wide": load("attend_wide.json"), "trace": load("trace.json"), "trace_ablated": load("trace_ablated.json"),
    "trace_mean": load("trace_mean.json"),
    "swap": load("swap.json"), "swap_name": "fred",
    "generate": {"max_tokens": int(n), "temperature": float(t), "top_k": int(k), "top_p": float(p),
                 "seed": int(seed), "text": open("generate.txt").read(),
                 "defaults": {k: load("generate_defaults.json")[k] for k in ["temperature", "top_k", "top_p"]}},
    "train_stories": "data/stories.txt", "train_steps": 20, "train_every": 5,
    "long_text": os.environ["long"], "long_tokens": int(os.environ["long_tokens"]),
    "model_file": "tinystories.safetensors", "models": models(), "ablate": load("ablate.json"),
    "archs": sorted({load(f)["model"]["arch"] for f in glob.glob("info-*.json")}),
    "pieces_names": os.environ["pieces_names"],
    "upload_file": os.path.abspath("upload.txt"), "upload_stories": int(os.environ["upload_stories"]),
    "pieces": {f[len("pieces-"):-len(".json")]: load(f) for f in sorted(glob.glob("pieces-*.json"))}}))
EOF

if ! node "$src/tests/browser/playground.mjs" "http://127.0.0.1:$port/" expect.json "$STORYLM_TEST_TMP/shots"; then
  echo "--- storylm serve's log:" >&2; tail -30 serve.log >&2
  fail "the page does not show what the CLI computes (screenshots in $STORYLM_TEST_TMP/shots)"
fi
echo "e2e_browser: all checks passed (screenshots in $STORYLM_TEST_TMP/shots)"
