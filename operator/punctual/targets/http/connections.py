"""A lean HTTP/1.1 client for the HTTP target: keep-alive connections per namespace and origin,
requests sent as bytes built ahead, answers parsed by llhttp and read as far as their head.

Why not aiohttp (the operator's API client keeps it): its request path was a fifth of the
event loop at 1,000 runs per second (``make bench-scale`` with ``--profile-seconds``), and it
costs about twice the CPU per call of this client (``bench/http_client.py``). A run needs only
the status of the answer, so this client needs much less than a general one:

- Answers are parsed by llhttp (``httptools``, the parser of uvicorn and Node.js), strict: no
  leniency is switched on, so the client never accepts an answer llhttp would refuse. What
  llhttp leaves to its caller is done here: a cap on the head (``HEAD_LIMIT``, interim answers
  included), the end of a HEAD answer at its head (llhttp cannot know the request's method),
  and bytes nobody asked for (a second answer to one request, anything while idle), which end
  the connection.
- A call ends at the end of the first read that completes the head: a body that is already
  there and malformed fails the call; the rest of the body is drained in the background so that
  the connection can serve the next call, for at most ``DRAIN_LIMIT`` bytes after the head
  (framing, trailers and chunk extensions included) and ``DRAIN_TIMEOUT`` seconds (never past
  the run's own deadline); past either, or for a body whose end only the server's closing
  tells, the connection is closed instead.
- A connection carries the requests of one namespace only: pools are keyed by (namespace,
  origin), so a server (or a gateway shared by tenants) that answers out of turn can never make
  one tenant's run read another's answer, nor carry one tenant's secret headers on a connection
  another tenant's target controls the timing of.
- At most ``limit_per_origin`` connections to an origin are busy at once (calling or
  draining), whatever the number of namespaces calling it; a burst of thousands of slots at the
  top of the minute waits its turn instead of opening thousands of sockets. Idle connections
  are reused, the most recently used first, and closed from the oldest end after
  ``IDLE_TIMEOUT``; a pool with nothing left in it is dropped.
- A call on a reused connection that the server closed before answering a single byte (its
  keep-alive timeout crossed ours) is sent once more on a new connection, as browsers and
  aiohttp do; the target sees the same ``Idempotency-Key`` both times.
- Every address a host name resolves to is checked (``refuse``) before connecting: a name that
  resolves to the cloud metadata endpoint is refused like the address itself.
- Left out, on purpose: redirects (a 3xx is an answer), cookies (never kept: one run's answer
  must not change what the next run sends), proxies, compression (the body is never read),
  pipelining, HTTP/2.

Cancelling a call (the run's timeout) closes its connection: it is in an unknown state.
``close()`` closes every connection, busy, draining or idle.
"""

import asyncio
import collections
import functools
import math
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import httptools

DRAIN_LIMIT = 1 << 20
"""Bytes read after an answer's head so the connection can be reused; past this it is closed."""
DRAIN_TIMEOUT = 2.0
"""Seconds an answer's body may take to end after its head; past this the connection is closed."""
HEAD_LIMIT = 64 * 1024
"""Bytes of status lines and headers at most, interim answers included: past it, an error."""
IDLE_TIMEOUT = 15.0
"""Seconds a connection is kept idle for reuse (aiohttp's default too)."""
LIMIT_PER_ORIGIN = 100
"""Connections of one pool busy at once (aiohttp's default total)."""
INVALID = "invalid HTTP answer"
"""How every protocol error's message starts: it ends up in the run's message, in the status."""

_VERSIONS = frozenset({"1.0", "1.1"})

Refuse = Callable[[str, int], str | None]
"""Why the client must not connect to this address and port, or ``None`` when it may."""


class ProtocolError(Exception):
    """The server's answer is not HTTP/1.x this client accepts."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{INVALID}: {reason}")


class ConnectionClosedError(ConnectionError):
    """The server closed the connection before its answer was complete."""


class AddressRefusedError(OSError):
    """Every address the origin's host resolves to is one this operator does not call."""


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


class _Connection(asyncio.Protocol):
    """One socket to one origin, one call at a time, its answers parsed by llhttp.

    The parser's callbacks only record what they see; ``data_received`` decides after each read,
    so that nothing a server sends can raise out of it or keep it looping.
    """

    def __init__(
        self,
        *,
        on_idle: Callable[["_Connection"], None],
        on_closed: Callable[["_Connection"], None],
    ) -> None:
        self._on_idle = on_idle
        self._on_closed = on_closed
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._answer: asyncio.Future[Answer] | None = None
        self._busy = False
        self._head_request = False
        self._deadline = 0.0
        self._reason = b""
        self._head: Answer | None = None
        self._complete = False
        self._keep_alive = False
        self._error: ProtocolError | None = None
        self._head_bytes = 0
        self._body_bytes = 0
        self._drain_timer: asyncio.TimerHandle | None = None
        self._on_free: Callable[[], None] | None = None
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
        self._end_call()
        self._on_closed(self)

    def data_received(self, data: bytes) -> None:
        if not self._busy:
            self.close()  # bytes nobody asked for: whatever follows cannot be trusted
            return
        self.received = True
        head_done = self._head is not None
        if head_done:
            self._body_bytes += len(data)
        else:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as error:
            self._fail(self._error or ProtocolError(_llhttp_reason(error)))
            return
        if self._head is None:
            if self._head_bytes > HEAD_LIMIT:
                self._fail(ProtocolError(f"a head longer than {HEAD_LIMIT} bytes"))
            return
        if not head_done:
            self._answered()
        if self._complete:
            self._finish()
        elif self._body_bytes > DRAIN_LIMIT or not self._parser.should_keep_alive():
            self.close()  # nothing worth reading any more: the answer is in
        elif not head_done:
            loop = asyncio.get_running_loop()
            drain_until = min(loop.time() + DRAIN_TIMEOUT, self._deadline)
            self._drain_timer = loop.call_at(drain_until, self.close)

    # -- llhttp's callbacks ----------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._complete:
            self._error = ProtocolError("a second answer to one request")
            raise self._error

    def on_status(self, status: bytes) -> None:
        self._reason += status

    def on_headers_complete(self) -> None:
        version = self._parser.get_http_version()
        if version not in _VERSIONS:  # llhttp reads "HTTP/2.0 200" as a version it knows
            self._error = ProtocolError(f"HTTP/{version} is not HTTP/1.x")
            raise self._error
        status = self._parser.get_status_code()
        if status == 101:
            self._error = ProtocolError("101 Switching Protocols, yet no upgrade was asked for")
            raise self._error
        if status < 200:
            self._reason = b""  # an interim answer (100 Continue): the final one follows
            return
        self._head = Answer(status, self._reason.decode("latin-1"))
        if self._head_request:  # no body, whatever the head says: the message ends here
            self._complete, self._keep_alive = True, self._parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        if self._head_request:
            self._error = ProtocolError("a body in the answer to a HEAD request")
            raise self._error

    def on_message_complete(self) -> None:
        if self._head is not None and not self._complete:
            # Read here: llhttp resets its keep-alive flag right after this callback.
            self._complete, self._keep_alive = True, self._parser.should_keep_alive()

    # -- calls -----------------------------------------------------------------------------

    def send(
        self,
        payload: bytes,
        *,
        head_request: bool,
        deadline: float,
        on_free: Callable[[], None],
    ) -> "asyncio.Future[Answer]":
        """Send a request; its answer's head. ``on_free`` is called once, when the connection is
        done with the call: idle again, or closed."""
        assert self._transport is not None
        self._answer = asyncio.get_running_loop().create_future()
        self._busy, self._head_request, self._deadline = True, head_request, deadline
        self._on_free = on_free
        self.received = False
        self._transport.write(payload)
        return self._answer

    @property
    def draining(self) -> bool:
        """The answer's head is in, the rest still coming."""
        return self._busy and self._head is not None

    def close(self) -> None:
        """Close at once (a connection this client gives up on has nothing worth flushing)."""
        if not self.closed:
            self.closed = True
            if self._transport is not None:
                self._transport.abort()

    def _answered(self) -> None:
        assert self._head is not None
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(self._head)

    def _fail(self, error: ProtocolError) -> None:
        if self._complete:
            self._answered()  # its own answer was whole: what came after it ends the connection
        elif self._answer is not None and not self._answer.done():
            self._answer.set_exception(error)
        self.close()

    def _finish(self) -> None:
        if self._keep_alive and not self.closed:
            if self._head_request:  # llhttp is still waiting for the body the head announced
                self._parser = httptools.HttpResponseParser(self)
            self._end_call()
            self._on_idle(self)
        else:
            self.close()

    def _end_call(self) -> None:
        """Forget the call; give its place back."""
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None
        self._answer, self._busy, self._head, self._complete = None, False, None, False
        self._reason, self._error, self._head_bytes, self._body_bytes = b"", None, 0, 0
        on_free, self._on_free = self._on_free, None
        if on_free is not None:
            on_free()


def _llhttp_reason(error: Exception) -> str:
    # llhttp's messages are short and fixed ("Invalid character in chunk size"): no server bytes.
    return str(error).strip() or type(error).__name__


class _Limit:
    """At most ``limit`` holders at once, the others waiting in order.

    Not ``asyncio.Semaphore``: with many waiters (a burst of thousands of calls to one origin),
    its ``acquire`` scans them all on every call (Python 3.11's ``locked()``), a tenth of the
    event loop at 10,000 jobs. Here taking and giving back a place is O(1).
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._free = limit
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    @property
    def unused(self) -> bool:
        return self._free == self._limit and not self._waiters

    async def acquire(self) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a place just as it was cancelled: pass it on
            raise

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled waiter is done: skipped
                waiter.set_result(None)
                return
        self._free += 1


_PoolKey = tuple[str, Origin]
"""(namespace, origin): a tuple, built and hashed on every call at a fraction of a dataclass's
cost."""


@dataclass
class _Pool:
    places: _Limit
    """Connections to the origin busy at once, calling or draining (``limit_per_origin``),
    shared by the pools of every namespace: the target sees no more sockets for having more
    tenants."""
    idle: collections.deque[_Connection] = field(default_factory=collections.deque)
    """Oldest first: reused from the right, expired from the left."""
    connections: set[_Connection] = field(default_factory=set)
    """Every open connection, busy or idle."""
    requests: int = 0
    """Calls under way, from waiting for a place to their answer."""
    sweep: asyncio.TimerHandle | None = None

    @property
    def unused(self) -> bool:
        return not self.connections and not self.requests


class HttpConnections:
    """The operator's connections to HTTP targets, shared by every job (one per operator)."""

    def __init__(
        self,
        *,
        limit_per_origin: int = LIMIT_PER_ORIGIN,
        idle_timeout: float = IDLE_TIMEOUT,
        tls: ssl.SSLContext | None = None,
        refuse: Refuse | None = None,
    ) -> None:
        self._limit = limit_per_origin
        self._idle_timeout = idle_timeout
        self._tls = tls
        self._refuse = refuse or _refuse_nothing
        self._pools: dict[_PoolKey, _Pool] = {}
        self._places: dict[Origin, tuple[_Limit, int]] = {}
        """Each origin's places, and how many pools share them."""
        self._closed = False

    async def __aenter__(self) -> "HttpConnections":
        return self

    async def __aexit__(self, *_: object) -> None:
        self.close()

    @property
    def open_connections(self) -> int:
        return sum(len(pool.connections) for pool in self._pools.values())

    def close(self) -> None:
        """Close every connection: calls in flight fail with ``ConnectionClosedError``."""
        self._closed = True
        for pool in list(self._pools.values()):
            if pool.sweep is not None:
                pool.sweep.cancel()
            for connection in list(pool.connections):
                connection.close()
            pool.idle.clear()

    async def request(
        self,
        origin: Origin,
        payload: bytes,
        *,
        namespace: str,
        deadline: float = math.inf,
        head_request: bool = False,
    ) -> Answer:
        """Send ``payload`` (a whole request) to ``origin`` for a job of ``namespace``; its
        answer's status. ``deadline`` (the loop's clock) bounds the draining of the answer.

        Raises ``OSError`` (refused, reset, TLS, ``AddressRefusedError``),
        ``ConnectionClosedError`` or ``ProtocolError``.
        """
        key = (namespace, origin)
        pool = self._pools.get(key)
        if pool is None:
            places, sharing = self._places.get(origin) or (_Limit(self._limit), 0)
            self._places[origin] = (places, sharing + 1)
            pool = self._pools[key] = _Pool(places=places)
        pool.requests += 1
        try:
            await pool.places.acquire()
            # The place is this call's until a connection takes it with the request: the
            # connection gives it back when it is done with the call (after draining, or closed).
            held = True
            try:
                connection = self._reuse(pool)
                if connection is not None:
                    held = False
                    try:
                        return await self._send(pool, connection, payload, head_request, deadline)
                    except ConnectionClosedError:
                        if connection.received:
                            raise
                    # Closed by the server while idle, before a byte of the answer: again, once.
                    await pool.places.acquire()
                    held = True
                connection = await self._connect(key, pool)
                held = False
                return await self._send(pool, connection, payload, head_request, deadline)
            finally:
                if held:
                    pool.places.release()
        finally:
            pool.requests -= 1
            self._drop_if_unused(key, pool)

    @staticmethod
    async def _send(
        pool: _Pool, connection: _Connection, payload: bytes, head_request: bool, deadline: float
    ) -> Answer:
        answer = connection.send(
            payload, head_request=head_request, deadline=deadline, on_free=pool.places.release
        )
        try:
            return await answer
        except asyncio.CancelledError:
            connection.close()  # cancelled mid-call: the connection is in an unknown state
            raise

    def _reuse(self, pool: _Pool) -> _Connection | None:
        now = asyncio.get_running_loop().time()
        while pool.idle:
            connection = pool.idle.pop()  # the most recently used: the likeliest still open
            if not connection.closed and now - connection.idle_since < self._idle_timeout:
                return connection
            connection.close()
        return None

    async def _connect(self, key: _PoolKey, pool: _Pool) -> _Connection:
        origin, loop = key[1], asyncio.get_running_loop()

        def on_idle(connection: _Connection) -> None:
            if self._closed:
                connection.close()
                return
            connection.idle_since = loop.time()
            pool.idle.append(connection)
            if pool.sweep is None:
                pool.sweep = loop.call_at(connection.idle_since + self._idle_timeout, sweep)

        def sweep() -> None:
            pool.sweep = None
            now = loop.time()
            while pool.idle and (
                pool.idle[0].closed or now - pool.idle[0].idle_since >= self._idle_timeout
            ):
                pool.idle.popleft().close()
            if pool.idle:
                pool.sweep = loop.call_at(pool.idle[0].idle_since + self._idle_timeout, sweep)

        def on_closed(connection: _Connection) -> None:
            pool.connections.discard(connection)
            if connection in pool.idle:  # at most limit_per_origin long
                pool.idle.remove(connection)
            self._drop_if_unused(key, pool)

        address = await self._address(origin)
        tls = (self._tls or _default_tls()) if origin.tls else None
        _, connection = await loop.create_connection(
            lambda: _Connection(on_idle=on_idle, on_closed=on_closed),
            address,
            origin.port,
            ssl=tls,
            server_hostname=origin.host if tls is not None else None,
        )
        pool.connections.add(connection)
        return connection

    async def _address(self, origin: Origin) -> str:
        """The first address of ``origin``'s host this operator may connect to."""
        infos = await asyncio.get_running_loop().getaddrinfo(
            origin.host, origin.port, type=socket.SOCK_STREAM
        )
        refusals: list[str] = []
        for _, _, _, _, sockaddr in infos:
            address = str(sockaddr[0])
            refusal = self._refuse(address, origin.port)
            if refusal is None:
                return address
            refusals.append(f"{address} ({refusal})")
        if not refusals:
            raise OSError(f"{origin.host} resolves to no address")
        raise AddressRefusedError(
            f"{origin.host} resolves only to addresses this operator does not call: "
            + ", ".join(dict.fromkeys(refusals))
        )

    def _drop_if_unused(self, key: _PoolKey, pool: _Pool) -> None:
        if pool.unused and self._pools.get(key) is pool:
            if pool.sweep is not None:
                pool.sweep.cancel()
            del self._pools[key]
            origin = key[1]
            places, sharing = self._places[origin]
            if sharing > 1:
                self._places[origin] = (places, sharing - 1)
            else:
                del self._places[origin]


def _refuse_nothing(_address: str, _port: int) -> None:
    return None


@functools.cache
def _default_tls() -> ssl.SSLContext:
    """The system's trust store, host names verified: created once (loading it costs ms)."""
    return ssl.create_default_context()
