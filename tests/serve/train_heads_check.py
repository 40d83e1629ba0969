"""The page's training defaults make the heads find jobs (see
tests/e2e_serve_train_heads.sh): the page's learning rate and evaluation
interval, STEPS steps on data/stories.txt through /api/train, and the share
of each head's weight at distance 1 at the first and the last save, as the
page draws them."""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Server, wait_for, ok, CHECKS  # noqa: E402

S, PAGE, STEPS = sys.argv[1], sys.argv[2], int(sys.argv[3])
FIRST_AT_MOST, LAST_AT_LEAST = 0.15, 0.25


def default(page, id_):
    m = re.search(r'id="%s"[^>]*\svalue="([^"]+)"' % id_, page)
    if not m:
        raise SystemExit("FAILED: web/index.html has no value for #%s" % id_)
    return float(m.group(1))


page = open(PAGE, encoding="utf-8").read()
lr, every, steps = default(page, "train-lr"), int(default(page, "train-every")), int(default(page, "train-steps"))
ok("the page's defaults: %d steps, learning rate %g, evaluated every %d" % (steps, lr, every), steps >= STEPS)
srv = Server(S, "--model", "models/tinystories.safetensors", "--stories", "data/stories.txt", "--data-dir", "data")
try:
    t0 = time.time()
    status, started = srv.post("/api/train", {"stories": "data/stories.txt", "steps": STEPS, "lr": lr,
                                              "eval_every": every, "seed": 1})
    ok("the run starts (%r)" % (started,), status == 202)
    t = wait_for("the run", lambda: (lambda j: j if j["state"] != "running" else None)(srv.get("/api/train")[1]),
                 timeout=600)
    ok("the run is done: %s (%.0f s)" % (t["message"], time.time() - t0), t["state"] == "done")
    heads = t["heads"]
    ok("%d saves measured the heads (every %d steps)" % (len(heads), every), len(heads) >= 2)
    first, last = heads[0], heads[-1]
    d1 = lambda point: [h[1] for h in point["mass"]]  # noqa: E731  (bins: 0, 1, 2, 3-7, 8-31, 32+)
    print("share of weight at distance 1, step %d: %s" % (first["step"], " ".join("%.3f" % x for x in d1(first))))
    print("share of weight at distance 1, step %d: %s" % (last["step"], " ".join("%.3f" % x for x in d1(last))))
    found = [h for h in range(len(d1(last))) if d1(first)[h] <= FIRST_AT_MOST and d1(last)[h] >= LAST_AT_LEAST]
    ok("heads %s move their weight to the token just before (distance 1: at most %.2f at step %d, at least %.2f at "
       "step %d)" % (found, FIRST_AT_MOST, first["step"], LAST_AT_LEAST, last["step"]), len(found) >= 1)
finally:
    srv.stop_cleanly()
print("e2e_serve_train_heads: %d checks passed" % CHECKS[0])
