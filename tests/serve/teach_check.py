"""Teaching stories (see tests/e2e_serve_teach.sh)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Server, ok, CHECKS, cli_json  # noqa: E402

S = sys.argv[1]
M = "models/tinystories.safetensors"


def held_out(path):
    """The stories of a file split at <|endoftext|> lines, trimmed."""
    text = open(path, encoding="utf-8").read()
    parts, cur = [], []
    for line in text.split("\n"):
        if line.strip(" \t\r") == "<|endoftext|>":
            parts.append("\n".join(cur))
            cur = []
        else:
            cur.append(line)
    parts.append("\n".join(cur))
    return [p.strip() for p in parts if p.strip()]


record = cli_json(S, "info", "--model", M)["metadata"]
test_loss = float(record["test_loss"])
srv = Server(S, "--model", M, "--stories", "data/stories.txt")
try:
    status, st = srv.post("/api/stories", {"model": M})
    want = held_out("models/tinystories-test.txt")
    ok("the default model's test stories come from %s" % st.get("file"), status == 200 and st["file"].endswith("models/tinystories-test.txt"))
    ok("all %d of them, in the file's order" % len(want), [s["text"] for s in st["stories"]] == want and len(want) == 100)
    status, got = srv.get("/api/stories")
    ok("GET /api/stories gives the default model's", status == 200 and got == st)
    status, ab = srv.post("/api/ablate", {"heads": "3"})
    ok("Secret 3 reads the 100 held-out stories (%s: %d test stories)" % (ab.get("stories"), ab["stories"]["test_stories"]),
       status == 200 and ab["stories"]["test_stories"] == 100 and ab["stories"]["file"].endswith("tinystories-test.txt"))
    none = ab["ablations"][0]
    ok("its loss with every head on, %.6f, is the test loss the training recorded (%.6f)" % (none["loss"], test_loss),
       abs(none["loss"] - test_loss) < 5e-6)
    status, tr = srv.post("/api/trace", {"text": "Lily went to the park.", "ablate": "3", "ablate_mode": "mean"})
    ok("the mean ablation averages over them, with no warning: %s" % tr["ablation"]["text"],
       status == 200 and tr["ablation"]["text"].endswith("tinystories-test.txt"))
    snap = "models/snapshots/tinystories-plain.step250.safetensors"
    status, ss = srv.post("/api/stories", {"model": snap})
    ok("a snapshot reads the same stories (%s)" % ss.get("file"), status == 200 and ss["stories"] == st["stories"])
    status, models = srv.get("/api/models")
    mine = [m for m in models["models"] if m["path"] == M][0]
    ok("/api/models gives a model's run and step (%s, %s)" % (mine.get("run"), mine.get("step")),
       mine.get("run") == record.get("trained_run") and mine.get("step") == 13000)
finally:
    srv.stop_cleanly()

# No held-out file beside the model: the server's --stories, as before.
srv = Server(S, "--model", "alone/tinystories.safetensors", "--stories", "data/stories.txt")
try:
    status, st = srv.post("/api/stories", {"model": "alone/tinystories.safetensors"})
    ok("without the file, the server's --stories (%s)" % st.get("file"), status == 200 and st["file"] == "data/stories.txt")
    status, bad = srv.post("/api/stories", {"model": "../etc/passwd"})
    ok("a model it does not list is 404", status == 404)
    # mean ablation's means made on the request's kernels, as the CLI makes them after --kernels
    text = "Lily went to the park. She saw a dog and"
    for kernels in ("portable", "blas"):
        body = {"model": "alone/tinystories.safetensors", "text": text, "ablate": "3", "ablate_mode": "mean",
                "kernels": kernels}
        status, tr = srv.post("/api/trace", body)
        want = cli_json(S, "trace", text, "--model", "alone/tinystories.safetensors", "--ablate", "3",
                        "--ablate-mode", "mean", "--stories", "data/stories.txt", "--kernels", kernels)
        ok("a mean-ablated trace with kernels %s equals the CLI's --kernels %s" % (kernels, kernels),
           status == 200 and tr["inputs"] == want["inputs"] and tr["hidden"] == want["hidden"] and tr["guesses"] == want["guesses"])
finally:
    srv.stop_cleanly()
print("e2e_serve_teach: %d checks passed" % CHECKS[0])
