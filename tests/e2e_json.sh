#!/usr/bin/env bash
# Every verb's --json follows docs/json.md (issue 14): the test walks the verb
# list of `storylm --help`, runs each verb that prints results with --json on
# a model it trains itself, and checks that stdout is one JSON object (one a
# line for tokenize and bench) whose "command" is the verb, that "model",
# "stories" and "ablation" are the objects the page describes, and that the
# numbers are numbers. A verb with --json that this test does not run, or a
# verb without --json that prints results, fails it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

first_stories 300 >stories.txt
"$STORYLM" vocab stories.txt -o vocab.txt 2>/dev/null || fail "storylm vocab"
"$STORYLM" train stories.txt --vocab vocab.txt --steps 6 --batch 4 --test-stories 20 --threads 2 --eval-every 0 \
  -o m.safetensors >/dev/null 2>train.log || { cat train.log; fail "training the test's model"; }
"$STORYLM" stories stories.txt -m m.safetensors --ids --split train >ids.txt 2>/dev/null || fail "stories --ids"
"$STORYLM" --help | awk '/^verbs:/ {on = 1; next} on && NF {print $1}' >verbs.txt
for verb in $(cat verbs.txt); do
  # grep reads it all (no -q): quitting early would kill a help of more than one buffer with SIGPIPE
  "$STORYLM" "$verb" --help | grep -E -- '^ +--json' > /dev/null && echo "$verb"
done >with_json.txt

"$PY" - "$STORYLM" verbs.txt with_json.txt <<'EOF'
import json, subprocess, sys

S, verbs, with_json = sys.argv[1], open(sys.argv[2]).read().split(), set(open(sys.argv[3]).read().split())
M = ["--model", "m.safetensors", "--threads", "2"]
ST = ["stories.txt", "--test-stories", "20"]
TEXT = "Lily found a shell. She"
# how each verb is run (several runs for some); --ablate where the verb takes it
RUNS = {
    "ablate": [ST + M + ["--heads", "3"]],
    "attend": [[TEXT] + M, [TEXT] + M + ["--ablate", "3"], [TEXT] + M + ["--wide"]],
    "attribute": [[TEXT] + M],
    "cache": [[TEXT, "-o", "cache.safetensors"] + M],
    "circuits": [["--stories", "stories.txt", "--test-stories", "5", "--top-k", "2"] + M],
    "detect": [ST + M + ["--random", "2", "--length", "5"]],
    "distances": [M],
    "eval": [ST + M, ST + M + ["--ablate", "2,5"], ["--text", TEXT] + M],
    "generate": [["Lily found a", "-n", "5", "-s", "1"] + M],
    "guess": [[TEXT] + M, [TEXT] + ST + M + ["--word", "lily"]],
    "heads": [ST + M],
    "icl": [ST + M + ["--early", "2", "--late", "20", "--min-stories", "1"]],
    "info": [["--model", "m.safetensors"]],
    "lookup": [[TEXT] + M + ["--head", "2"]],
    "patch": [["Tom had a red ball.", "Sue had a red ball."] + M],
    "pieces": [ST + M],
    "repeats": [ST + M, ST + M + ["--text", TEXT]],
    "stats": [ST + M],
    "sae": [["train", "stories.txt", "--test-stories", "20", "-o", "s.sae", "--tokens", "2048", "--batch-tokens", "512",
             "--expansion", "2", "--k", "4"] + M, ["eval", "s.sae"] + ST + M, ["features", "s.sae"] + ST + M + ["--latents", "2"]],
    "stories": [["stories.txt", "--test-stories", "20", "--model", "m.safetensors"], ["stories.txt", "--vocab", "vocab.txt"]],
    "swap": [ST + M],
    "trace": [[TEXT] + M],
    "train": [["stories.txt", "--vocab", "vocab.txt", "--steps", "2", "--batch", "2", "--test-stories", "10",
               "--threads", "2", "-o", "t.safetensors"]],
    "version": [[]],
    "vocab": [["stories.txt", "-o", "v.txt", "--size", "300"], ["--model", "m.safetensors", "-o", "v2.txt"]],
    "tokenize": [["--model", "m.safetensors", TEXT], ["--words", TEXT]],
    "bench": [["train", "ids.txt", "--steps", "1", "--batch", "2", "--threads", "2"],
              ["generate", "m.safetensors", "--tokens", "4"], ["encode", "vocab.txt", "stories.txt"]],
}
ALWAYS_JSON = {"bench"}          # prints one JSON line for scripts/bench, no table
NO_RESULTS = {"serve": "a server: its API answers with the verbs' JSON",
              "plot": "draws an SVG file, prints no results"}
NUMERIC = {"parameters", "test_stories", "stories", "loss", "accuracy", "perplexity", "positions", "step", "steps",
           "seconds", "cpu_seconds", "tokens_seen", "train_loss", "test_loss", "test_accuracy", "file_bytes",
           "size", "stories_evaluated", "train_stories", "head", "id", "count", "threads", "merges"}

def fail(msg):
    sys.exit(f"FAILED: {msg}")

def check_numbers(v, where):
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "metadata":  # info: the file's __metadata__ as stored, a map of strings (docs/json.md)
                continue
            if k in NUMERIC and not (x is None or isinstance(x, (int, float))) and not isinstance(x, (dict, list)):
                fail(f"{where}: '{k}' is {x!r}, not a number")
            check_numbers(x, f"{where}.{k}")
    elif isinstance(v, list):
        for x in v:
            check_numbers(x, where)

def check(verb, j, args):
    where = f"storylm {verb} {' '.join(args)}"
    if not isinstance(j, dict) or list(j)[:1] != ["command"] or j["command"] != verb:
        fail(f"{where}: 'command' is not the first key or not '{verb}': {str(j)[:200]}")
    m = j.get("model")
    if m is not None:
        if not (isinstance(m, dict) and isinstance(m.get("file"), str) and m.get("arch") in ("attention", "window8")
                and isinstance(m.get("parameters"), int)):
            fail(f"{where}: 'model' is not {{file, arch, parameters}}: {m}")
    s = j.get("stories")
    if s is not None:
        if not (isinstance(s, dict) and isinstance(s.get("file"), str) and isinstance(s.get("stories"), int)
                and (verb == "vocab" or isinstance(s.get("test_stories"), int))):
            fail(f"{where}: 'stories' is not {{file, stories, test_stories}}: {s}")
    a = j.get("ablation")
    if a is not None:
        if not (isinstance(a, dict) and isinstance(a.get("text"), str) and isinstance(a.get("heads"), list)
                and all(isinstance(h, int) for h in a["heads"]) and a.get("mode") in ("none", "zero", "mean")
                and (a["mode"] == "none") == (a["heads"] == [])):
            fail(f"{where}: 'ablation' is not {{text, heads, mode}}: {a}")
        if "--ablate" in args and a["heads"] != [int(h) for h in args[args.index("--ablate") + 1].split(",")]:
            fail(f"{where}: 'ablation' does not name the heads given: {a}")
    check_numbers(j, where)

checked = 0
for verb in verbs:
    if verb in NO_RESULTS:
        if verb in with_json:
            fail(f"{verb} takes --json but the test thinks it prints no results")
        print(f"{verb}: no results to print ({NO_RESULTS[verb]})")
        continue
    if verb not in with_json and verb not in ALWAYS_JSON:
        if verb == "generate":  # its --json is the generate helper's work (docs/json.md names its keys)
            print("generate: no --json in this build yet")
            continue
        fail(f"{verb} prints results but has no --json")
    if verb not in RUNS:
        fail(f"{verb} takes --json but this test does not know how to run it: add it to RUNS")
    for args in RUNS[verb]:
        cmd = [S, verb] + args + ([] if verb in ALWAYS_JSON else ["--json"])
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-2000:]}")
        lines = [l for l in p.stdout.splitlines() if l.strip()]
        docs = [json.loads(l) for l in lines] if verb in ("tokenize", "bench") else [json.loads(p.stdout)]
        if not docs:
            fail(f"{' '.join(cmd)}: no JSON on stdout")
        for j in docs:
            check(verb, j, args)
        checked += 1
    print(f"{verb}: --json follows docs/json.md")
print(f"{checked} runs checked")
EOF
echo "e2e_json: all passed"
