"""Two writers of one file, the server's part (tests/e2e_two_writers.sh runs
it in a folder with models/, data/stories.txt and vocab.txt):
- two servers training into one --train-dir at once get two run numbers,
  and both models are kept;
- a CLI run given the server's running run as --out is refused, and a
  server that comes to a number a CLI run is writing takes the next;
- uploads of one name, ten at once, are a file each, none replaced;
- an upload named run2147483645.txt and runs past it never wrap the run
  number nor reuse one, also after a restart."""
import glob
import hashlib
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Server, wait_for, ok, CHECKS  # noqa: E402

S = sys.argv[1]
M = "models/tinystories.safetensors"
INT_MAX = 2147483647


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def server(train_dir, log):
    return Server(S, "--model", M, "--data-dir", "data", "--threads", "2", "--train-dir", train_dir, log=log)


def status(srv):
    return srv.get("/api/train")[1]


def start_long(srv, what):
    """A run that trains until stopped; its id once it is training."""
    code, started = srv.post("/api/train", {"stories": "data/stories.txt", "steps": 20000, "seed": 1})
    ok("%s starts (%r)" % (what, started), code == 202)
    wait_for(what + " to train", lambda: status(srv)["message"].startswith("step") or status(srv)["state"] != "running",
             timeout=120, every=0.05)
    t = status(srv)
    ok("%s is training (%r)" % (what, t["message"]), t["state"] == "running")
    return started["id"]


def stop(srv, what):
    """Stops the running run; its status once stopped (its model saved)."""
    srv.post("/api/train/stop", {})
    t = wait_for(what + " to stop", lambda: (lambda j: j if j["state"] != "running" else None)(status(srv)), timeout=120)
    ok("%s stopped and saved (%r)" % (what, t["message"]), t["state"] == "stopped" and os.path.exists(t["model"]))
    return t


def train(srv, what):
    code, started = srv.post("/api/train", {"stories": "data/stories.txt", "steps": 2, "eval_every": 1, "seed": 1})
    ok("%s starts (%r)" % (what, started), code == 202)
    t = wait_for(what, lambda: (lambda j: j if j["state"] != "running" else None)(status(srv)), timeout=300)
    ok("%s is done: %s" % (what, t["message"]), t["state"] == "done" and t["id"] == started["id"])
    return started["id"], t["model"]


def cli_train(out, *more):
    return subprocess.run([S, "train", "data/stories.txt", "--vocab", "vocab.txt", "--test-stories", "5", "--threads",
                           "1", "-o", out, *more], capture_output=True, text=True)


# ---- two servers, one --train-dir ---------------------------------------------------------------
a, b = server("playground-models", "serve-a.log"), server("playground-models", "serve-b.log")
try:
    id_a = start_long(a, "server A's run")
    id_b = start_long(b, "server B's run")
    ok("two servers on one folder take two run numbers (%d, %d)" % (id_a, id_b), id_a != id_b)
    ta, tb = stop(a, "server A's run"), stop(b, "server B's run")
    ok("each server's model is its own file (%s, %s)" % (ta["model"], tb["model"]),
       ta["model"] != tb["model"] and digest(ta["model"]) != digest(tb["model"]))

    # ---- a CLI run into the server's running run is refused ----
    n = start_long(a, "server A's next run")
    out = "playground-models/run%d.safetensors" % n
    p = cli_train(out, "--steps", "2")
    ok("a CLI run into the server's running %s is refused (exit %d: %s)" % (out, p.returncode, p.stderr.strip()),
       p.returncode != 0 and "being written by another process" in p.stderr)
    t = stop(a, "server A's run")
    ok("the server's run kept its model %s" % out, t["model"] == out and os.path.exists(out))

    # ---- ... and a server that comes to the number of a CLI run takes the next ----
    taken = [int(os.path.basename(f)[3:].split(".")[0]) for f in glob.glob("playground-models/run[0-9]*")]
    cli_out = "playground-models/run%d.safetensors" % (max(taken) + 1)
    cli = subprocess.Popen([S, "train", "data/stories.txt", "--vocab", "vocab.txt", "--test-stories", "5", "--threads",
                            "1", "--steps", "1000000", "--eval-every", "0", "-o", cli_out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for("the CLI run to start", lambda: os.path.exists(cli_out + ".lock"), every=0.05)
        n = start_long(a, "server A's run beside the CLI's")
        ok("the server did not take the CLI run's number (%d, %s)" % (n, cli_out),
           "playground-models/run%d.safetensors" % n != cli_out)
        stop(a, "server A's run beside the CLI's")
    finally:
        cli.terminate()
        cli.wait(60)
    ok("the CLI run kept its model", os.path.exists(cli_out))
finally:
    a.stop_cleanly()
    b.stop_cleanly()

# ---- ten uploads of one name at once, three times over ------------------------------------------
stories = open("data/stories.txt", "rb").read().split(b"<|endoftext|>")[:30]
bodies = [b"<|endoftext|>".join(stories) + b"<|endoftext|>\nLily counted %d shells by the sea.\n" % i for i in range(30)]
srv = server("playground-models", "serve-u.log")
try:
    replies = [None] * 30
    for first in (0, 10, 20):
        go = threading.Barrier(10)

        def upload(i):
            go.wait()
            replies[i] = srv.post("/api/upload?name=race.txt", raw=bodies[i], headers={"Content-Type": "text/plain"})

        threads = [threading.Thread(target=upload, args=(i,)) for i in range(first, first + 10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    ok("uploads ten at a time are all stored (%r)" % [r[0] for r in replies], all(r[0] == 201 for r in replies))
    paths = [r[1]["stories"] for r in replies]
    ok("thirty uploads of one name get thirty files (%s)" % sorted(paths), len(set(paths)) == 30)
    for i, path in enumerate(paths):
        ok("upload %d's file holds its own bytes (%s)" % (i, path), open(path, "rb").read() == bodies[i])
finally:
    srv.stop_cleanly()

# ---- run numbers at INT_MAX: never wrapped, never reused ----------------------------------------
os.makedirs("numbers", exist_ok=True)
models = {}  # model path -> digest at its run's end
srv = server("numbers", "serve-n.log")
try:
    code, up = srv.post("/api/upload?name=run2147483645.txt", raw=b"<|endoftext|>".join(stories),
                        headers={"Content-Type": "text/plain"})
    ok("an upload named run2147483645.txt is stored (%r)" % up, code == 201)
    for k in range(3):
        run, model = train(srv, "run %d past run2147483645" % (k + 1))
        ok("the run's number is in 1..INT_MAX (%d)" % run, 1 <= run <= INT_MAX)
        ok("run %d is saved as numbers/run%d.safetensors (%s)" % (run, run, model),
           model == "numbers/run%d.safetensors" % run and os.path.exists(model))
        ok("run %d takes no earlier run's file" % run, model not in models)
        ok("no earlier model was replaced", all(digest(p) == d for p, d in models.items()))
        models[model] = digest(model)
finally:
    srv.stop_cleanly()
srv = server("numbers", "serve-n2.log")
try:
    for k in range(2):
        run, model = train(srv, "run %d after a restart" % (k + 1))
        ok("after a restart the run's number is in 1..INT_MAX (%d)" % run, 1 <= run <= INT_MAX)
        ok("after a restart run %d takes no earlier run's file" % run, model not in models and os.path.exists(model))
        ok("after a restart no earlier model was replaced", all(digest(p) == d for p, d in models.items()))
        models[model] = digest(model)
finally:
    srv.stop_cleanly()
print("serve two writers: %d checks passed" % CHECKS[0])
