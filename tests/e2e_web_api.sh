#!/usr/bin/env bash
# The static site's API without a browser: scripts/build_web writes the site, and
# node runs its Web Worker (tests/web_worker.mjs runs web/worker.js as the site has
# it, on storylm's server code in WebAssembly) on the page's requests: the model
# list, the attention view by POST, by GET with a query and in a batch, the
# tokens, the loss, the test stories, health, a generation in one piece, and
# refusals. The views' answers must be the --json of the WebAssembly build's own
# CLI (node build-web/storylm.mjs VERB), byte for byte as parsed JSON. Skipped
# (77) without node, or without emscripten and a built build-web (scripts/build_wasm).
set -euo pipefail
source "$(dirname "$0")/common.sh"
src=$STORYLM_SOURCE_DIR
command -v node >/dev/null || skip "node is not installed (scripts/setup installs it)"
build_static_site

text="Lily found a shiny shell on the beach. She put it in her pocket and ran home to show her mom."
W() { (cd site && node "$build/storylm.mjs" "$@"); } # the site's models by the paths the worker lists them
W attend "$text" --model models/tinystories.safetensors --pos 5 --head 1 --json > attend.json
W trace "$text" --model models/tinystories.safetensors --json > trace.json
W eval --text "$text" --model models/tinystories.safetensors --json > loss.json
W generate "$text" --model models/tinystories.safetensors -n 20 --seed 7 > generate.txt 2>/dev/null

"$PY" - "$text" > requests.json <<'PY'
import json, sys, urllib.parse
text = sys.argv[1]
attend = {"text": text, "pos": 5, "head": 1}
q = urllib.parse.urlencode({"text": text, "pos": 5, "head": 1})
print(json.dumps([
    {"method": "GET", "url": "/api/models"},
    {"method": "POST", "url": "/api/attend", "body": attend},
    {"method": "GET", "url": "/api/attend?" + q},
    {"method": "POST", "url": "/api/batch", "body": {"requests": [{"url": "/api/attend", "body": attend},
                                                                  {"url": "/api/trace", "body": {"text": text}}]}},
    {"method": "POST", "url": "/api/tokenize", "body": {"text": text}},
    {"method": "POST", "url": "/api/loss", "body": {"text": text}},
    {"method": "GET", "url": "/api/stories"},
    {"method": "GET", "url": "/api/health"},
    {"method": "POST", "url": "/api/generate", "body": {"prompt": text, "max_tokens": 20, "seed": 7}},
    {"method": "POST", "url": "/api/nothing", "body": {}},
    {"method": "POST", "url": "/api/attend", "body": dict(attend, model="models/tinystories-window8.safetensors")},
    {"method": "POST", "url": "/api/attend", "body": dict(attend, model="models/tinystories-transformer.safetensors")},
    {"method": "POST", "url": "/api/attend", "body": dict(attend, colour=1)},
]))
PY
node "$src/tests/web_worker.mjs" site requests.json > answers.json || fail "the worker did not answer"

"$PY" - <<'PY' || fail "the worker's answers differ from the CLI's"
import json
a = json.load(open("answers.json"))
load = lambda f: json.load(open(f))
body = lambda i: json.loads(a[i]["body"])
def check(ok, what):
    if not ok: raise SystemExit("FAILED: " + what)
    print("ok:", what)
for i, x in enumerate(a[:9]):
    check(x["status"] == 200, "request %d answered 200 (%s)" % (i, x["body"][:200] if x["status"] != 200 else "ok"))
models = body(0)
check(models["default"] == "models/tinystories.safetensors" and
      [m["path"] for m in models["models"]] == ["models/tinystories.safetensors", "models/tinystories-transformer.safetensors",
                                               "models/tinystories-window8.safetensors"], "/api/models lists the site's three models, the default first")
check(body(1) == load("attend.json"), "POST /api/attend is storylm attend --json")
check(body(2) == body(1), "GET /api/attend with its query answers the same")
batch = body(3)["answers"]
check([x["status"] for x in batch] == [200, 200] and batch[0]["body"] == body(1) and batch[1]["body"] == load("trace.json"),
      "/api/batch answers attend and trace as alone (trace --json)")
check([t["piece"] for t in body(4)] == [t["token"] for t in body(1)["tokens"]][1:], "/api/tokenize gives attend's tokens (without its [EOS])")
check(body(5)["loss"] == load("loss.json")["loss"], "/api/loss is eval --text --json's loss: %s" % body(5)["loss"])
stories = body(6)
check(stories["file"] == "models/tinystories-test.txt" and len(stories["stories"]) == 100, "/api/stories: the 100 test stories of models/tinystories-test.txt")
check(body(7)["ok"] is True and "connections" not in body(7), "/api/health: ok, and no connections without a socket")
gen = a[8]
events = [blk for blk in gen["body"].split("\n\n") if blk]
done = [e for e in events if e.startswith("event: done")]
check(gen["mime"].startswith("text/event-stream") and len(done) == 1 and events[-1] == done[0] and len(events) == 21,
      "/api/generate: 20 token events and the done event, in one piece")
text = json.loads(done[0].split("data: ", 1)[1])["text"]
check(text.strip().lower() == open("generate.txt").read().strip().lower(), "its text is storylm generate --seed 7's (names aside)")
check(a[9]["status"] == 404 and "error" in body(9), "an unknown route: 404 with its error")
check(a[10]["status"] == 400 and "head" in body(10)["error"], "window8 has no heads to attend with: 400, " + body(10)["error"])
check(a[11]["status"] == 200 and body(11)["tokens"] == body(1)["tokens"], "the transformer's attention view answers")
check(a[12]["status"] == 400 and "colour" in body(12)["error"], "a field of no parameter: 400, " + body(12)["error"])
PY
echo "e2e_web_api: the worker answers as the CLI"

# A site whose models have no held-out stories beside them: the worker's server reads its
# stories file, data/stories.txt (fetched gzipped when a request needs it; here 300 stories),
# as the CLI does: the test stories of storylm stories, the far repeats of storylm repeats.
cp -r site plain && rm plain/models/tinystories-test.txt
first_stories 300 > plain_stories.txt && gzip -9n < plain_stories.txt > plain/data/stories.txt.gz
"$PY" - <<'PY'
import json
site = json.load(open("plain/site.json"))
site["files"] = [f for f in site["files"] if not f.endswith("-test.txt")]
json.dump(site, open("plain/site.json", "w"))
json.dump([{"method": "POST", "url": "/api/attend", "body": {"text": "Lily found a shell.", "pos": 3, "head": 1}},
           {"method": "GET", "url": "/api/stories"},
           {"method": "POST", "url": "/api/repeats", "body": {"story": 2}}], open("plain_requests.json", "w"))
PY
node "$src/tests/web_worker.mjs" plain plain_requests.json > plain_answers.json || fail "the worker did not answer on the plain site"
mkdir -p plain_cli/data && ln -s ../plain/models plain_cli/models && cp plain_stories.txt plain_cli/data/stories.txt
(cd plain_cli && node "$build/storylm.mjs" stories data/stories.txt --model models/tinystories.safetensors --json) > plain_stories.json 2>/dev/null
(cd plain_cli && node "$build/storylm.mjs" repeats data/stories.txt --model models/tinystories.safetensors --story 2 --json) > plain_repeats.json 2>/dev/null
"$PY" - <<'PY' || fail "the worker does not read its stories file as the CLI does"
import json
a = json.load(open("plain_answers.json"))
def check(ok, what):
    if not ok: raise SystemExit("FAILED: " + what)
    print("ok:", what)
check([x["status"] for x in a] == [200, 200, 200], "the plain site answers every request %s" % [x["body"][:120] for x in a if x["status"] != 200])
stories, cli = json.loads(a[1]["body"]), json.load(open("plain_stories.json"))
check(stories["file"] == "data/stories.txt" and [s["index"] for s in stories["stories"]] == cli["test"],
      "/api/stories: the %d test stories of data/stories.txt, as storylm stories holds them out" % len(cli["test"]))
check(json.loads(a[2]["body"]) == json.load(open("plain_repeats.json")), "/api/repeats is storylm repeats data/stories.txt --json")
PY
echo "e2e_web_api: the worker reads its stories file as the CLI"
