"""The page's "train your own" from a shipped model (/api/train's "from",
train --from's parameter): the run fine-tunes that model and records it; a
name that is no shipped model, or a path, is refused with 400; and a run
without "steps" gets as many as fit the corpus, as storylm train gives."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Server, wait_for, ok, CHECKS  # noqa: E402

S = sys.argv[1]


def finished(srv):
    return wait_for("the run", lambda: (lambda j: j if j["state"] != "running" else None)(srv.get("/api/train")[1]),
                    timeout=300)


def metadata(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(n))["__metadata__"]


srv = Server(S, "--model", "models/tinystories.safetensors", "--data-dir", "data", "--threads", "2")
try:
    status, started = srv.post("/api/train", {"stories": "data/mine.txt", "from": "tinystories", "steps": 4,
                                              "eval_every": 2, "lr": 0.003})
    ok("a run from tinystories starts (%r)" % started, status == 202)
    t = finished(srv)
    ok("it is done: %s" % t["message"], t["state"] == "done")
    md = metadata(t["model"])
    ok("the model records its base (%r) and keeps its vocabulary" % md.get("from"),
       md.get("from") == "tinystories.safetensors" and md.get("vocab_size") == "2000" and md.get("arch") == "attention")
    for bad in ("nosuch", "../models/tinystories", "/etc/passwd"):
        status, answer = srv.post("/api/train", {"stories": "data/mine.txt", "from": bad, "steps": 2})
        ok("\"from\": %r is refused (%d %r)" % (bad, status, answer), status == 400 and "error" in answer)
    status, started = srv.post("/api/train", {"stories": "data/mine.txt", "eval_every": 5})
    ok("a run without steps starts", status == 202)
    want = int(sys.argv[2])
    steps = wait_for("the fitted steps", lambda: srv.get("/api/train")[1]["steps"] or None, timeout=120)
    ok("its steps fit the corpus as storylm train's (%d, train: %d)" % (steps, want), steps == want)
    srv.post("/api/train/stop", {})
    finished(srv)
finally:
    srv.stop_cleanly()
print("ok: %d checks" % CHECKS[0])
