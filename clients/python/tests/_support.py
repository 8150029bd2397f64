"""Test support: builds canvasd from this tree, runs it on a free loopback port,
a small fault-injecting TCP proxy and a fake OpenAI-compatible model. Imported first by every test module; it
also puts the client's source directory first on sys.path."""

import atexit
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_DIR = os.path.dirname(HERE)
REPO_ROOT = os.path.dirname(os.path.dirname(CLIENT_DIR))
if CLIENT_DIR not in sys.path:
    sys.path.insert(0, CLIENT_DIR)

_build_lock = threading.Lock()
_binary = []  # the path of the canvasd built for this test process (at most one entry)


def canvasd_binary():
    """Returns the path of a canvasd binary: $CANVASD_BIN if set, otherwise one
    built once per test process with `go build ./cmd/canvasd` from the repo root.
    A failing build raises (the tests fail; they never skip)."""
    env_bin = os.environ.get("CANVASD_BIN")
    if env_bin:
        return env_bin
    with _build_lock:
        if _binary:
            return _binary[0]
        if not os.path.exists(os.path.join(REPO_ROOT, "go.mod")):
            raise RuntimeError("no go.mod at %s: cannot build canvasd" % REPO_ROOT)
        tmp = tempfile.mkdtemp(prefix="canvasd-pytest-bin-")
        atexit.register(shutil.rmtree, tmp, True)
        out = os.path.join(tmp, "canvasd")
        t0 = time.monotonic()
        p = subprocess.run(
            ["go", "build", "-o", out, "./cmd/canvasd"],
            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900,
        )
        if p.returncode != 0:
            raise RuntimeError("go build ./cmd/canvasd failed:\n" + p.stdout.decode("utf-8", "replace"))
        sys.stderr.write("[canvas_client tests] built canvasd in %.1fs\n" % (time.monotonic() - t0))
        _binary.append(out)
        return out


def free_port():
    """Returns a TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CanvasdServer:
    """A real canvasd process on 127.0.0.1 with its own data dir (embedded store)."""

    def __init__(self, data_dir=None, port=None, admin_token=None, env=None):
        self.extra_env = dict(env or {})
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="canvasd-pytest-data-")
        self._own_dir = data_dir is None
        self.port = port or free_port()
        self.admin_token = admin_token or "admin-" + uuid.uuid4().hex
        self.url = "http://127.0.0.1:%d" % self.port
        self.proc = None
        self._atexit = False
        self.log_path = os.path.join(self.data_dir, "canvasd-test.log")

    def start(self, timeout=30.0):
        """Starts the process and waits until /readyz answers 200."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("CANVASD_")}
        env.update(self.extra_env)
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                [canvasd_binary(), "serve", "--addr", "127.0.0.1:%d" % self.port,
                 "--data-dir", self.data_dir, "--admin-token", self.admin_token],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            )
        finally:
            log.close()
        if not self._atexit:
            atexit.register(self.kill)  # never leave a server behind, even if a test run is interrupted
            self._atexit = True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("canvasd exited with %s before it was ready:\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=1) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError("canvasd was not ready within %.0fs:\n%s" % (timeout, self.log_tail()))

    def kill(self):
        """Kills the process at once (SIGKILL): open connections just drop."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self):
        """Stops the process gracefully (SIGTERM), killing it after 10 s."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def cleanup(self):
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""


def _read_http_request(sock):
    """Reads one whole HTTP/1.1 request (headers + Content-Length body) from sock."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return buf
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


class FaultProxy:
    """A TCP proxy on 127.0.0.1 in front of upstream_port. Each new client
    connection takes the next action from `actions` (then "pass"):

    - "pass": forward both ways.
    - "drop_response": forward the request, let the server answer, then close
      the client connection without forwarding the answer (the command applied
      but the client never heard).
    - "503": answer the request with 503 (Retry-After: 0) without forwarding it.
    - "500": answer the request with a 500 problem document without forwarding it.
    - "sse_retry0": answer the request with an event stream that sends only
      ``retry: 0`` and ends, without forwarding it.

    requests records the raw request bytes each connection sent upstream (or
    was answered with 503 for); client_closed is set when a client closes.
    """

    def __init__(self, upstream_port, actions=None):
        self.upstream_port = upstream_port
        self.actions = list(actions or [])
        self.requests = []
        self.client_closed = threading.Event()
        self.connections = 0
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.1)  # so the accept loop notices close()
        self.port = self._sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self._stop = False
        self._open = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def close(self):
        self._stop = True
        self._thread.join(5)
        try:
            self._sock.close()
        except OSError:
            pass
        with self._lock:
            socks, self._open = self._open, []
        for s in socks:
            try:
                s.close()
            except OSError:
                pass

    def _accept(self):
        while not self._stop:
            try:
                c, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c.settimeout(None)
            with self._lock:
                action = self.actions.pop(0) if self.actions else "pass"
                self.connections += 1
                self._open.append(c)
            threading.Thread(target=self._handle, args=(c, action), daemon=True).start()

    def _record(self, data):
        with self._lock:
            self.requests.append(data)

    def _handle(self, c, action):
        try:
            if action == "503":
                req = _read_http_request(c)
                self._record(req)
                c.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
                          b"Retry-After: 0\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
                c.close()
                return
            if action == "500":
                self._record(_read_http_request(c))
                body = b'{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"boom"}'
                c.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/problem+json\r\n"
                          b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                c.close()
                return
            if action == "sse_retry0":
                self._record(_read_http_request(c))
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                          b": hello\n\nretry: 0\n\n")
                c.close()
                return
            up = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=30)
            with self._lock:
                self._open.append(up)
            if action == "drop_response":
                req = _read_http_request(c)
                self._record(req)
                up.sendall(req)
                up.recv(65536)  # the server answered: it has applied the command
                up.close()
                c.close()
                return
            t = threading.Thread(target=self._pump, args=(up, c, None), daemon=True)
            t.start()
            self._pump(c, up, self._record)
            self.client_closed.set()
            t.join(5)
        except OSError:
            pass
        finally:
            for s in (c,):
                try:
                    s.close()
                except OSError:
                    pass

    def _pump(self, src, dst, record):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if record:
                    record(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass


class FakeOpenAI:
    """A local server speaking the OpenAI chat-completions streaming protocol
    (``data:`` chunks, then ``data: [DONE]``), as the Go and TypeScript tests
    use: it answers each request with the next scripted reply (a list of
    content deltas; an empty actions list once the script is used up) and
    records the parsed requests. ``url`` is the OpenAI base URL (.../v1)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/v1/chat/completions" or self.headers.get("Authorization") != "Bearer sk-test":
                    self.send_response(401)
                    self.end_headers()
                    return
                req = json.loads(body)
                i = len(fake.requests)
                fake.requests.append(req)
                chunks = fake.replies[i] if i < len(fake.replies) else ['{"actions":[]}']
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()

                def chunk(delta, finish=None):
                    c = {"id": "chatcmpl-%d" % i, "object": "chat.completion.chunk", "created": 1, "model": req.get("model"),
                         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                    self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")

                chunk({"role": "assistant"})
                for c in chunks:
                    chunk({"content": c})
                chunk({}, "stop")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self._srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/v1" % self._srv.server_address[1]
        self._thread = threading.Thread(target=self._srv.serve_forever, daemon=True)
        self._thread.start()

    def env(self):
        """The server environment that points canvasd's agent at this model."""
        return {"CANVAS_STEWARD_MODEL": "openai:gpt-test", "OPENAI_BASE_URL": self.url, "OPENAI_API_KEY": "sk-test"}

    def close(self):
        self._srv.shutdown()
        self._srv.server_close()
