"""storylm serve's OpenAI-compatible routes through raw HTTP (no npm package
needed; tests/e2e_openai.sh drives them with the official client): the
prompt's log-probabilities written as eval --text --json writes its losses,
a stream's chunks adding up to the unstreamed text and ending in [DONE],
32 concurrent identical seeded requests giving one text, a client leaving a
stream, hostile bodies answered in OpenAI's error shape, and /metrics'
routes bounded however many URLs clients make up."""
import json
import re
import subprocess
import sys
import threading
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Server, ok  # noqa: E402

STORYLM = sys.argv[1]
MODEL = "models/tinystories.safetensors"
TEXT = "Tom had a little red boat. He sailed it on the pond with his dad."


def completion(srv, body):
    status, headers, data = srv.request("POST", "/v1/completions", body)
    return status, data.decode()


def openai_error(srv, method, path, raw, want):
    status, _, data = srv.request(method, path, raw=raw.encode() if isinstance(raw, str) else raw)
    err = json.loads(data).get("error") if data.startswith(b"{") else None
    ok("%s %s %r: status %d, want %d (%s)" % (method, path, raw[:60], status, want, data[:200]), status == want)
    ok("%s %r: OpenAI's error shape: %s" % (path, raw[:60], data[:200]),
       isinstance(err, dict) and isinstance(err.get("message"), str) and isinstance(err.get("type"), str)
       and "param" in err and "code" in err)


def check_echo_numbers(srv):
    """The prompt's log-probabilities are eval --text's losses negated, the same digits."""
    p = subprocess.run([STORYLM, "eval", "--text", TEXT, "--model", MODEL, "--json"], capture_output=True, text=True)
    ok("eval --text: " + p.stderr, p.returncode == 0)
    n = len(json.loads(p.stdout)["tokens"])
    losses = re.findall(r'"loss":\s*([-0-9.e+]+)', p.stdout)[:n]
    status, data = completion(srv, {"model": MODEL, "prompt": TEXT, "max_tokens": 0, "echo": True, "logprobs": 1})
    ok("echo: %d %s" % (status, data[:200]), status == 200)
    written = re.search(r'"token_logprobs":\[null,([^\]]*)\]', data).group(1).split(",")
    ok("the prompt's log-probabilities are eval --text's numbers as written:\n  %s\n  %s" % (written[:5], losses[1:6]),
       written == ["-" + x for x in losses[1:]])


def events(srv, body, keep=None):
    """The data lines of a streamed completion (keep: stop reading after that many)."""
    c = srv.conn()
    c.request("POST", "/v1/completions", body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    ok("a stream answers 200 (%d)" % r.status, r.status == 200)
    out = []
    while keep is None or len(out) < keep:
        line = r.readline()
        if not line:
            break
        if line.startswith(b"data: "):
            out.append(line[6:].decode().rstrip("\n"))
    c.close()
    return out


def check_stream(srv):
    for body in ({"prompt": "Lily went to the park", "max_tokens": 80, "seed": 4},
                 {"prompt": ["Ben saw", "A cat"], "max_tokens": 30, "seed": 8, "n": 2, "stop": [".", "!"],
                  "echo": True, "logprobs": 1}):
        body["model"] = MODEL
        status, data = completion(srv, body)
        plain = [c["text"] for c in json.loads(data)["choices"]]
        got = events(srv, dict(body, stream=True))
        ok("a stream ends with data: [DONE] (%s)" % got[-1:], got[-1] == "[DONE]")
        texts = [""] * len(plain)
        for e in got[:-1]:
            for c in json.loads(e)["choices"]:
                texts[c["index"]] += c["text"]
        ok("streamed text equals the unstreamed text byte for byte:\n  %r\n  %r" % (texts, plain), texts == plain)
    before = json.loads(srv.request("GET", "/api/health")[2])
    events(srv, {"model": MODEL, "prompt": "Sue", "max_tokens": 2000, "stream": True}, keep=3)  # and goes away
    status, data = completion(srv, {"model": MODEL, "prompt": "Sue", "max_tokens": 5})
    ok("the server answers after a client left a stream (%d)" % status, status == 200 and before["ok"])


def check_concurrent(srv):
    body = {"model": MODEL, "prompt": "The dog ran to the", "max_tokens": 50, "seed": 99, "temperature": 1.3}
    alone = json.loads(completion(srv, body)[1])["choices"][0]["text"]
    texts = [None] * 32

    def one(i):
        texts[i] = json.loads(completion(srv, body)[1])["choices"][0]["text"]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok("32 concurrent identical seeded requests give one text: %d texts" % len(set(texts)),
       set(texts) == {alone})


def check_errors(srv):
    for raw in ['{"prompt": "a", "tempreature": 1}', '{"prompt": "a", "max_tokens": 1e400}',
                '{"prompt": "a", "n": 2147483648}', '{"prompt": [[1, 2], "a"]}', '{"prompt": [[[1]]]}',
                '{"prompt": "\\u0000"}', '{"prompt": "\\ud800"}', '[]', 'null', '{"prompt": "a"',
                '{"prompt": "a", "stop": [1]}', '{"prompt": "a", "logprobs": true}', '{"prompt": "a", "seed": -2}',
                '{"prompt": "a", "ablate_mode": "half"}', '{"model": 3}']:
        openai_error(srv, "POST", "/v1/completions", raw, 400)
    openai_error(srv, "POST", "/v1/chat/completions", '{"messages": []}', 400)
    status, _, data = srv.request("POST", "/v1/completions", raw=b"prompt=a")
    ok("a body not JSON gets a hint in the completions' words: %s" % data[:300],
       status == 400 and b"prompt" in data and b"\\\"text\\\"" not in data)
    openai_error(srv, "GET", "/v1/models?limit=3", "", 400)
    openai_error(srv, "POST", "/tokenize", '{"content": "a", "content2": "b"}', 400)
    openai_error(srv, "POST", "/detokenize", '{"tokens": [1e300]}', 400)
    openai_error(srv, "GET", "/v1/embeddings", "", 404)


def check_metrics(srv):
    for i in range(100):  # made-up URLs: counted as one route, not a hundred
        srv.request("GET", "/api/made-up-%d" % i)
        srv.request("GET", "/v1/made-up-%d" % i)
    status, headers, data = srv.request("GET", "/metrics")
    text = data.decode()
    ok("/metrics: %d" % status, status == 200 and headers.get("Content-Type", "").startswith("text/plain"))
    routes = set(re.findall(r'route="([^"]*)"', text))
    ok("made-up URLs count as 'other': %s" % sorted(routes)[:20], "other" in routes and len(routes) < 20
       and not any("made-up" in r for r in routes))
    n = int(re.search(r'storylm_requests_total\{route="/v1/completions",status="200"\} (\d+)', text).group(1))
    ok("completions counted (%d)" % n, n >= 36)


def main():
    srv = Server(STORYLM, "--model", MODEL, "--metrics")
    try:
        check_echo_numbers(srv)
        check_stream(srv)
        check_concurrent(srv)
        check_errors(srv)
        check_metrics(srv)
    finally:
        srv.stop_cleanly()
    off = Server(STORYLM, "--model", MODEL, log="serve-off.log")
    try:
        status, _, data = off.request("GET", "/metrics")
        ok("/metrics without --metrics: %d" % status, status == 404 and b"--metrics" in data)
    finally:
        off.stop_cleanly()
    print("openai_check: all passed")


main()
