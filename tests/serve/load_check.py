"""50 clients at once for 20 s against storylm serve: every answer a 200
with the JSON expected, and the server's resident memory (VmRSS) flat once
warm: what it holds after the first 5 s is what it holds at the end; and
once the load is over, back near what it held before it (at most
AFTER_BOUND more: the kept runs of texts and the loaded model).
STORYLM_LOAD_CLIENTS and STORYLM_LOAD_SECONDS change the load (to measure)."""
import http.client
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Server  # noqa: E402

S = sys.argv[1]
CLIENTS = int(os.environ.get("STORYLM_LOAD_CLIENTS", 50))
SECONDS, WARM = float(os.environ.get("STORYLM_LOAD_SECONDS", 20)), 5.0
AFTER_BOUND = 48 * 1024  # KiB: RUNS_BUDGET (16 MiB) of kept runs, the model and its stories, glibc's slack
sanitized = len(sys.argv) > 2 and sys.argv[2] == "sanitized"
TEXT = ("Once upon a time, there was a girl named Mia. Mia saw a big dog in the park. The dog ran to Mia and "
        "licked her hand. Mia laughed and gave the dog a stick. They played all day until the sun went down.")
LONG = [(TEXT + " ") * (1 + k // 3) + ("They went home. " * (k % 3)) for k in range(12)]
REQUESTS = [
    ("/api/attend", lambda r: {"text": TEXT, "pos": r.randrange(1, 40), "head": r.randrange(-1, 8)}, "keys"),
    ("/api/trace", lambda r: {"text": TEXT, "pos": r.randrange(1, 40), "ablate": str(r.randrange(8))}, "guesses"),
    ("/api/loss", lambda r: {"text": TEXT, "ablate": "3,5"}, "loss"),
    ("/api/tokenize", lambda r: {"text": TEXT}, None),
    ("/api/generate", lambda r: {"prompt": "Lily found a", "max_tokens": 15, "seed": r.randrange(1000)}, "event: done"),
    ("/api/attend", lambda r: {"text": TEXT, "head": 99}, "error"),  # a bad one now and then: a 400, not a failure
    # a click of the page: attention and trace in one batch, on one of 12 texts of 45 to 200
    # tokens (more than the server keeps the runs of: kept runs are dropped and made under load)
    ("/api/batch", lambda r: (lambda k, p: {"requests": [{"url": "/api/attend", "body": {"text": LONG[k], "pos": p, "wide": True}},
                                                         {"url": "/api/trace", "body": {"text": LONG[k], "pos": p}}]})(
        r.randrange(len(LONG)), r.randrange(1, 40)), "guesses"),
]

srv = Server(S, "--model", "models/tinystories.safetensors", "--threads", "4")
errors, counts, stop = [], [0] * CLIENTS, threading.Event()


def client(k):
    rnd = random.Random(k)
    conn = srv.conn(timeout=60)
    while not stop.is_set():
        path, body, want = REQUESTS[rnd.randrange(len(REQUESTS))]
        try:
            conn.request("POST", path, body=json.dumps(body(rnd)), headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            status_want = 400 if want == "error" else 200
            if r.status != status_want or (want and want.encode() not in data):
                errors.append("%s: %d %r" % (path, r.status, data[:120]))
            counts[k] += 1
        except Exception as e:  # noqa: BLE001 - any failure is what this test counts
            errors.append("%s: %s" % (path, e))
            conn.close()
            conn = srv.conn(timeout=60)
    conn.close()


try:
    rss_start = srv.rss_kib()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    start = time.time()
    for t in threads:
        t.start()
    rss = []
    while time.time() - start < SECONDS:
        time.sleep(1)
        rss.append((time.time() - start, srv.rss_kib()))
    stop.set()
    for t in threads:
        t.join()
    took = time.time() - start
    warm = next(v for t, v in rss if t >= WARM)
    late = max(v for t, v in rss if t >= WARM)
    print("%d clients, %.0f s: %d requests (%.0f/s), %d errors; VmRSS %d MiB after %.0f s, at most %d MiB after, %d MiB at the end"
          % (CLIENTS, took, sum(counts), sum(counts) / took, len(errors), warm // 1024, WARM, late // 1024, rss[-1][1] // 1024))
    if errors:
        raise SystemExit("FAILED: %d errors, the first: %s" % (len(errors), errors[:3]))
    if min(counts) == 0:
        raise SystemExit("FAILED: a client got no answer in %.0f s" % SECONDS)
    if late - warm > max(24 * 1024, warm // 8):
        if sanitized:
            print("note: a sanitized build keeps freed memory in quarantine; the RSS growth is not checked")
        else:
            raise SystemExit("FAILED: VmRSS grew from %d to %d KiB under steady load" % (warm, late))
    # A stream's last event reaches the client a moment before the server's
    # completion callback counts it closed: wait for that, but not forever.
    for _ in range(50):
        ok = srv.get("/api/health")
        if ok[0] != 200 or ok[1]["streams"] == 0:
            break
        time.sleep(0.1)
    if ok[0] != 200 or ok[1]["streams"] != 0:
        raise SystemExit("FAILED: the server is not idle 5 s after the load: %r" % (ok,))
    time.sleep(1.5)  # the server hands memory back once no request is being answered (src/server/guard.c)
    rss_after = srv.rss_kib()
    print("VmRSS %d MiB before the load, %d MiB at most under it, %d MiB 1.5 s after it"
          % (rss_start // 1024, max(v for _, v in rss) // 1024, rss_after // 1024))
    if rss_after - rss_start > AFTER_BOUND and not sanitized:
        raise SystemExit("FAILED: VmRSS stayed at %d KiB after the load (%d before)" % (rss_after, rss_start))
finally:
    srv.stop_cleanly()
