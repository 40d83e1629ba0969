"""The view registry served: /api/views lists every view of `storylm help`
that the registry holds, with the defaults each --help shows; each served
view's /api/NAME (POST, and GET with a query string) equals its CLI --json
for the same parameters; a view the server does not serve says so."""
import json
import os
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Server, cli_json  # noqa: E402

S = sys.argv[1]
M, STORIES = "models/tinystories.safetensors", "data/stories.txt"
TEXT = "Once upon a time, there was a girl named Mia. Mia saw a big dog. The dog ran to Mia and"
checks = 0


def ok(what, cond):
    global checks
    checks += 1
    if not cond:
        raise SystemExit("FAILED: " + what)


def help_text(verb):
    return subprocess.run([S, verb, "--help"], capture_output=True, text=True, check=True).stdout


def cli_args(view, body):
    """The command line of a request's body: positionals in table order, then --option value."""
    args, options = [], ["--model", M, "--threads", "1"]
    for p in view["params"]:
        if p["positional"]:
            if p["name"] == "STORIES":
                args.append(STORIES)
            elif p.get("key") in body:
                args.append(body[p["key"]])
        elif p["name"] == "stories" and not p["cli_only"]:  # the server's stories (circuits' mean input)
            options += ["--stories", STORIES]
        elif p.get("key") in body and not p["request_only"] and p["name"] != "model":
            value = body[p["key"]]
            options += ["--" + p["name"]] if value is True else [] if value is False else ["--" + p["name"], str(value)]
    return [view["name"], *args, *options]


# the same text with its last name changed (as many tokens): a second text (patch's corrupt one)
TEXT2 = TEXT[: TEXT.rindex("Mia")] + "Tom and"


# a request's body with every required field: the text views' text, then TEXT2
def body_of(view):
    keys = [p["key"] for p in view["params"]
            if p["required"] and p.get("key") and p["type"] == "string" and p["name"] != "STORIES"]
    return {k: TEXT if i == 0 else TEXT2 for i, k in enumerate(keys)}


srv = Server(S, "--model", M, "--stories", STORIES, "--threads", "2")
try:
    status, listing = srv.get("/api/views")
    views = {v["name"]: v for v in listing["views"]}
    ok("GET /api/views lists views (%d)" % len(views), status == 200 and len(views) >= 1)
    verbs = subprocess.run([S, "help"], capture_output=True, text=True).stdout
    for name, view in views.items():
        ok("%s is a verb of storylm help" % name, ("\n  %s " % name) in verbs)
        shown = help_text(name)
        for p in view["params"]:
            if p["positional"] or p["request_only"] or p.get("default") in (None, False) or p["name"] == "threads":
                continue
            want = "--%s" % p["name"]
            options = shown[shown.index("\noptions:\n"):].splitlines()
            line = next((l for l in options if want + " " in l + " "), "")
            default = p["default"] if p["type"] in ("string", "heads") else ("%g" % p["default"])
            ok("%s --help shows %s's default %s" % (name, want, default), "(default: %s)" % default in line)

    served = [v for v in views.values() if v["serve"] != "CLI only"]
    ok("some views are served", served)
    for view in served:
        body = body_of(view)
        status, got = srv.post("/api/" + view["name"], body)
        ok("POST /api/%s answers 200 (%d: %s)" % (view["name"], status, str(got)[:200]), status == 200)
        want = cli_json(S, *cli_args(view, body))
        ok("POST /api/%s equals storylm %s --json" % (view["name"], view["name"]), got == want)
        if view["serve"] == "GET,POST":
            status, again = srv.get("/api/%s?%s" % (view["name"], urllib.parse.urlencode(body)))
            ok("GET /api/%s equals its POST" % view["name"], status == 200 and again == got)
        else:
            status, _ = srv.get("/api/" + view["name"])
            ok("GET /api/%s is refused (POST only)" % view["name"], status == 405)
    for view in views.values():
        if view["serve"] == "CLI only":
            status, err = srv.post("/api/" + view["name"], {})
            ok("%s is not served and says so" % view["name"], status == 405 and "not served" in err["error"])

    # parameters through both doors, checked with the entry's types and ranges
    if "distances" in views:
        got = srv.get("/api/distances?up_to=5&layer=1")[1]
        ok("GET distances?up_to=5 equals POST", got == srv.post("/api/distances", {"up_to": 5, "layer": 1})[1])
        ok("and the CLI's", got == cli_json(S, "distances", "--model", M, "--up-to", "5"))
        ok("a query's number that is not one is a 400", srv.get("/api/distances?up_to=five")[0] == 400)
        ok("a number out of its range is a 400", srv.post("/api/distances", {"up_to": -1})[0] == 400)
        ok("a field of the wrong type is a 400", srv.post("/api/distances", {"layer": "2"})[0] == 400)
    if "attend" in views:  # the request's kernels, as the CLI's --kernels
        body = {"text": TEXT, "kernels": "portable"}
        got = srv.post("/api/attend", body)[1]
        ok("POST attend with kernels portable equals the CLI's --kernels portable",
           got == cli_json(S, "attend", TEXT, "--model", M, "--kernels", "portable"))
        ok("and differs from the default kernels'", got != srv.post("/api/attend", {"text": TEXT})[1])
        ok("a kernels that is not one is a 400", srv.post("/api/attend", {"text": TEXT, "kernels": "fast"})[0] == 400)
    if "attend" in views:
        got = srv.get("/api/attend?" + urllib.parse.urlencode({"text": TEXT, "pos": 7, "head": 2}))[1]
        ok("GET attend with a query equals the CLI's",
           got == cli_json(S, "attend", TEXT, "--model", M, "--pos", "7", "--head", "2"))
        ok("GET attend?wide=true equals the CLI's --wide",
           srv.get("/api/attend?" + urllib.parse.urlencode({"text": TEXT, "wide": "true"}))[1] ==
           cli_json(S, "attend", TEXT, "--model", M, "--wide"))
        ok("a bool that is not one is a 400", srv.get("/api/attend?" + urllib.parse.urlencode({"text": TEXT, "wide": "maybe"}))[0] == 400)
    print("views_check: %d checks passed over %d views" % (checks, len(views)))
finally:
    srv.stop_cleanly()
