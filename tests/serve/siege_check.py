"""storylm serve under siege, through real HTTP on loopback:
- 600 connections that send half a request and wait: a health request on a
  new connection is answered within a second all the while, and the
  half-open ones are closed after the header (or body) timeout;
- Host must name the server (127.0.0.1, localhost, [::1] with its port):
  another name, an empty or a repeated Host gets 403 with a message;
- numbers of every endpoint checked for type and range (null is no number);
- texts with a NUL or invalid UTF-8 refused with tokenize's message;
- a model re-saved within the same second with the same size is read again.
Bounded in count and time: it runs under the sanitizers too."""
import json
import os
import shutil
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Server, cli_json, ok, CHECKS  # noqa: E402

S = sys.argv[1]
M = "models/tinystories.safetensors"
TEXT = "Once upon a time, there was a girl named Mia. Mia saw a big dog."
HALF_OPEN = 600
HEADER_SECONDS, BODY_SECONDS = 5, 10  # src/server/server_internal.h, docs/server.md


def raw_request(srv, data, timeout=5):
    """Sends bytes on a new connection; (status, body) of the answer, or (None, reason)."""
    s = socket.create_connection((srv.host, srv.port), timeout=timeout)
    try:
        s.sendall(data)
        got = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
            head, _, body = got.partition(b"\r\n\r\n")
            length = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
            if length and len(body) >= length[0]:
                break
    except OSError as e:
        return None, str(e)
    finally:
        s.close()
    if not got:
        return None, "closed without an answer"
    head, _, body = got.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def timed_health(srv):
    t0 = time.time()
    status, body = raw_request(srv, b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % srv.port,
                               timeout=3)
    return status, time.time() - t0, body


def half_open(srv, n):
    """n connections, each sending half a request: half of them stop in the
    headers, the others after the headers, in the body."""
    socks = []
    for k in range(n):
        s = socket.create_connection((srv.host, srv.port), timeout=10)
        if k % 2:
            s.sendall(b"POST /api/tokenize HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Len" % srv.port)
        else:
            s.sendall(b"POST /api/tokenize HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n{\"text\": \"Lily" % srv.port)
        socks.append(s)
    return socks


def closed_by_server(s):
    """True when the server closed s (it reads the end, or a reset)."""
    s.settimeout(0.01)
    try:
        return s.recv(1024) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


srv = Server(S, "--model", M, "--threads", "2")
try:
    # ---- slow clients never keep others waiting ------------------------------------------
    start = time.time()
    socks = half_open(srv, HALF_OPEN)
    opened = time.time() - start
    slowest = 0.0
    for probe in range(5):
        status, took, body = timed_health(srv)
        ok("health answered while %d connections wait half-open (probe %d: %r)" % (HALF_OPEN, probe, body[:100]),
           status == 200)
        slowest = max(slowest, took)
        time.sleep(0.2)
    ok("health answered within a second each time (slowest %.3f s)" % slowest, slowest < 1.0)
    status, h = srv.get("/api/health")
    c = h["connections"]
    print("%d half-open connections opened in %.2f s; 5 health probes, the slowest %.1f ms; %s"
          % (HALF_OPEN, opened, slowest * 1000, json.dumps(c)))
    ok("the server holds at most 256 connections of one address (open %d, dropped %d)" % (c["open"], c["dropped"]),
       c["open"] <= 256 + 2 and c["dropped"] + c["timed_out"] >= HALF_OPEN - 256)
    status, body = srv.post("/api/tokenize", {"text": TEXT})
    ok("a real request is answered too", status == 200 and isinstance(body, list))
    # every half-open connection is closed by the header or body timeout (counted from its start)
    deadline = start + opened + BODY_SECONDS + 3
    while time.time() < deadline and not all(closed_by_server(s) for s in socks):
        time.sleep(0.25)
    left = sum(not closed_by_server(s) for s in socks)
    ok("the server closed every half-open connection within %d s (%d left)" % (BODY_SECONDS + 3, left), left == 0)
    for s in socks:
        s.close()
    c = srv.get("/api/health")[1]["connections"]
    print("all closed %.1f s after the first was opened: %s" % (time.time() - start, json.dumps(c)))
    ok("closed by timeout: %d, by newcomers: %d" % (c["timed_out"], c["dropped"]), c["timed_out"] > 0)
    # headers trickled a byte at a time: cut at the header timeout, not kept forever
    s = socket.create_connection((srv.host, srv.port), timeout=10)
    t0, closed = time.time(), False
    for ch in (b"GET /api/health HTTP/1.1\r\nX-Slow: " + b"a" * 200):
        try:
            s.sendall(bytes([ch]))
        except OSError:
            closed = True
            break
        if closed_by_server(s):
            closed = True
            break
        time.sleep(0.1)
        if time.time() - t0 > HEADER_SECONDS + 3:
            break
    s.close()
    ok("headers trickled byte by byte are cut after %d s (%.1f s)" % (HEADER_SECONDS, time.time() - t0),
       closed and time.time() - t0 < HEADER_SECONDS + 2)

    # a body said to be a gigabyte: 413 at once, unread; a chunked one without end: closed past 16 MiB
    t0 = time.time()
    status, body = raw_request(srv, b"POST /api/tokenize HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                               b"Content-Length: 1000000000\r\n\r\n{\"text\": \"" % srv.port)
    ok("a gigabyte body is refused with 413 before it is sent (%r, %.2f s)" % (status, time.time() - t0),
       status == 413 and time.time() - t0 < 2)
    s = socket.create_connection((srv.host, srv.port), timeout=10)
    s.sendall(b"POST /api/tokenize HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nTransfer-Encoding: chunked\r\n\r\n" % srv.port)
    chunk, sent, t0 = b"10000\r\n" + b"a" * 65536 + b"\r\n", 0, time.time()
    try:
        while sent < 64 * 2 ** 20 and time.time() - t0 < 20:
            s.sendall(chunk)
            sent += 65536
    except OSError:
        pass
    s.close()
    ok("a chunked body without end is cut (%d MiB sent, %.1f s)" % (sent >> 20, time.time() - t0), sent < 64 * 2 ** 20)

    # ---- Host names the server ------------------------------------------------------------
    def host_status(headers):
        lines = b"".join(b"%s: %s\r\n" % (k, v) for k, v in headers)
        return raw_request(srv, b"GET /api/health HTTP/1.1\r\n" + lines + b"Connection: close\r\n\r\n")

    port = str(srv.port).encode()
    for name in (b"127.0.0.1:" + port, b"localhost:" + port, b"LocalHost:" + port, b"[::1]:" + port):
        ok("Host %s is answered" % name.decode(), host_status([(b"Host", name)])[0] == 200)
    for what, headers in [("another name", [(b"Host", b"evil.example:" + port)]),
                          ("a rebound name without a port", [(b"Host", b"evil.example")]),
                          ("loopback on another port", [(b"Host", b"127.0.0.1:1")]),
                          ("loopback without the port", [(b"Host", b"127.0.0.1")]),
                          ("a name that begins like loopback", [(b"Host", b"localhost.evil.example:" + port)]),
                          ("an empty Host", [(b"Host", b"")]),
                          ("two Host headers", [(b"Host", b"127.0.0.1:" + port), (b"Host", b"evil.example:" + port)]),
                          ("two equal Host headers", [(b"Host", b"127.0.0.1:" + port), (b"host", b"127.0.0.1:" + port)])]:
        status, body = host_status(headers)
        ok("%s is refused with 403 and a message (%r %r)" % (what, status, body[:120]),
           status == 403 and json.loads(body).get("error"))
    status, body = raw_request(srv, b"GET /api/health HTTP/1.0\r\n\r\n")
    ok("no Host at all is refused (%r)" % status, status in (400, 403))
    status, body = raw_request(srv, b"GET / HTTP/1.1\r\nHost: evil.example:%d\r\nConnection: close\r\n\r\n" % srv.port)
    ok("the page itself is refused to another name", status == 403)
    ok("a request from another site is still refused", srv.request("POST", "/api/attend", {"text": TEXT}, headers={
        "Origin": "http://evil.example"})[0] == 403)

    # ---- numbers are numbers, in range ------------------------------------------------------
    def refused(what, path, body, status_want=400):
        CHECKS[0] += 1
        status, answer = srv.post(path, body)
        if status != status_want or not isinstance(answer, dict) or not answer.get("error"):
            raise SystemExit("FAILED: %s: want %d with a message, got %d %r" % (what, status_want, status, answer))

    for key, bad in [("steps", None), ("steps", "300"), ("steps", 1e400), ("steps", 2 ** 63), ("steps", -1), ("steps", 1.5),
                     ("steps", True), ("steps", [300]), ("seed", None), ("seed", -1), ("seed", 2 ** 31), ("seed", 2 ** 64),
                     ("eval_every", None), ("eval_every", -5), ("eval_every", 1e10)]:
        refused("/api/train with %s %r" % (key, bad), "/api/train", {key: bad})
    ok("no training started by those", srv.get("/api/train")[1]["state"] == "idle")
    for path, key, bad in [("/api/attend", "pos", None), ("/api/attend", "head", None), ("/api/attend", "head", 2 ** 40),
                           ("/api/attend", "wide", None), ("/api/trace", "units", None), ("/api/trace", "top", 0),
                           ("/api/distances", "up_to", None), ("/api/heads", "top", None), ("/api/generate", "max_tokens", None),
                           ("/api/generate", "seed", None), ("/api/generate", "temperature", None),
                           ("/api/generate", "top_k", -1), ("/api/generate", "top_p", None)]:
        body = {"text": TEXT, "prompt": "Lily", key: bad}
        refused("%s with %s %r" % (path, key, bad), path, body)

    # ---- texts: NUL and invalid UTF-8 refused as tokenize refuses them ------------------------------
    p = __import__("subprocess").run([S, "tokenize", "--model", M, "-"], input=b"a\x00b", capture_output=True)
    cli_msg = p.stderr.decode()
    ok("tokenize refuses a NUL (%r)" % cli_msg, p.returncode != 0 and "NUL byte at byte offset 1" in cli_msg)
    for path in ("/api/tokenize", "/api/loss", "/api/attend"):
        status, answer = srv.post(path, {"text": "a\u0000b"})
        ok("%s refuses a NUL in the text with tokenize's message (%r)" % (path, answer),
           status == 400 and answer["error"] == "text: NUL byte at byte offset 1")
    status, answer = srv.post("/api/generate", {"prompt": "Lily\u0000 found"})
    ok("/api/generate refuses a NUL in the prompt (%r)" % answer, status == 400 and "NUL byte at byte offset 4" in answer["error"])
    status, answer = srv.post("/api/batch", {"requests": [{"url": "/api/tokenize", "body": {"text": "ok \u0000"}}]})
    ok("a NUL inside a batch is refused (%r)" % answer, status == 400 and "NUL byte at byte offset 3" in answer["error"])
    status, answer = srv.post("/api/tokenize", raw=b'{"text": "a\\\\u0000b"}')
    ok("an escaped backslash before u0000 is no NUL (%r)" % answer, status == 200)
    status, answer = srv.post("/api/tokenize", raw=b'{"text": "a\x00b"}')
    ok("a raw NUL byte in the body is refused (%r)" % answer, status == 400)
    status, answer = srv.post("/api/tokenize", raw=b'{"text": "Lily \xff found"}')
    ok("invalid UTF-8 is refused with tokenize's message (%r)" % answer,
       status == 400 and answer["error"] == "text: invalid UTF-8 at byte offset 5 (byte 0xFF)")

    # ---- a model re-saved within the same second, same size, is read again ----------------------
    os.makedirs("models", exist_ok=True)
    shutil.copy(M, "models/resaved.safetensors")
    st = os.stat("models/resaved.safetensors")
    before = srv.post("/api/loss", {"model": "models/resaved.safetensors", "text": TEXT})[1]["loss"]
    with open("models/resaved.safetensors", "r+b") as f:  # other weights, same size, same inode
        f.seek(st.st_size - 4096)
        f.write(bytes(4096))
    sec = st.st_mtime_ns // 10 ** 9 * 10 ** 9
    os.utime("models/resaved.safetensors", ns=(sec + 1, sec + 123456789 if st.st_mtime_ns != sec + 123456789 else sec + 7))
    st2 = os.stat("models/resaved.safetensors")
    ok("the file kept its size and second", st2.st_size == st.st_size and st2.st_mtime_ns // 10 ** 9 == st.st_mtime_ns // 10 ** 9)
    after = srv.post("/api/loss", {"model": "models/resaved.safetensors", "text": TEXT})[1]["loss"]
    want = cli_json(S, "eval", "--text", TEXT, "--model", "models/resaved.safetensors")["loss"]
    ok("the re-saved model is read again (%.6f before, %.6f now, the CLI %.6f)" % (before, after, want),
       after == want and after != before)
    print("serve siege: %d checks passed" % CHECKS[0])
finally:
    srv.stop_cleanly()
