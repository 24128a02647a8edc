"""Shared helpers of the end-to-end tests: the command line every test script takes,
a running `pagoda serve` on a free loopback port, and small HTTP helpers.

    args = parse_args()                      # --pagoda BIN --shared DIR --model GGUF
    with PagodaServer(args, "--max-model-len", "512") as server:
        client = server.client()             # openai.OpenAI against it, no retries
        ...
    # leaving the block sends SIGTERM and checks that the server exits with status 0

A test script exits 0 on success, 1 on failure, 77 when it cannot run here (skipped,
with the reason on stderr).
"""

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

SKIP = 77

LISTENING = re.compile(r"listening on http://([0-9.]+):(\d+)")


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pagoda", required=True, help="the pagoda binary")
    parser.add_argument("--shared", required=True, help="the shared data folder")
    parser.add_argument("--model", required=True, help="the GGUF model to serve")
    args = parser.parse_args()
    if not os.path.isfile(args.model):
        skip(f"model {args.model} not found")
    if not os.access(args.pagoda, os.X_OK):
        skip(f"{args.pagoda} is not an executable")
    return args


def skip(reason):
    print(f"SKIPPED: {reason}", file=sys.stderr)
    sys.exit(SKIP)


def run_tests(tests):
    """Runs each test function in order, printing one line per test; returns the names
    of those that failed."""
    failed = []
    for test in tests:
        start = time.monotonic()
        try:
            test()
            print(f"ok   {test.__name__} ({time.monotonic() - start:.2f} s)", flush=True)
        except Exception:  # noqa: BLE001 - report every failure, run the rest
            failed.append(test.__name__)
            print(f"FAIL {test.__name__}", flush=True)
            traceback.print_exc()
    return failed


def run_and_exit(tests):
    """Runs `tests` (each starting the servers it needs) and exits: 0 when everything
    passed, 1 otherwise."""
    exit_with(run_tests(tests), tests)


def serve_and_run(server, tests):
    """Starts `server`, runs `tests` against it, stops it (checking exit status 0) and
    exits: 0 when everything passed, 1 otherwise (with the server's log)."""
    with server:
        failed = run_tests(tests)
        if failed:
            print("--- server log ---\n" + server.log() + "\n--- end of server log ---",
                  file=sys.stderr)
    exit_with(failed, tests)


def exit_with(failed, tests):
    if failed:
        print(f"{len(failed)} of {len(tests)} failed: {', '.join(failed)}", flush=True)
        sys.exit(1)
    print(f"all {len(tests)} passed", flush=True)
    sys.exit(0)


class PagodaServer:
    """`pagoda serve` on 127.0.0.1, a port the system picks (--port 0), its log kept in
    memory (and echoed to our stderr when a test fails)."""

    def __init__(self, args, *flags, env=None, wait_ready=True, api_key=None):
        self.args = args
        self.flags = [str(f) for f in flags]
        self.env = env
        self.api_key = api_key
        self.wait = wait_ready
        self.process = None
        self.port = None
        self.lines = []  # the server's stderr and stdout, line by line
        self.health_while_loading = []  # (status, body) of /health answers before ready
        self._lines_lock = threading.Lock()
        self._model_name = None
        self._client = None
        self._readers = []

    # --- lifetime -----------------------------------------------------------------

    def start(self):
        command = [self.args.pagoda, "serve", "-m", self.args.model, "--host", "127.0.0.1",
                   "--port", "0"] + self.flags
        env = dict(os.environ)
        env.update(self.env or {})
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=env)
        for stream in (self.process.stdout, self.process.stderr):
            reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
            reader.start()
            self._readers.append(reader)
        self._wait_listening(timeout=30)
        if self.wait:
            self.wait_ready(timeout=60)
        return self

    def _read(self, stream):
        for raw in iter(stream.readline, b""):
            with self._lines_lock:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def log(self):
        with self._lines_lock:
            return "\n".join(self.lines)

    def _wait_listening(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = LISTENING.search(self.log())
            if match:
                self.port = int(match.group(2))
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"pagoda serve exited with {self.process.returncode}:\n"
                                   + self.log())
            time.sleep(0.01)
        raise RuntimeError("pagoda serve did not log its address:\n" + self.log())

    def wait_ready(self, timeout=60):
        """Polls /health until 200; remembers what it answered before."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                status, _, body = self.request("GET", "/health")
                if status == 200:
                    return
                self.health_while_loading.append((status, body))
            except OSError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError(f"pagoda serve exited with {self.process.returncode}:\n"
                                   + self.log())
            time.sleep(0.02)
        raise RuntimeError("pagoda serve did not become ready:\n" + self.log())

    def terminate(self, sig=signal.SIGTERM):
        self.process.send_signal(sig)

    def wait_exit(self, timeout=30):
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("pagoda serve did not exit in time:\n" + self.log())
        for reader in self._readers:
            reader.join(timeout=5)
        return code

    def stop(self):
        """SIGTERM, and checks the exit status is 0."""
        if self.process is None or self.process.poll() is not None:
            return
        self.terminate()
        code = self.wait_exit()
        if code != 0:
            raise AssertionError(f"pagoda serve exited with {code}:\n" + self.log())

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            print("--- server log ---\n" + self.log() + "\n--- end of server log ---",
                  file=sys.stderr)
            if self.process and self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            return False
        self.stop()
        return False

    # --- clients ------------------------------------------------------------------

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def client(self, api_key=None, timeout=60):
        """An openai.OpenAI for this server, without retries (a test sees every error)."""
        import openai

        return openai.OpenAI(base_url=self.base_url, api_key=api_key or self.api_key or "none",
                             max_retries=0, timeout=timeout)

    def shared_client(self):
        """One client kept for the server's lifetime (its connections are reused)."""
        if self._client is None:
            self._client = self.client()
        return self._client

    def model_name(self):
        """The served model's id, as GET /v1/models lists it (asked once)."""
        if self._model_name is None:
            self._model_name = self.shared_client().models.list().data[0].id
        return self._model_name

    def request(self, method, path, body=None, headers=None, timeout=30):
        """One raw HTTP request on a fresh connection: (status, headers dict with lowercase
        names, body bytes). `body` may be bytes, str, or a JSON-serialisable object."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            all_headers = dict(headers or {})
            if body is not None and not isinstance(body, (bytes, str)):
                body = json.dumps(body)
                all_headers.setdefault("Content-Type", "application/json")
            connection.request(method, path, body=body, headers=all_headers)
            response = connection.getresponse()
            data = response.read()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, data
        finally:
            connection.close()

    def json(self, method, path, body=None, headers=None):
        status, response_headers, data = self.request(method, path, body, headers)
        return status, response_headers, json.loads(data) if data else None

    def metrics(self):
        """GET /metrics as {series: value}, series written as in the exposition
        ('pagoda_requests_total{endpoint="/health",status="200"}')."""
        status, _, data = self.request("GET", "/metrics")
        assert status == 200, status
        values = {}
        for line in data.decode().splitlines():
            if not line or line.startswith("#"):
                continue
            series, _, value = line.rpartition(" ")
            values[series] = float(value)
        return values


def check(condition, message="check failed"):
    if not condition:
        raise AssertionError(message)


def check_equal(actual, expected, what="value"):
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")
