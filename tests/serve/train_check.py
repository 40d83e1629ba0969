"""Training from the page across servers, through real HTTP on loopback:
- a new server numbers its runs past the files already in the training
  folder (run1.safetensors of an earlier server is never overwritten);
- a vocabulary learnt for one stories file is never used for another of
  the same name (it is keyed by the file's bytes);
- a stop asked, or SIGTERM, while a run learns its vocabulary or tokenizes
  its stories is heard at once."""
import glob
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Server, wait_for, ok, CHECKS  # noqa: E402

S = sys.argv[1]
M = "models/tinystories.safetensors"
PROMPT_STOP = 2.0  # seconds from SIGTERM to the server's exit, at most


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def train(srv, stories, steps=4):
    status, started = srv.post("/api/train", {"stories": stories, "steps": steps, "eval_every": 2, "seed": 1})
    ok("training on %s starts (%r)" % (stories, started), status == 202)
    t = wait_for("the run on %s" % stories, lambda: (lambda j: j if j["state"] != "running" else None)(srv.get("/api/train")[1]),
                 timeout=300)
    ok("the run on %s is done: %s" % (stories, t["message"]), t["state"] == "done")
    return started["id"], t["model"]


def stop_while(srv, what, phase):
    """SIGTERM once the run's message starts with phase; seconds to the exit."""
    status, started = srv.post("/api/train", {"stories": "data/big.txt", "steps": 50})
    ok("a run on the large file starts", status == 202)
    end = time.time() + 600
    while time.time() < end:
        message = srv.get("/api/train")[1]["message"]
        if message.startswith(phase):
            break
        time.sleep(0.01)
    else:
        raise SystemExit("FAILED: the run never got to %r" % phase)
    t0 = time.time()
    code = srv.stop(timeout=60)
    took = time.time() - t0
    print("SIGTERM while the run %s: the server exited in %.2f s" % (what, took))
    ok("SIGTERM while %s: the server exits 0 (%r)" % (what, code), code == 0)
    ok("SIGTERM while %s: the server exits within %.1f s (%.2f s)" % (what, PROMPT_STOP, took), took < PROMPT_STOP)


args = ("--model", M, "--data-dir", "data", "--data-dir", "other", "--threads", "2")
# ---- runs are numbered past the folder's files; vocabularies keyed by the bytes -----------------
before = {p: digest(p) for p in glob.glob("playground-models/*")}
srv = Server(S, *args)
try:
    first, model = train(srv, "data/stories.txt")
    ok("the first run of a new server is numbered past run1 and run3.* (%d, %s)" % (first, model),
       first == 4 and model == "playground-models/run4.safetensors")
    second, model2 = train(srv, "other/stories.txt")
    ok("the next run is the next number (%d)" % second, second == 5 and model2.endswith("run5.safetensors"))
    ok("the earlier server's files are untouched", all(digest(p) == d for p, d in before.items()))
    vocabs = sorted(glob.glob("playground-models/stories.*.vocab.txt"))
    ok("two files named stories.txt got a vocabulary each (%s)" % vocabs, len(vocabs) == 2)
    ok("the two vocabularies differ", digest(vocabs[0]) != digest(vocabs[1]))
    third, _ = train(srv, "data/stories.txt")
    ok("the first file's vocabulary is used again for it, no third learnt",
       len(glob.glob("playground-models/stories.*.vocab.txt")) == 2 and third == 6)
finally:
    srv.stop_cleanly()

srv = Server(S, *args)
try:
    status, started = srv.post("/api/train", {"stories": "data/stories.txt", "steps": 2, "eval_every": 1})
    ok("a server started again goes on from the last run (%r)" % started, status == 202 and started["id"] == 7)
    wait_for("the run", lambda: srv.get("/api/train")[1]["state"] != "running", timeout=300)
finally:
    srv.stop_cleanly()

# ---- a stop asked while the vocabulary is learnt: no model, none offered -------------------------
srv = Server(S, *args)
try:
    status, started = srv.post("/api/train", {"stories": "data/big.txt", "steps": 50})
    wait_for("the run to learn its vocabulary", lambda: srv.get("/api/train")[1]["message"].startswith("learning"), every=0.01)
    ok("POST /api/train/stop while learning", srv.post("/api/train/stop", {})[1]["stopping"] is True)
    t = wait_for("the run to stop", lambda: (lambda j: j if j["state"] != "running" else None)(srv.get("/api/train")[1]), timeout=30)
    ok("stopped before training, no model named (%r)" % t, t["state"] == "stopped" and t["model"] == "" and
       "before training began" in t["message"])
    ok("no model file of that run", not os.path.exists("playground-models/run%d.safetensors" % started["id"]))
finally:
    srv.stop_cleanly()

# ---- SIGTERM does not wait for the vocabulary or the tokens of a large file ----------------------
stop_while(Server(S, *args), "learns its vocabulary", "learning")
ok("no vocabulary was saved for the stopped run", len(glob.glob("playground-models/big.*.vocab.txt")) == 0)
srv = Server(S, *args)
stop_while(srv, "tokenizes its stories", "reading the stories")
print("serve training: %d checks passed" % CHECKS[0])
