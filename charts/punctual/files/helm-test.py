"""`helm test` for Punctual: one ScheduledJob, run by the installed operator, end to end.

It runs in the operator's own image with nothing but Python's standard library (no kubectl):
1. listens on TEST_PORT for HTTP calls;
2. creates a ScheduledJob `every: 2s` in TEST_NAMESPACE whose HTTP target is this pod
   (POD_IP:TEST_PORT), with the API server's address and the pod's ServiceAccount token;
3. waits, up to TEST_TIMEOUT_SECONDS, for the operator's call (carrying an Idempotency-Key) and
   for status.lastRun.result Succeeded, failing at once when the job turns Ready=False (an
   invalid spec, a host --http-allowed-hosts refuses, the lock backend unavailable);
4. deletes the ScheduledJob, whatever happened, and exits 0 or 1 with one line saying why.

SERVICE_ACCOUNT_DIR (default: where Kubernetes mounts the token) and KUBERNETES_SERVICE_HOST /
KUBERNETES_SERVICE_PORT say how to reach the API server.
"""

import http.server
import json
import os
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

API_PATH = "/apis/punctual.dev/v1alpha1/namespaces/{namespace}/scheduledjobs"
REQUEST_TIMEOUT = 10.0
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class Calls:
    """The calls the ScheduledJob's target received: their Idempotency-Key headers."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.lock = threading.Lock()

    def add(self, key: str) -> None:
        with self.lock:
            self.keys.append(key)

    def first(self) -> str | None:
        with self.lock:
            return self.keys[0] if self.keys else None


def serve(port: int, calls: Calls) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), 65536)
            self.rfile.read(length)
            calls.add(self.headers.get("Idempotency-Key", ""))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            print(f"punctual-test: target called: {format % args}", flush=True)

    server = http.server.ThreadingHTTPServer(("", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Api:
    """Just enough of the Kubernetes API: JSON requests with the ServiceAccount's token."""

    def __init__(self, account_dir: str) -> None:
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        self.base = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
        with open(os.path.join(account_dir, "token")) as token:
            self.token = token.read().strip()
        self.context = ssl.create_default_context(cafile=os.path.join(account_dir, "ca.crt"))

    def request(self, method: str, path: str, body: object | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json")
        with urllib.request.urlopen(
            request, context=self.context, timeout=REQUEST_TIMEOUT
        ) as reply:
            return json.loads(reply.read() or b"{}")


def condition(status: Any, kind: str) -> Any:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), {})


def outcome(body: Any, calls: Calls) -> tuple[bool, str] | None:
    """(passed, why) once the test is decided, else None."""
    status = body.get("status") or {}
    ready = condition(status, "Ready")
    if ready.get("status") == "False":
        return False, f"Ready=False {ready.get('reason')}: {ready.get('message')}"
    last_run = status.get("lastRun") or {}
    result = last_run.get("result")
    if result == "Succeeded" and calls.first() is not None:
        return True, (
            f"slot {last_run.get('slot')} ran on replica {last_run.get('replica')}, "
            f"{last_run.get('latenessMillis')} ms late; Idempotency-Key {calls.first()}"
        )
    if result in ("Failed", "TimedOut", "Lost"):
        return False, f"the run ended {result}: {last_run.get('message')}"
    return None


def main() -> int:
    namespace = os.environ["TEST_NAMESPACE"]
    port = int(os.environ.get("TEST_PORT", "8080"))
    timeout = float(os.environ.get("TEST_TIMEOUT_SECONDS", "120"))
    pod_ip = os.environ["POD_IP"]
    host = f"[{pod_ip}]" if ":" in pod_ip else pod_ip
    api = Api(os.environ.get("SERVICE_ACCOUNT_DIR", SERVICE_ACCOUNT_DIR))
    calls = Calls()
    server = serve(port, calls)
    name = f"{os.environ.get('TEST_NAME_PREFIX', 'punctual-test')}-{uuid.uuid4().hex[:6]}"
    path = API_PATH.format(namespace=namespace)
    body = {
        "apiVersion": "punctual.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/component": "helm-test"}},
        "spec": {
            "every": "2s",
            "timeout": "5s",
            "target": {"http": {"url": f"http://{host}:{port}/punctual-test", "method": "POST"}},
        },
    }
    print(f"punctual-test: creating ScheduledJob {namespace}/{name}", flush=True)
    api.request("POST", path, body)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            decided = outcome(api.request("GET", f"{path}/{name}"), calls)
            if decided is not None:
                passed, why = decided
                print(f"punctual-test: {'PASS' if passed else 'FAIL'}: {why}", flush=True)
                return 0 if passed else 1
            time.sleep(1)
        print(
            f"punctual-test: FAIL: no Succeeded run within {timeout:.0f}s "
            f"(calls received: {len(calls.keys)}); is the operator running and watching "
            f"{namespace}? `kubectl describe sj -n {namespace} {name}` while it runs",
            flush=True,
        )
        return 1
    finally:
        try:
            api.request("DELETE", f"{path}/{name}")
        except urllib.error.URLError as error:
            print(f"punctual-test: could not delete {namespace}/{name}: {error}", flush=True)
        server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
