"""An HTTP endpoint on 127.0.0.1 for the operator to call, in a thread of the test process.

Served by a thread per connection, HTTP/1.1 keep-alive, so the operator's connection pool reuses
sockets as it would with a real target. Subclasses say what each call answers (``respond``);
the server's start, stop and address are here once.
"""

import http.server
import threading
from collections.abc import Mapping
from datetime import UTC, datetime

from localcluster import ports


class LocalHttpTarget:
    quiet_errors = False
    """True: a client that hangs up mid-call (a replica SIGKILLed) prints no traceback."""

    def __init__(self, *, host: str = ports.LOOPBACK) -> None:
        target = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_call(self) -> None:
                arrived = datetime.now(UTC)  # first thing: the arrival time is measured
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                status = target.respond(self.path, dict(self.headers.items()), arrived=arrived)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET = do_PUT = do_PATCH = do_DELETE = handle_call  # noqa: N815

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self._server.daemon_threads = True
        if self.quiet_errors:
            self._server.handle_error = lambda *_: None  # type: ignore[method-assign]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=type(self).__name__, daemon=True
        )

    def respond(self, path: str, headers: Mapping[str, str], *, arrived: datetime) -> int:
        """Record the call as the subclass needs; the HTTP status to answer."""
        raise NotImplementedError

    def __enter__(self) -> "LocalHttpTarget":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def url(self, path: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{path}"
