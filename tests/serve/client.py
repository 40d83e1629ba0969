"""What the serve tests share: a small HTTP client for the storylm server
(python3's http.client, no other packages), starting and stopping it."""
import http.client
import json
import os
import re
import subprocess
import sys
import time


class Server:
    """storylm serve on a free port, in the current folder."""

    def __init__(self, storylm, *args, log="serve.log"):
        self.log_name = log
        self.log = open(log, "w")
        self.proc = subprocess.Popen([storylm, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"http://([\d.]+):(\d+)/", line)
        if not m:
            self.proc.kill()
            raise SystemExit("FAILED: storylm serve did not print its address: %r (see %s)" % (line, log))
        self.host, self.port = m.group(1), int(m.group(2))

    def conn(self, timeout=60):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, raw=None, headers=None):
        """(status, headers, bytes) of one request on a fresh connection."""
        c = self.conn()
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        h = {"Content-Type": "application/json"} if data is not None else {}
        h.update(headers or {})
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        out = (r.status, dict(r.getheaders()), r.read())
        c.close()
        return out

    def post(self, path, body=None, raw=None, headers=None):
        status, _, data = self.request("POST", path, body, raw, headers)
        return status, parse(data)

    def get(self, path):
        status, _, data = self.request("GET", path)
        return status, parse(data)

    def events(self, body, keep=None):
        """The Server-Sent Events of POST /api/generate, as (name, data) pairs;
        keep: stop after that many events and drop the connection."""
        c = self.conn()
        c.request("POST", "/api/generate", body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            return r.status, parse(r.read())
        out, name, data = [], None, []
        while keep is None or len(out) < keep:
            line = r.readline()
            if not line:
                break
            line = line.decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif line == "" and data:
                out.append((name or "message", json.loads("\n".join(data))))
                name, data = None, []
        c.close()
        return 200, out

    def stop(self, sig=15, timeout=30):
        """Sends sig; the exit code (None when it did not stop in time)."""
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None

    def stop_cleanly(self):
        """SIGTERM; fails the test, showing the server's log, unless it exits 0."""
        code = self.stop()
        if code != 0:
            with open(self.log_name) as f:
                sys.stderr.write(f.read())
            raise SystemExit("FAILED: storylm serve did not stop cleanly on SIGTERM (exit %r)" % code)

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


CHECKS = [0]  # checks passed by ok()


def ok(what, cond):
    """A check: counted, or the test fails saying what."""
    CHECKS[0] += 1
    if not cond:
        raise SystemExit("FAILED: " + what)


def parse(data):
    try:
        return json.loads(data)
    except ValueError:
        return data


def cli_json(storylm, *args):
    """storylm VERB ... --json, parsed: at the CLI's default thread count, as
    a user runs it (the server computes each request on one thread; the
    numbers have the same bits at any thread count)."""
    p = subprocess.run([storylm, *args, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("FAILED: storylm %s: %s" % (" ".join(args), p.stderr))
    return json.loads(p.stdout)


def cli_text(storylm, *args):
    p = subprocess.run([storylm, *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("FAILED: storylm %s: %s" % (" ".join(args), p.stderr))
    return p.stdout


def wait_for(what, check, timeout=120, every=0.25):
    end = time.time() + timeout
    while time.time() < end:
        v = check()
        if v:
            return v
        time.sleep(every)
    raise SystemExit("FAILED: timed out waiting for " + what)
