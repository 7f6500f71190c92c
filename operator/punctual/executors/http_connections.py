"""A lean HTTP/1.1 client for the HTTP target: keep-alive connections per origin, requests sent
as bytes built ahead, answers read as far as their status line.

Why not aiohttp (the operator's API client keeps it): its request path was a fifth of the
event loop at 1,000 runs per second (``make bench-scale`` with ``--profile-seconds``), and it
costs about twice the CPU per call of this executor on this client (``bench/http_client.py``:
147 µs against 70 µs). A run needs only the status of the answer, so this client needs much
less than a general one:

- A call ends as soon as the status line and headers are in. The body, which nobody reads, is
  drained in the background so that the connection can serve the next call; a body larger than
  ``DRAIN_LIMIT``, or one whose end only the server's closing tells, closes the connection instead.
- Connections are kept per origin (scheme, host, port) and reused, the most recently used first,
  for at most ``IDLE_TIMEOUT``; at most ``limit_per_origin`` calls to one origin are in flight at
  once (a burst of thousands of slots at the top of the minute waits its turn instead of
  opening thousands of sockets).
- A call on a reused connection that the server closed before answering a single byte (its
  keep-alive timeout crossed ours) is sent once more on a new connection, as browsers and
  aiohttp do; the target sees the same ``Idempotency-Key`` both times.
- Left out, on purpose: redirects (a 3xx is an answer), cookies (never kept: one run's answer
  must not change what the next run sends), proxies, compression (the body is never read),
  pipelining, HTTP/2.

Cancelling a call (the run's timeout) closes its connection: it is in an unknown state.
"""

import asyncio
import collections
import functools
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import cast

DRAIN_LIMIT = 1 << 20
"""Bytes of a body drained so the connection can be reused; past this it is closed instead."""
HEAD_LIMIT = 64 * 1024
"""Bytes of status line and headers at most: a longer head is a protocol error."""
IDLE_TIMEOUT = 15.0
"""Seconds a connection is kept idle for reuse (aiohttp's default too)."""
LIMIT_PER_ORIGIN = 100
"""Calls in flight to one origin at once (aiohttp's default total)."""


class ProtocolError(Exception):
    """The server's answer is not HTTP/1.x this client can read."""


class ConnectionClosedError(ConnectionError):
    """The server closed the connection before its answer was complete."""


@dataclass(frozen=True, slots=True)
class Origin:
    scheme: str
    host: str
    port: int

    @property
    def tls(self) -> bool:
        return self.scheme == "https"


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    reason: str


class _Body(Enum):
    NONE = auto()
    LENGTH = auto()
    CHUNKED = auto()
    UNTIL_CLOSE = auto()


class _Connection(asyncio.Protocol):
    """One socket to one origin, one call at a time."""

    def __init__(self, on_idle: Callable[["_Connection"], None]) -> None:
        self._on_idle = on_idle
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._answer: asyncio.Future[Answer] | None = None
        self._reading_head = False
        self._head_request = False
        self._body = _Body.NONE
        self._remaining = 0
        self._drained = 0
        self._chunk_trailer = False
        self._keep_alive = False
        self.received = False
        """Whether any byte of the current call's answer came in."""
        self.closed = False
        self.idle_since = 0.0

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not an asyncio.Transport subclass: no isinstance).
        self._transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._answer is not None and not self._answer.done():
            error = ConnectionClosedError("the server closed the connection without an answer")
            if exc is not None:
                error = ConnectionClosedError(f"connection lost: {exc}")
            self._answer.set_exception(error)

    def data_received(self, data: bytes) -> None:
        self.received = True
        self._buffer += data
        try:
            self._consume()
        except ProtocolError as error:
            if self._answer is not None and not self._answer.done():
                self._answer.set_exception(error)
            self.close()

    # -- calls -----------------------------------------------------------------------------

    def send(self, payload: bytes, *, head_request: bool) -> "asyncio.Future[Answer]":
        assert self._transport is not None
        self._answer = asyncio.get_running_loop().create_future()
        self._reading_head = True
        self._head_request = head_request
        self.received = False
        self._transport.write(payload)
        return self._answer

    def close(self) -> None:
        self.closed = True
        if self._transport is not None:
            self._transport.close()

    def _consume(self) -> None:
        while True:
            if self._reading_head:
                if not self._read_head():
                    return
                continue  # to the body, or to the final head after an interim one
            if self._body is _Body.LENGTH:
                taken = min(self._remaining, len(self._buffer))
                del self._buffer[:taken]
                self._remaining -= taken
                if self._remaining:
                    return
                self._body = _Body.NONE
            elif self._body is _Body.CHUNKED:
                if not self._read_chunks():
                    return
            elif self._body is _Body.UNTIL_CLOSE:
                self._buffer.clear()  # closed already: the answer is all that was wanted
                return
            self._done()
            return

    def _read_head(self) -> bool:
        """Parse a status line and headers, if all in; False while more is needed."""
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > HEAD_LIMIT:
                raise ProtocolError(f"the answer's head is longer than {HEAD_LIMIT} bytes")
            return False
        head = _parse_head(bytes(self._buffer[:end]))
        del self._buffer[: end + 4]
        if 100 <= head.status < 200 and head.status != 101:
            return True  # an interim answer (100 Continue): the final one follows
        self._reading_head = False
        keep_alive = head.keep_alive
        if self._head_request or head.status in (101, 204, 304):
            self._body = _Body.NONE
            keep_alive = keep_alive and head.status != 101
        elif head.chunked:
            self._body, self._drained, self._chunk_trailer = _Body.CHUNKED, 0, False
        elif head.length is not None:
            self._body, self._remaining = _Body.LENGTH, head.length
            keep_alive = keep_alive and head.length <= DRAIN_LIMIT
        else:
            self._body, keep_alive = _Body.UNTIL_CLOSE, False
        self._keep_alive = keep_alive
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(Answer(head.status, head.reason))
        if not keep_alive and self._body is not _Body.NONE:
            self.close()  # nothing worth reading on it: the answer is in
        return True

    def _read_chunks(self) -> bool:
        """Drain chunks up to the last one and its trailers; False while more is needed."""
        while True:
            end = self._buffer.find(b"\r\n")
            if end < 0:
                if len(self._buffer) > HEAD_LIMIT:
                    raise ProtocolError("a chunk size line is too long")
                return False
            if self._chunk_trailer:  # after the last chunk: trailer lines up to an empty one
                del self._buffer[: end + 2]
                if end == 0:
                    return True
                continue
            size_text = bytes(self._buffer[:end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ProtocolError(f"an invalid chunk size: {size_text[:20]!r}") from None
            if size == 0:
                del self._buffer[: end + 2]
                self._chunk_trailer = True
                continue
            if len(self._buffer) < end + 2 + size + 2:
                if self._drained + len(self._buffer) > DRAIN_LIMIT:
                    self._keep_alive = False
                    self.close()
                return False
            del self._buffer[: end + 2 + size + 2]
            self._drained += size
            if self._drained > DRAIN_LIMIT:
                self._keep_alive = False
                self.close()
                return False

    def _done(self) -> None:
        if self._answer is not None and not self._answer.done():  # never, but never hang
            self._answer.set_exception(ProtocolError("the answer ended before its status line"))
        self._answer = None
        if self._keep_alive and not self._buffer and not self.closed:
            self.idle_since = time.monotonic()
            self._on_idle(self)
        else:
            self.close()


@dataclass(frozen=True, slots=True)
class _Head:
    status: int
    reason: str
    keep_alive: bool
    length: int | None
    """Content-Length, if given."""
    chunked: bool


def _parse_head(head: bytes) -> _Head:
    """A status line and its header lines (without the blank line that ends them)."""
    lines = head.split(b"\r\n")
    version, _, rest = lines[0].partition(b" ")
    code, _, reason = rest.partition(b" ")
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    keep_alive = version == b"HTTP/1.1"
    length: int | None = None
    chunked = False
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            raise ProtocolError("a header line without a colon")
        name, value = name.strip().lower(), value.strip()
        if name == b"content-length":
            if not value.isdigit() or (length is not None and int(value) != length):
                raise ProtocolError("an invalid or conflicting Content-Length")
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = value.lower().rsplit(b",", 1)[-1].strip() == b"chunked"
        elif name == b"connection":
            tokens = {token.strip() for token in value.lower().split(b",")}
            keep_alive = (keep_alive or b"keep-alive" in tokens) and b"close" not in tokens
    return _Head(int(code), reason.decode("latin-1"), keep_alive, length, chunked)


class _Limit:
    """At most ``limit`` holders at once, the others waiting in order.

    Not ``asyncio.Semaphore``: with many waiters (a burst of thousands of calls to one origin),
    its ``acquire`` scans them all on every call (Python 3.11's ``locked()``), a tenth of the
    event loop at 10,000 jobs. Here taking and giving back a place is O(1).
    """

    def __init__(self, limit: int) -> None:
        self._free = limit
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def __aenter__(self) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed a place just as it was cancelled: pass it on
            raise

    async def __aexit__(self, *_: object) -> None:
        self._release()

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled waiter is done: skipped
                waiter.set_result(None)
                return
        self._free += 1


@dataclass
class _Pool:
    calls: _Limit
    """Calls in flight to the origin (``limit_per_origin``)."""
    idle: list[_Connection] = field(default_factory=list)


class HttpConnections:
    """The operator's connections to HTTP targets, shared by every job (one per operator)."""

    def __init__(
        self,
        *,
        limit_per_origin: int = LIMIT_PER_ORIGIN,
        idle_timeout: float = IDLE_TIMEOUT,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._limit = limit_per_origin
        self._idle_timeout = idle_timeout
        self._tls = tls
        self._pools: dict[Origin, _Pool] = {}
        self._closed = False

    async def __aenter__(self) -> "HttpConnections":
        return self

    async def __aexit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every idle connection; calls in flight go on, their connections then close."""
        self._closed = True
        for pool in self._pools.values():
            for connection in pool.idle:
                connection.close()
            pool.idle.clear()

    async def request(
        self, origin: Origin, payload: bytes, *, head_request: bool = False
    ) -> Answer:
        """Send ``payload`` (a whole request) to ``origin``; its answer's status.

        Raises ``OSError`` (refused, reset, TLS), ``ConnectionClosedError`` or ``ProtocolError``.
        """
        pool = self._pools.get(origin)
        if pool is None:
            pool = self._pools[origin] = _Pool(calls=_Limit(self._limit))
        async with pool.calls:
            connection = self._reuse(pool)
            if connection is not None:
                try:
                    return await self._call(connection, payload, head_request=head_request)
                except ConnectionClosedError:
                    if connection.received:
                        raise
                    # Closed by the server while idle, before a byte of the answer: again, once.
            connection = await self._connect(origin, pool)
            return await self._call(connection, payload, head_request=head_request)

    def _reuse(self, pool: _Pool) -> _Connection | None:
        now = time.monotonic()
        while pool.idle:
            connection = pool.idle.pop()  # the most recently used: the likeliest still open
            if not connection.closed and now - connection.idle_since < self._idle_timeout:
                return connection
            connection.close()
        return None

    async def _connect(self, origin: Origin, pool: _Pool) -> _Connection:
        def on_idle(connection: _Connection) -> None:
            if self._closed:
                connection.close()
            else:
                pool.idle.append(connection)

        loop = asyncio.get_running_loop()
        tls = (self._tls or _default_tls()) if origin.tls else None
        _, connection = await loop.create_connection(
            lambda: _Connection(on_idle),
            origin.host,
            origin.port,
            ssl=tls,
            server_hostname=origin.host if tls is not None else None,
        )
        return connection

    @staticmethod
    async def _call(connection: _Connection, payload: bytes, *, head_request: bool) -> Answer:
        try:
            return await connection.send(payload, head_request=head_request)
        except asyncio.CancelledError:
            connection.close()  # cancelled mid-call: the connection is in an unknown state
            raise


@functools.cache
def _default_tls() -> ssl.SSLContext:
    """The system's trust store, host names verified: created once (loading it costs ms)."""
    return ssl.create_default_context()
