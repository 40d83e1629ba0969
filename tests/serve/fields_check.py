"""Every route of storylm serve reads its fields with its table of
parameters (the CLI's, src/base/params.c): a field it does not take is
refused with 400 naming it (and the nearest field when it is a typo of one),
a value out of range with 400 naming it and the value, and nothing is done
with defaults in their place; a GET's query likewise. Each view of GET
/api/views, each route of the API and each request of a batch is tried."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Server  # noqa: E402

S = sys.argv[1]
TEXT = "Once upon a time, there was a girl named Mia. Mia saw a big dog."
checks = 0


def ok(what, cond):
    global checks
    checks += 1
    if not cond:
        raise SystemExit("FAILED: " + what)


def distance(a, b):
    """Edit distance (insertions, deletions, substitutions), as the server's."""
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        diag, row[0] = row[0], i
        for j in range(1, len(b) + 1):
            diag, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1]))
    return row[len(b)]


def refused(srv, what, method, path, body, says, status=400):
    """body (or a GET's query in path) refused with status, the error saying says."""
    code, _, data = srv.request(method, path, body)
    try:
        err = json.loads(data)
    except ValueError:
        err = {}
    ok("%s: %s %s %s gets %d, not %d %r" % (what, method, path, json.dumps(body)[:80], status, code, data[:200]),
       code == status)
    ok("%s: the error says %r: %r" % (what, says, err.get("error")), says in err.get("error", ""))
    return err


srv = Server(S, "--model", "models/tinystories.safetensors", "--stories", "data/stories.txt", "--threads", "2")
try:
    views = srv.get("/api/views")[1]["views"]
    # ---- every view: an unknown field, a typo of one, a number out of its range ----
    for v in views:
        if v["serve"] == "CLI only":
            continue
        path, fields = "/api/" + v["name"], [p for p in v["params"] if "key" in p and not p["cli_only"]]
        need = {"text": TEXT} if any(p["key"] == "text" and p["required"] for p in fields) else {}
        for p in fields:  # the other texts a view needs (patch's clean and corrupt)
            if p["required"] and p["key"] != "text" and p["type"] == "string" and p["positional"]:
                need[p["key"]] = TEXT
        err = refused(srv, v["name"], "POST", path, dict(need, zzz_field=1), 'unknown field "zzz_field"')
        ok("%s: the hint lists its fields: %r" % (v["name"], err.get("hint")), "the fields of this request" in
           err.get("hint", ""))
        for p in fields:
            if p["type"] in ("int", "number") and "max" in p:
                too_big = p["max"] + 1
                refused(srv, v["name"], "POST", path, dict(need, **{p["key"]: too_big}),
                        '"%s": %s is out of range' % (p["key"], json.dumps(too_big)))
            if len(p["key"]) > 4:  # a typo of a key: its nearest
                typo = p["key"][:-2] + p["key"][-1] + p["key"][-2]
                others = [distance(typo, q["key"]) for q in fields if q is not p]
                if typo != p["key"] and all(d > distance(typo, p["key"]) for d in others):
                    refused(srv, v["name"], "POST", path, dict(need, **{typo: 1}),
                            'unknown field "%s"; did you mean "%s"?' % (typo, p["key"]))
        if v["serve"] == "GET,POST" and not need:
            refused(srv, v["name"] + " by GET", "GET", path + "?zzz_field=1", None, 'unknown field "zzz_field"')
        # a field of the command line only is no field of a request
        refused(srv, v["name"], "POST", path, dict(need, json=True), 'unknown field "json"')
    # ---- the routes that are not views, as /api/views lists their fields ----
    routes = srv.get("/api/views")[1]["routes"]
    ok("/api/views lists the routes' fields: %r" % [r["url"] for r in routes],
       {"/api/generate", "/api/train", "/api/tokenize", "/api/models"} <= {r["url"] for r in routes})
    for route in routes:
        if route["url"] == "/api/train" and route["method"] == "POST":
            continue  # a run in range would start: its refusals are below
        get = route["method"] == "GET"
        need = {p["key"]: "Lily" for p in route["params"] if p["required"]}
        refused(srv, route["url"], route["method"], route["url"] + ("?zzz_field=1" if get else ""),
                None if get else dict(need, zzz_field=1), 'unknown field "zzz_field"')
        for p in route["params"]:
            if p["type"] in ("int", "number") and "max" in p:
                too_big = p.get("served_max", p["max"]) + 1
                refused(srv, route["url"], route["method"], route["url"], dict(need, **{p["key"]: too_big}),
                        '"%s": %s is out of range' % (p["key"], json.dumps(too_big)))
    # ---- the cases of the issue, by hand ----
    refused(srv, "generate", "POST", "/api/generate", {"prompt": "Lily", "tempreature": 0.5},
            'unknown field "tempreature"; did you mean "temperature"?')
    refused(srv, "generate", "POST", "/api/generate", {"prompt": "Lily", "temperature": 200},
            '"temperature": 200 is out of range (0 to 100)')
    refused(srv, "generate", "POST", "/api/generate", {"prompt": "Lily", "max_tokens": 2001},
            '"max_tokens": 2001 is out of range (0 to 2000)')
    refused(srv, "generate", "POST", "/api/generate", {"prompt": "Lily", "samples": 2}, 'unknown field "samples"')
    refused(srv, "generate", "POST", "/api/generate", {"prompt": "Lily", "ablate_mode": "half", "ablate": "3"},
            '"ablate_mode": "half" is not zero or mean')
    refused(srv, "train", "POST", "/api/train", {"steps": 5, "arch": "transformer"}, 'unknown field "arch"')
    refused(srv, "train", "POST", "/api/train", {"steps": 5, "lr": 0}, '"lr": 0 is out of range (1e-07 to 1)')
    refused(srv, "train", "POST", "/api/train", {"steps": 20001}, '"steps": 20001 is out of range (1 to 20000)')
    refused(srv, "train", "POST", "/api/train", {"stpes": 5}, 'unknown field "stpes"; did you mean "steps"?')
    refused(srv, "train stop", "POST", "/api/train/stop", {"now": True}, 'unknown field "now"')
    refused(srv, "tokenize", "POST", "/api/tokenize", {"text": "Lily", "ablate": "3"}, 'unknown field "ablate"')
    refused(srv, "stories", "POST", "/api/stories", {"modle": "x"}, 'unknown field "modle"; did you mean "model"?')
    refused(srv, "batch", "POST", "/api/batch", {"requests": [], "zzz_field": 1}, 'unknown field "zzz_field"')
    refused(srv, "a batch's request", "POST", "/api/batch",
            {"requests": [{"url": "/api/attend", "body": {"text": TEXT}, "bodyy": {}}]},
            'unknown field "bodyy"; did you mean "body"?')
    status, data = srv.post("/api/batch", {"requests": [
        {"url": "/api/attend", "body": {"text": TEXT, "hed": 2}},
        {"url": "/api/tokenize", "body": {"text": "Lily", "zzz_field": 1}},
        {"url": "/api/attend", "body": {"text": TEXT, "head": 2}}]})
    ok("a batch answers each request alone: %r" % status, status == 200)
    answers = data["answers"]
    ok("a batch's attend refuses a typo: %r" % answers[0],
       answers[0]["status"] == 400 and 'did you mean "head"?' in answers[0]["body"]["error"])
    ok("a batch's tokenize refuses an unknown field: %r" % answers[1],
       answers[1]["status"] == 400 and 'unknown field "zzz_field"' in answers[1]["body"]["error"])
    ok("a batch's request of its fields is answered: %r" % answers[2]["status"], answers[2]["status"] == 200)
    for path in ("/api/models", "/api/health", "/api/views", "/api/train", "/api/stories"):
        refused(srv, path, "GET", path + "?zzz_field=1", None, 'unknown field "zzz_field"')
    refused(srv, "download", "GET", "/api/download?model=models/tinystories.safetensors&zzz_field=1", None,
            'unknown field "zzz_field"')
    refused(srv, "upload", "POST", "/api/upload?name=a.txt&nmae=b.txt", None, 'unknown field "nmae"')
    # ---- what is still taken ----
    ok("generate with its fields streams", srv.events({"prompt": "Lily", "max_tokens": 3, "temperature": 0})[0] == 200)
    ok("attend with its fields answers", srv.post("/api/attend", {"text": TEXT, "head": 2, "ablate": [1, 3]})[0] == 200)
    ok("GET with a query of its fields answers", srv.get("/api/distances?up_to=4")[0] == 200)
    ok("the server is still up", srv.get("/api/health")[0] == 200)
    print("serve fields: %d checks passed" % checks)
finally:
    srv.stop()
