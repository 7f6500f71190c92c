"""HTTP targets that answer with bytes no well-behaved server sends, on 127.0.0.1.

Raw sockets, a thread per connection: every request read (up to its blank line, and its body by
Content-Length) gets the same exact bytes in answer, and the server never closes a connection
itself, so how many stay open says what the client does with them. Each server counts the
connections open now and the most ever open at once.
"""

import contextlib
import socket
import threading
from dataclasses import dataclass

from localcluster import ports

NEGATIVE_CHUNK = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-FFFFFFFFFFFFFFFF\r\n"
"""A chunk size below zero, then silence (this froze the event loop of an earlier client)."""
ENDLESS_BODY = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n200000\r\n" + b"x" * (1 << 20)
"""A 2 MiB chunk announced, half of it sent, then silence: the body never ends."""
LENGTH_AND_CHUNKED = (
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
)
"""Content-Length and Transfer-Encoding both: the framing of request smuggling."""
STRAY_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" * 2
"""A valid answer and a second one nobody asked for, on the same connection."""

_HEAD_END = b"\r\n\r\n"
_ACCEPT_POLL = 0.2
"""Seconds between looks at the stop flag while waiting for a connection."""


@dataclass(frozen=True, slots=True)
class Connections:
    """A server's figures at one instant."""

    requests: int
    open_now: int
    max_open: int


class HostileServer:
    """Answers ``answer`` to every request on every connection; never closes one itself."""

    def __init__(self, answer: bytes, *, name: str) -> None:
        self.answer = answer
        self.name = name
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind((ports.LOOPBACK, 0))
        self._listener.listen(128)
        self._listener.settimeout(_ACCEPT_POLL)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._max_open = 0
        self._requests = 0
        self._stopping = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, name=f"{name} accept", daemon=True)

    def __enter__(self) -> "HostileServer":
        self._acceptor.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopping.set()
        self._acceptor.join(timeout=5)
        self._listener.close()
        with self._lock:
            still_open = list(self._open)
        for connection in still_open:  # wakes its thread (recv answers b"", sendall fails)
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def url(self, path: str = "/") -> str:
        return f"http://{ports.LOOPBACK}:{self.port}{path}"

    def connections(self) -> Connections:
        with self._lock:
            return Connections(self._requests, len(self._open), self._max_open)

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.settimeout(None)  # accepted sockets inherit the listener's timeout
            with self._lock:
                self._open.add(connection)
                self._max_open = max(self._max_open, len(self._open))
            threading.Thread(
                target=self._serve, args=(connection,), name=f"{self.name} conn", daemon=True
            ).start()

    def _serve(self, connection: socket.socket) -> None:
        buffer = b""
        try:
            while True:
                while _HEAD_END not in buffer:
                    data = connection.recv(65536)
                    if not data:
                        return  # the client closed the connection
                    buffer += data
                head, _, buffer = buffer.partition(_HEAD_END)
                length = _content_length(head)
                while len(buffer) < length:
                    data = connection.recv(65536)
                    if not data:
                        return
                    buffer += data
                buffer = buffer[length:]
                with self._lock:
                    self._requests += 1
                connection.sendall(self.answer)
        except OSError:
            return  # reset by the client, or the server stopping
        finally:
            with self._lock:
                self._open.discard(connection)
            connection.close()


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return int(value.strip())
    return 0
