"""A tiny HTTP endpoint for the examples: answers 204 and prints each call with its lateness.

The every-5s example targets it (``http://echo.default.svc:18080/hello``: ``make run`` binds it on
the machine's side of the real node's link and makes the Service ``echo`` point there), so
``make run`` shows slots arriving, each with the lateness Punctual achieved (arrival minus
X-Punctual-Scheduled-Time).
"""

import http.server
import threading
from datetime import UTC, datetime
from typing import Self

ECHO_PORT = 18080


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        arrived = datetime.now(UTC)
        scheduled = self.headers.get("X-Punctual-Scheduled-Time")
        lateness = ""
        if scheduled:
            late = arrived - datetime.fromisoformat(scheduled)
            lateness = f", {late.total_seconds() * 1000:.1f} ms after its scheduled time"
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        print(
            f"[echo] {self.command} {self.path}: slot {self.headers.get('Idempotency-Key')}"
            f"{lateness}",
            flush=True,
        )
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per call is printed above


class EchoServer:
    """Serves on ``host``:``port`` in a daemon thread while the context is open."""

    def __init__(self, port: int = ECHO_PORT, *, host: str = "127.0.0.1") -> None:
        self._server = http.server.ThreadingHTTPServer((host, port), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
