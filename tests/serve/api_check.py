"""storylm serve through real HTTP: every endpoint's JSON equals the CLI's
--json for the same text, model and ablation; hostile requests get a 4xx
JSON error and the server stays up; a client leaving mid-stream stops the
generation; a training run starts, refuses a second, reports its curve and
heads, stops on request after saving, and its model is usable at once."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Server, cli_json, cli_text, wait_for  # noqa: E402

S, SRC = sys.argv[1], sys.argv[2]
M, W8 = "models/tinystories.safetensors", "models/tinystories-window8.safetensors"
STORIES = "data/stories.txt"
TEXT = "Once upon a time, there was a girl named Mia. Mia saw a big dog. The dog ran to Mia and"
checks = 0


def same(what, got, want):
    """Parsed JSON equal, key for key and number for number."""
    global checks
    checks += 1
    if got != want:
        for k in sorted(set(want) | set(got)) if isinstance(want, dict) and isinstance(got, dict) else []:
            if got.get(k) != want.get(k):
                print("  first difference at key %r:\n  server %s\n  cli    %s" % (k, json.dumps(got.get(k))[:300],
                                                                              json.dumps(want.get(k))[:300]))
                break
        raise SystemExit("FAILED: %s: the server's JSON differs from the CLI's" % what)


def ok(what, cond):
    global checks
    checks += 1
    if not cond:
        raise SystemExit("FAILED: " + what)


srv = Server(S, "--model", M, "--stories", STORIES, "--data-dir", "data", "--threads", "2")
try:
    # ---- the page ------------------------------------------------------------------
    with open(os.path.join(SRC, "web", "index.html"), "rb") as f:
        page = f.read()
    status, headers, body = srv.request("GET", "/")
    ok("GET / is web/index.html byte for byte", status == 200 and body == page)
    ok("GET / is HTML", headers.get("Content-Type", "").startswith("text/html"))
    ok("GET /index.html is the same", srv.request("GET", "/index.html")[2] == page)
    web = os.path.join(SRC, "web")
    for root, _, files in os.walk(web):
        for name in files:  # every file of web/ is compiled in and served as it is
            rel = os.path.relpath(os.path.join(root, name), web)
            with open(os.path.join(web, rel), "rb") as f:
                want = f.read()
            status, headers, body = srv.request("GET", "/" + rel)
            ok("GET /%s is web/%s byte for byte" % (rel, rel), status == 200 and body == want)
            kind = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
            ext = os.path.splitext(name)[1]
            ok("GET /%s has its MIME type" % rel, ext not in kind or headers.get("Content-Type", "").startswith(kind[ext]))
    status, _, body = srv.request("GET", "/no-such-file.js")
    ok("GET of a missing file is a 404 with a JSON error", status == 404 and "error" in json.loads(body))

    # ---- models and stories ------------------------------------------------------------
    status, models = srv.get("/api/models")
    paths = [m["path"] for m in models["models"]]
    ok("/api/models lists models/ and its default", status == 200 and M in paths and W8 in paths and models["default"] == M)
    ok("/api/models leaves out optimizer state", not any(".adam." in p for p in paths))
    ok("/api/models leaves out a symlink out of its folders", "models/outside.safetensors" not in paths)
    att = next(m for m in models["models"] if m["path"] == M)
    ok("/api/models says arch, params, vocab_size", att["arch"] == "attention" and att["params"] == 352848 and
       att["vocab_size"] == 2000)
    status, stories = srv.get("/api/stories")
    texts = stories["stories"]
    with open(STORIES) as f:
        corpus = f.read()
    n_test = cli_json(S, "heads", STORIES, "--model", M)["stories"]["test_stories"]
    ok("/api/stories holds the %d held-out test stories, as in the file" % n_test,
       status == 200 and len(texts) == n_test and all(s["text"] and s["text"] in corpus for s in texts))

    # ---- every view equals the CLI --------------------------------------------------------
    same("tokenize", srv.post("/api/tokenize", {"model": M, "text": TEXT})[1], cli_json(S, "tokenize", "--model", M, TEXT)["tokens"])
    for extra, args in [({}, []), ({"head": 3}, ["--head", "3"]), ({"pos": 7, "head": 0}, ["--pos", "7", "--head", "0"]),
                        ({"pos": -3, "ablate": "3,5"}, ["--pos", "-3", "--ablate", "3,5"]),
                        ({"head": 2, "ablate": [1, 6], "ablate_mode": "mean"},
                         ["--head", "2", "--ablate", "1,6", "--ablate-mode", "mean", "--stories", STORIES]),
                        ({"wide": True}, ["--wide"]), ({"wide": True, "pos": 5, "ablate": "2"}, ["--wide", "--pos", "5", "--ablate", "2"]),
                        ({"wide": False, "head": 1}, ["--head", "1"])]:
        same("attend %s" % extra, srv.post("/api/attend", dict(model=M, text=TEXT, **extra))[1],
             cli_json(S, "attend", TEXT, "--model", M, *args))
    # a long story, positions in the middle: the CLI's numbers to the bit
    long_text = " ".join(" ".join(t["text"] for t in texts).split()[:180])
    for extra, args in [({"pos": 37}, ["--pos", "37"]), ({"pos": 150, "ablate": "2,6"}, ["--pos", "150", "--ablate", "2,6"]),
                        ({"pos": 101, "head": 5}, ["--pos", "101", "--head", "5"]), ({"pos": 160, "wide": True}, ["--pos", "160", "--wide"])]:
        same("attend on a long story %s" % extra, srv.post("/api/attend", dict(model=M, text=long_text, **extra))[1],
             cli_json(S, "attend", long_text, "--model", M, *args))
    same("distances", srv.post("/api/distances", {"model": M})[1], cli_json(S, "distances", "--model", M))
    for extra, args in [({}, []), ({"pos": 6}, ["--pos", "6"]), ({"pos": -2, "ablate": "0,4"}, ["--pos", "-2", "--ablate", "0,4"]),
                        ({"ablate": "2", "ablate_mode": "mean"}, ["--ablate", "2", "--ablate-mode", "mean", "--stories", STORIES])]:
        same("trace %s" % extra, srv.post("/api/trace", dict(model=M, text=TEXT, **extra))[1],
             cli_json(S, "trace", TEXT, "--model", M, *args))
    for extra, args in [({"pos": 90}, ["--pos", "90"]), ({"pos": 12, "ablate": "2,6"}, ["--pos", "12", "--ablate", "2,6"])]:
        same("trace on a long story %s" % extra, srv.post("/api/trace", dict(model=M, text=long_text, **extra))[1],
             cli_json(S, "trace", long_text, "--model", M, *args))
    for extra, args in [({}, []), ({"ablate": "3"}, ["--ablate", "3"])]:
        same("loss %s" % extra, srv.post("/api/loss", dict(model=M, text=TEXT, **extra))[1],
             cli_json(S, "eval", "--text", TEXT, "--model", M, *args))
    loss = srv.post("/api/loss", {"model": M, "text": TEXT})[1]
    ok("loss: one row a predicted position", len(loss["tokens"]) == loss["positions"])
    rows = loss["tokens"]
    ok("loss: the mean of the positions' losses, the share ranked first",
       abs(loss["loss"] - sum(t["loss"] for t in rows) / len(rows)) < 1e-9 and
       abs(loss["accuracy"] - sum(t["rank"] == 1 for t in rows) / len(rows)) < 1e-12)
    crossed = 0
    for t in rows:  # where the target is among trace's guesses, both give it the same probability
        guesses = srv.post("/api/trace", {"text": TEXT, "pos": t["position"]})[1]["guesses"]
        g = [x for x in guesses if x["id"] == t["target_id"]]
        if g:
            crossed += 1
            ok("loss and trace agree at position %d" % t["position"],
               abs(g[0]["probability"] - t["probability"]) < 1e-5 and g[0]["rank"] == t["rank"])
    ok("loss and trace compared at some positions", crossed >= 5)
    # ---- a batch: several views in one request, each answered as it is alone ----------------
    reqs = [("/api/attend", {"text": long_text, "pos": 120, "wide": True}), ("/api/trace", {"text": long_text, "pos": 120}),
            ("/api/loss", {"text": long_text, "ablate": "1"}), ("/api/attend", {"text": long_text, "pos": 7, "head": 2}),
            ("/api/tokenize", {"text": TEXT}), ("/api/distances", None), ("/api/attend", {"text": TEXT, "pos": 999})]
    status, batch = srv.post("/api/batch", {"requests": [dict(url=u, **({} if b is None else {"body": b})) for u, b in reqs]})
    ok("a batch of %d views is answered with %d answers" % (len(reqs), len(batch.get("answers", []))),
       status == 200 and len(batch["answers"]) == len(reqs))
    for (url, body), answer in zip(reqs, batch["answers"]):
        alone_status, alone = srv.post(url, body or {})
        ok("batch %s %s: the status alone (%d)" % (url, body, alone_status), answer["status"] == alone_status)
        same("batch %s %s: the answer alone" % (url, body), answer["body"], alone)
    ok("a bad view in a batch is its own 4xx, the others answered", batch["answers"][-1]["status"] == 400 and
       "outside" in batch["answers"][-1]["body"]["error"])
    same("batch: attend --wide", batch["answers"][0]["body"], cli_json(S, "attend", long_text, "--model", M, "--pos", "120", "--wide"))
    same("batch: trace --pos", batch["answers"][1]["body"], cli_json(S, "trace", long_text, "--model", M, "--pos", "120"))
    # the server keeps the runs of the texts asked lately (runs.c): more long texts than it
    # keeps, then the first again, each answer the CLI's
    words = " ".join(t["text"] for t in texts).split()
    many = [" ".join(words[40 * k:40 * k + 180]) for k in range(12)]
    for k, t in enumerate(many):
        srv.post("/api/loss", {"text": t})
    for k in (0, 11):
        same("attend on kept or dropped run %d" % k, srv.post("/api/attend", {"text": many[k], "pos": 50, "head": 6})[1],
             cli_json(S, "attend", many[k], "--model", M, "--pos", "50", "--head", "6"))
    same("swap", srv.post("/api/swap", {"model": M, "baseline": W8, "text": TEXT, "name": "zarko"})[1],
         cli_json(S, "swap", STORIES, "--text", TEXT, "--names", "zarko", "--baseline", W8, "--model", M))
    same("swap without baseline", srv.post("/api/swap", {"model": M, "text": TEXT, "name": "lily"})[1],
         cli_json(S, "swap", STORIES, "--text", TEXT, "--names", "lily", "--model", M))
    heads_cli = cli_json(S, "heads", STORIES, "--model", M)
    same("heads", srv.post("/api/heads", {"model": M})[1], heads_cli)
    same("heads again (the answer kept)", srv.post("/api/heads", {"model": M})[1], heads_cli)
    same("heads with top 3", srv.post("/api/heads", {"model": M, "top": 3})[1],
         cli_json(S, "heads", STORIES, "--model", M, "--top", "3"))
    snap = "models/snapshots/tinystories-plain.step250.safetensors"
    same("attend on a snapshot", srv.post("/api/attend", {"model": snap, "text": TEXT, "head": 1})[1],
         cli_json(S, "attend", TEXT, "--model", snap, "--head", "1"))

    # ---- generation streams the CLI's text --------------------------------------------------
    for body, args in [({"prompt": "Lily found a", "seed": 7, "max_tokens": 60}, ["--seed", "7", "-n", "60"]),
                       ({"prompt": "Tom had a red ball.", "seed": 3, "max_tokens": 40, "temperature": 1.2, "top_k": 20,
                         "top_p": 0.9, "ablate": "2,3"},
                        ["--seed", "3", "-n", "40", "-t", "1.2", "-k", "20", "-p", "0.9", "--ablate", "2,3"]),
                       ({"prompt": "", "seed": 11, "max_tokens": 30, "temperature": 0}, ["--seed", "11", "-n", "30", "-t", "0"])]:
        status, events = srv.events(dict(model=M, **body))
        want = cli_text(S, "generate", body["prompt"], "--model", M, *args).rstrip("\n")
        tokens = [d for n, d in events if n == "message"]
        done = [d for n, d in events if n == "done"]
        ok("generate %s: a done event at the end" % body, status == 200 and len(done) == 1 and events[-1][0] == "done")
        ok("generate %s: the CLI's text (%r vs %r)" % (body, done[0]["text"], want), done[0]["text"] == want)
        ok("generate: one event a token", len(tokens) == done[0]["tokens"] and done[0]["seed"] == body["seed"])
        ok("generate: each event's text is the text so far", all(t["text"] for t in tokens) and
           (not tokens or tokens[-1]["text"] == done[0]["text"]))
        ok("generate: a stop reason", done[0]["stop_reason"] in ("end", "max_tokens"))

    # ---- "precision": "bf16" streams what generate --precision bf16 writes (a CPU with avx512_bf16) ----
    body = {"model": M, "prompt": "Lily found a", "seed": 9, "max_tokens": 60, "precision": "bf16"}
    status, events = srv.events(body)
    if "avx512_bf16" in open("/proc/cpuinfo").read().split():
        want = cli_text(S, "generate", "Lily found a", "--model", M, "--seed", "9", "-n", "60", "--precision",
                        "bf16").rstrip("\n")
        done = [d for n, d in events if n == "done"]
        ok("generate in BF16: the CLI's text", status == 200 and len(done) == 1 and done[0]["text"] == want)
    else:
        ok("generate in BF16 without avx512_bf16: refused, saying why", status == 400 and "avx512_bf16" in str(events))

    # ---- the sampler's other options, bit for bit the CLI's (alone and in its batch) -----------
    opts = {"repeat_penalty": 1.3, "repeat_last_n": 16, "min_p": 0.05, "stop": [" the", "!"], "n_probs": 3}
    args = ["--repeat-penalty", "1.3", "--repeat-last-n", "16", "--min-p", "0.05", "--stop", " the", "--stop", "!",
            "--n-probs", "3", "-n", "50"]
    batch = cli_json(S, "generate", "Lily found a", "--model", M, "--seed", "20", "--samples", "3", *args)["samples"]
    for i in range(3):
        status, events = srv.events(dict(model=M, prompt="Lily found a", seed=20 + i, max_tokens=50, **opts))
        tokens = [d for n, d in events if n == "message"]
        done = [d for n, d in events if n == "done"]
        want = batch[i]
        ok("generate with options: the CLI's text (%r vs %r)" % (done and done[0]["text"], want["text"]),
           status == 200 and done and done[0]["text"] == want["text"])
        ok("generate with options: the CLI's stop reason and stop",
           done[0]["stop_reason"] == want["stop_reason"] and done[0].get("stop") == want["stop"])
        got = [{"piece": t["token"], "id": t["id"], "logprob": t["logprob"], "top_logprobs": t["top_logprobs"]} for t in tokens]
        ok("generate with options: the CLI's tokens, log-probabilities and alternatives", got == want["tokens"])
        ok("generate with options: no event's text holds a stop string past the prompt",
           all(" the" not in t["text"][len("Lily found a"):] and "!" not in t["text"] for t in tokens))
    ok("generate with options: some sample stopped at a stop string", any(s["stop_reason"] == "stop" for s in batch))

    # ---- a client that leaves mid-stream stops its generation ---------------------------------
    # greedy from this prompt writes the whole 2000 tokens (checked with the CLI), far more than
    # the socket buffers hold, so the server is still generating when the client leaves
    long_text = cli_text(S, "generate", "Once upon a time", "--model", M, "-t", "0", "-n", "2000", "--seed", "1")
    ids = cli_json(S, "tokenize", "--model", M, long_text.strip())["tokens"]
    before = srv.get("/api/health")[1]
    status, events = srv.events({"model": M, "prompt": "Once upon a time", "temperature": 0, "max_tokens": 2000, "seed": 1}, keep=3)
    ok("a stream read for 3 events", status == 200 and len(events) == 3)
    after = wait_for("the stream to end after the client left",
                     lambda: (lambda h: h if h["streams"] == 0 else None)(srv.get("/api/health")[1]), timeout=30)
    if len(ids) >= 1900:
        ok("the generation stopped when its client left (streams_stopped %d -> %d)" %
           (before["streams_stopped"], after["streams_stopped"]), after["streams_stopped"] == before["streams_stopped"] + 1)
    else:
        print("note: greedy generation ends early with this model (%d tokens); the early stop is not checked" % len(ids))

    # ---- Secrets 3 and 4, and a model's layers (each the JSON of its verb, at --threads 1) ----------
    def secrets_checks(srv, refused):
        two = "models/two-layers.safetensors"
        for layer in (1, 2):
            same("distances of layer %d of two" % layer, srv.post("/api/distances", {"model": two, "layer": layer, "up_to": 5})[1],
                 cli_json(S, "distances", "--model", two, "--layer", str(layer), "--up-to", "5"))
        refused("distances of layer 3 of two", 400, path="/api/distances", body={"model": two, "layer": 3})
        refused("distances of layer 0", 400, path="/api/distances", body={"layer": 0})
        refused("distances of a layer not whole", 400, path="/api/distances", body={"layer": 1.5})
        same("ablate", srv.post("/api/ablate", {})[1], cli_json(S, "ablate", STORIES, "--model", M, "--threads", "1"))
        same("ablate of heads 3,5 on two layers", srv.post("/api/ablate", {"model": two, "heads": "1:3,2:5"})[1],
             cli_json(S, "ablate", STORIES, "--model", two, "--heads", "1:3,2:5", "--threads", "1"))
        refused("ablate of a head out of range", 400, path="/api/ablate", body={"heads": "9"})
        refused("ablate of a mode unknown", 400, path="/api/ablate", body={"mode": "half"})
        refused("ablate on window8", 400, path="/api/ablate", body={"model": W8})
        same("pieces", srv.post("/api/pieces", {"names": "zarko,lily"})[1],
             cli_json(S, "pieces", STORIES, "--model", M, "--names", "zarko,lily", "--threads", "1"))
        same("pieces on two layers", srv.post("/api/pieces", {"model": two})[1],
             cli_json(S, "pieces", STORIES, "--model", two, "--threads", "1"))
        same("stats on two layers", srv.post("/api/stats", {"model": two})[1],
             cli_json(S, "stats", STORIES, "--model", two))
        same("circuits of layer 2 of two", srv.post("/api/circuits", {"model": two, "layer": 2, "head": "1", "top_k": 3})[1],
             cli_json(S, "circuits", "--model", two, "--layer", "2", "--head", "1", "--top-k", "3", "--stories", STORIES))
        refused("pieces of a name of two words", 400, path="/api/pieces", body={"names": "two words"})
        refused("pieces of names not a string", 400, path="/api/pieces", body={"names": 3})
        ok("GET /api/ablate is refused", srv.request("GET", "/api/ablate", None)[0] == 405)

    # ---- a stories file sent from the page, a model file sent back -------------------------------
    def upload_checks(srv, refused):
        text = open(STORIES, "rb").read()[:200000]
        with open("upload-copy.txt", "wb") as f:
            f.write(text)
        want = cli_json(S, "stories", "upload-copy.txt", "--model", M)  # the served model's vocabulary
        status, got = srv.post("/api/upload?name=my%20stories.txt", raw=text, headers={"Content-Type": "text/plain"})
        ok("an upload is stored in the training folder: %s" % got, status == 201 and
           os.path.realpath(os.path.dirname(got["stories"])) == os.path.realpath("playground-models") and
           os.path.basename(got["stories"]) == "my_stories.txt" and open(got["stories"], "rb").read() == text)
        ok("its stories and tokens counted as storylm stories counts them",
           got["stories_count"] == want["stories"]["stories"] and got["tokens"] == want["tokens"])
        status, again = srv.post("/api/upload?name=my%20stories.txt", raw=text)
        ok("a second upload of the name keeps the first file", status == 201 and again["stories"] != got["stories"] and
           open(got["stories"], "rb").read() == text)
        for name in ("../x.txt", "a/x.txt", "..", ".hidden.txt", ""):
            refused("an upload named %r" % name, 400, path="/api/upload?name=" + name, raw=text)
        refused("an upload with no name", 400, path="/api/upload", raw=text)
        refused("an upload named like a learnt vocabulary", 400,
                path="/api/upload?name=my_stories.0123456789abcdef.vocab.txt", raw=text)
        os.mkdir("playground-models/folder.txt")  # a name taken by a folder: the next name, not a 500
        status, beside = srv.post("/api/upload?name=folder.txt", raw=text)
        ok("an upload whose name is a folder's is stored as the next name: %s" % beside,
           status == 201 and os.path.basename(beside["stories"]) == "folder-2.txt")
        os.remove(beside["stories"])
        os.rmdir("playground-models/folder.txt")
        refused("an empty upload", 400, path="/api/upload?name=e.txt", raw=b"")
        refused("an upload not UTF-8", 400, path="/api/upload?name=b.txt", raw=b"Lily ran.\n\nBad \xff\xfe here.\n")
        refused("an upload of more than 20 MiB", 413, path="/api/upload?name=big.txt", raw=b"a" * (20 * 1024 * 1024 + 1))
        refused("an upload with GET", 405, method="GET", path="/api/upload?name=x.txt")
        ok("nothing refused was stored", sorted(os.listdir("playground-models")) == ["my_stories-2.txt", "my_stories.txt"])
        status, _, data = srv.request("GET", "/api/download?model=" + M)
        ok("a listed model downloads whole", status == 200 and data == open(M, "rb").read())
        for bad in ("/etc/passwd", STORIES, "models/../" + STORIES, got["stories"]):
            refused("a download of %s" % bad, 404, method="GET", path="/api/download?model=" + bad)

    # ---- hostile requests ---------------------------------------------------------------------
    def refused(what, status_want, method="POST", path="/api/attend", body=None, raw=None, headers=None):
        global checks
        checks += 1
        status, _, data = srv.request(method, path, body, raw, headers)
        try:
            err = json.loads(data)
        except ValueError:
            err = None
        if status != status_want or not isinstance(err, dict) or not err.get("error"):
            raise SystemExit("FAILED: %s: want %d with a JSON error, got %d %r" % (what, status_want, status, data[:200]))

    refused("malformed JSON", 400, raw=b'{"text": "Lily",')
    refused("a JSON array", 400, raw=b'[1, 2]')
    refused("binary garbage", 400, raw=bytes(range(256)))
    refused("JSON nested 100,000 deep", 400, raw=b"[" * 100000 + b"]" * 100000)
    refused("a number too large for a double", 400, body=None, raw=b'{"text": "Lily", "pos": 1e400}')
    refused("an empty body", 400)
    refused("no text", 400, body={"model": M})
    refused("text not a string", 400, body={"text": 42})
    refused("a megabyte body", 413, raw=json.dumps({"text": "a " * 600000}).encode())
    refused("a text over 64 KiB", 413, body={"text": "Lily ran. " * 7000})
    refused("a text of too many tokens", 413, path="/api/trace", body={"text": ". " * 30000})
    refused("text not UTF-8", 400, raw=b'{"text": "Lily \xff\xfe found"}')
    refused("head out of range", 400, body={"text": TEXT, "head": 8})
    refused("negative head", 400, body={"text": TEXT, "head": -2})
    refused("head not a head", 400, body={"text": TEXT, "head": True})
    refused("head of a layer it lacks", 400, body={"text": TEXT, "head": "2:3"})
    refused("head not whole", 400, body={"text": TEXT, "head": 1.5})
    refused("pos out of range", 400, body={"text": TEXT, "pos": 500})
    refused("pos huge", 400, body={"text": TEXT, "pos": 1e300})
    refused("ablate out of range", 400, body={"text": TEXT, "ablate": "9"})
    refused("ablate garbage", 400, body={"text": TEXT, "ablate": "3;rm -rf"})
    refused("ablate_mode unknown", 400, body={"text": TEXT, "ablate": "3", "ablate_mode": "half"})
    refused("unknown model", 404, body={"text": TEXT, "model": "nope.safetensors"})
    refused("a model outside the listed folders", 404, body={"text": TEXT, "model": "/etc/passwd"})
    refused("a model named through ..", 404, body={"text": TEXT, "model": "models/../../" + os.path.basename(os.getcwd()) + "/x.safetensors"})
    refused("a symlink out of the listed folders", 404, body={"text": TEXT, "model": "models/outside.safetensors"})
    refused("a stories file as model", 404, body={"text": TEXT, "model": STORIES})
    refused("a window8 model in attend", 400, body={"text": TEXT, "model": W8})
    two = "models/two-layers.safetensors"
    for view in ("attend", "trace"):  # "layer" reads layer L's heads, as the verbs' --layer
        for layer in (1, 2):
            same("%s of layer %d of two" % (view, layer), srv.post("/api/" + view, {"text": TEXT, "model": two, "layer": layer})[1],
                 cli_json(S, view, TEXT, "--model", two, "--layer", str(layer)))
        refused("%s of layer 3 of two" % view, 400, path="/api/" + view, body={"text": TEXT, "model": two, "layer": 3})
    tf = "models/tinystories-transformer.safetensors"  # the shipped transformer: "layer" is block L's
    if os.path.exists(tf):
        for view, body, args in (("attend", {"text": TEXT, "wide": True}, [TEXT, "--wide"]), ("trace", {"text": TEXT}, [TEXT]),
                                 ("distances", {"up_to": 5}, ["--up-to", "5"])):
            same("%s of the transformer's block 2" % view, srv.post("/api/" + view, dict(body, model=tf, layer=2))[1],
                 cli_json(S, view, *args, "--model", tf, "--layer", "2"))
        refused("distances of the transformer's block 3", 400, path="/api/distances", body={"model": tf, "layer": 3})
    else:
        print("note: no shipped transformer; its attend, trace and distances by block not compared")
    secrets_checks(srv, refused)
    upload_checks(srv, refused)
    status, _, data = srv.request("POST", "/api/loss", {"text": TEXT, "model": "models/two-layers.safetensors"})
    ok("a model of two layers answers the loss view", status == 200 and "loss" in json.loads(data))
    refused("temperature negative", 400, path="/api/generate", body={"prompt": "a", "temperature": -1})
    refused("max_tokens huge", 400, path="/api/generate", body={"prompt": "a", "max_tokens": 10 ** 9})
    refused("top_p zero", 400, path="/api/generate", body={"prompt": "a", "top_p": 0})
    refused("min_p above 1", 400, path="/api/generate", body={"prompt": "a", "min_p": 1.5})
    refused("repeat_penalty zero", 400, path="/api/generate", body={"prompt": "a", "repeat_penalty": 0})
    refused("n_probs above 20", 400, path="/api/generate", body={"prompt": "a", "n_probs": 21})
    three = "models/three-tokens.safetensors"
    for seed in range(1, 4):
        status, events = srv.events({"model": three, "prompt": "a", "n_probs": 20, "max_tokens": 20, "seed": seed})
        tokens = [d for n, d in events if n == "message"]
        ok("n_probs 20 on a model of 3 tokens: its 3 tokens, each once (seed %d)" % seed,
           status == 200 and tokens and all(sorted(a["id"] for a in t["top_logprobs"]) == [0, 1, 2] for t in tokens))
    ok("n_probs 20 on a model of 3 tokens: the server lives on", srv.get("/api/health")[0] == 200)
    refused("an unknown precision", 400, path="/api/generate", body={"prompt": "a", "precision": "fp8"})
    refused("a precision not a string", 400, path="/api/generate", body={"prompt": "a", "precision": 16})
    refused("an empty stop string", 400, path="/api/generate", body={"prompt": "a", "stop": [""]})
    refused("stop not a string", 400, path="/api/generate", body={"prompt": "a", "stop": 3})
    refused("swap with no hero", 400, path="/api/swap", body={"text": "the dog ran.", "name": "zarko"})
    refused("swap with a bad name", 400, path="/api/swap", body={"text": TEXT, "name": "two words"})
    refused("swap baseline of another folder", 404, path="/api/swap", body={"text": TEXT, "name": "lily", "baseline": "/etc/passwd"})
    refused("train on a file outside the data folders", 403, path="/api/train", body={"stories": "/etc/passwd", "steps": 5})
    refused("train through ..", 403, path="/api/train", body={"stories": "data/../../../../etc/passwd", "steps": 5})
    os.symlink("/etc/hostname", "data/escape.txt")
    refused("train through a symlink out of the folder", 403, path="/api/train", body={"stories": "data/escape.txt", "steps": 5})
    refused("heads on a file outside", 403, path="/api/heads", body={"stories": "/etc/passwd"})
    refused("train steps out of range", 400, path="/api/train", body={"steps": 0})
    refused("a learning rate below 0", 400, path="/api/train", body={"steps": 5, "lr": -0.01})
    refused("a learning rate above 1", 400, path="/api/train", body={"steps": 5, "lr": 2})
    refused("a learning rate that is not a number", 400, path="/api/train", body={"steps": 5, "lr": "fast"})
    refused("the stories of a model not listed", 404, path="/api/stories", body={"model": "/etc/passwd"})
    refused("GET of a POST endpoint", 405, method="GET", path="/api/attend")
    refused("wide not a boolean", 400, body={"text": TEXT, "wide": 1})
    refused("wide with one head", 400, body={"text": TEXT, "wide": True, "head": 3})
    refused("a batch without requests", 400, path="/api/batch", body={})
    refused("a batch of nothing", 400, path="/api/batch", body={"requests": []})
    refused("a batch not a list", 400, path="/api/batch", body={"requests": {"url": "/api/attend"}})
    refused("a batch of 17", 400, path="/api/batch", body={"requests": [{"url": "/api/tokenize", "body": {"text": "a"}}] * 17})
    refused("a batch holding a generation", 400, path="/api/batch", body={"requests": [{"url": "/api/generate", "body": {}}]})
    refused("a batch holding a training", 400, path="/api/batch", body={"requests": [{"url": "/api/train", "body": {}}]})
    refused("a batch in a batch", 400, path="/api/batch", body={"requests": [{"url": "/api/batch", "body": {"requests": []}}]})
    refused("a batch of numbers", 400, path="/api/batch", body={"requests": [1, 2]})
    refused("a batch item's body not an object", 400, path="/api/batch", body={"requests": [{"url": "/api/attend", "body": "x"}]})
    refused("GET of the batch", 405, method="GET", path="/api/batch")
    refused("an unknown endpoint", 404, path="/api/nothing", body={})
    refused("a DELETE", 405, method="DELETE", path="/api/models")
    refused("a request from another site", 403, body={"text": TEXT}, headers={"Origin": "http://evil.example"})
    refused("a request from a sandboxed frame", 403, body={"text": TEXT}, headers={"Origin": "null"})
    ok("a request from the page itself is answered", srv.request("POST", "/api/attend", {"text": TEXT}, headers={
        "Origin": "http://%s:%d" % (srv.host, srv.port)})[0] == 200)
    refused("a request for another host name", 403, body={"text": TEXT}, headers={"Host": "evil.example:80"})
    ok("the server is still up after all that", srv.get("/api/health")[0] == 200)

    # ---- training from the page ------------------------------------------------------------------
    status, started = srv.post("/api/train", {"stories": STORIES, "steps": 20, "eval_every": 10, "seed": 2})
    ok("POST /api/train starts a run (202 with its id)", status == 202 and started["id"] == 1)
    status, _ = srv.post("/api/train", {"steps": 20})
    ok("a second run while one is going is refused with 409", status == 409)
    ok("views answer while training", srv.post("/api/attend", {"text": TEXT, "head": 0})[0] == 200)
    t = wait_for("the 20-step run to finish", lambda: (lambda j: j if j["state"] not in ("running",) else None)(srv.get("/api/train")[1]),
                 timeout=300)
    ok("the run is done: %s" % t["message"], t["state"] == "done" and t["step"] == 20 and t["steps"] == 20)
    tested = [p for p in t["points"] if p["test_loss"] is not None]
    ok("the curve has the train loss of every step and the test loss at 10 and 20",
       [p["step"] for p in t["points"]] == list(range(1, 21)) and [p["step"] for p in tested] == [10, 20])
    ok("each test loss also per character of the test stories (fewer nats than per token)",
       all(0 < p["test_loss_per_char"] < p["test_loss"] for p in tested))
    ok("the heads' weight by distance at every save", [h["step"] for h in t["heads"]] == [10, 20] and
       all(len(h["mass"]) == 8 and all(abs(sum(row) - 1) < 1e-3 for row in h["mass"]) for h in t["heads"]))
    new = t["model"]
    ok("the new model is listed", new in [m["path"] for m in srv.get("/api/models")[1]["models"]])
    same("attend on the new model", srv.post("/api/attend", {"model": new, "text": TEXT, "head": 4})[1],
         cli_json(S, "attend", TEXT, "--model", new, "--head", "4"))
    status, started = srv.post("/api/train", {"steps": 5000, "eval_every": 1000, "seed": 3})
    ok("a second run starts once the first is done", status == 202 and started["id"] == 2)
    wait_for("the second run to take steps", lambda: srv.get("/api/train")[1]["step"] >= 3, timeout=120)
    refused("an upload while a run trains", 409, path="/api/upload?name=late.txt", raw=b"Lily ran home.\n")
    ok("POST /api/train/stop stops it", srv.post("/api/train/stop", {})[1]["stopping"] is True)
    t = wait_for("the run to stop", lambda: (lambda j: j if j["state"] != "running" else None)(srv.get("/api/train")[1]), timeout=120)
    ok("stopped, saved: %s" % t["message"], t["state"] == "stopped" and t["step"] < 5000)
    info = cli_json(S, "info", "--model", t["model"])
    ok("the stopped run's model loads", info.get("params", info.get("parameters")) is not None or info)

    print("serve API: %d checks passed" % checks)
finally:
    srv.stop_cleanly()
