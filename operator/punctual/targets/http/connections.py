"""A lean HTTP/1.1 client for the HTTP target: keep-alive connections per namespace and origin,
requests sent as bytes built ahead, answers read as far as their head.

Why not aiohttp (the operator's API client keeps it): its request path was a large share of the
event loop at a thousand runs per second (``make bench-scale`` with ``--profile-seconds``), and
it costs more CPU per call than this client (``bench/http_client.py``; the figures are in
docs/benchmarks.md). A run needs only
the status of the answer, so this client needs much less than a general one. One connection
(``punctual.targets.http.connection``) parses its answers with llhttp, strictly, and drains
their bodies within bounds; this module keeps the connections:

- A connection carries the requests of one namespace only: pools are keyed by (namespace,
  origin), so a server (or a gateway shared by tenants) that answers out of turn can never make
  one tenant's run read another's answer, nor carry one tenant's secret headers on a connection
  another tenant's target controls the timing of.
- At most ``limit_per_origin`` connections to an origin are busy at once (calling or
  draining), whatever the number of namespaces calling it; a burst of thousands of slots at the
  top of the minute waits its turn instead of opening thousands of sockets. These places are
  shared fairly by namespace (``punctual.aio.places``): one namespace holds at most
  ``limit_per_namespace`` of them, and a place given back goes to the waiting namespace holding
  the fewest, so a tenant's burst or hung target never makes another tenant wait. Idle connections
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

Cancelling a call (the run's timeout) closes its connection if the connection is still on that
call: it is in an unknown state. One whose answer came in before the cancel is left to the next
call it may already carry.
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

from punctual.aio import places as fair_places
from punctual.targets.http import connection as http_connection

IDLE_TIMEOUT = 15.0
"""Seconds a connection is kept idle for reuse (aiohttp's default too)."""
LIMIT_PER_ORIGIN = 100
"""Connections to one origin busy at once, all namespaces together (aiohttp's default total)."""
LIMIT_PER_NAMESPACE = 50
"""Connections to one origin busy at once for one namespace (``--http-connections-per-namespace``):
half the origin's, so a namespace that holds all it may still leaves another its places at
once."""

Refuse = Callable[[str, int], str | None]
"""Why the client must not connect to this address and port, or ``None`` when it may."""


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


_PoolKey = tuple[str, Origin]
"""(namespace, origin): a tuple, built and hashed on every call at a fraction of a dataclass's
cost."""


@dataclass
class _Pool:
    namespace: str
    places: fair_places.FairPlaces
    """Connections to the origin busy at once, calling or draining (``limit_per_origin``),
    shared fairly by the pools of every namespace (``limit_per_namespace`` each at most): the
    target sees no more sockets for having more tenants, and no tenant waits behind another."""
    idle: collections.deque[http_connection.Connection] = field(default_factory=collections.deque)
    """Oldest first: reused from the right, expired from the left."""
    connections: set[http_connection.Connection] = field(default_factory=set)
    """Every open connection, busy or idle."""
    requests: int = 0
    """Calls under way, from waiting for a place to their answer."""
    sweep: asyncio.TimerHandle | None = None

    @property
    def unused(self) -> bool:
        return not self.connections and not self.requests

    async def take_place(self) -> None:
        await self.places.acquire(self.namespace)

    def free_place(self) -> None:
        self.places.release(self.namespace)


class HttpConnections:
    """The operator's connections to HTTP targets, shared by every job (one per operator)."""

    def __init__(
        self,
        *,
        limit_per_origin: int = LIMIT_PER_ORIGIN,
        limit_per_namespace: int = LIMIT_PER_NAMESPACE,
        idle_timeout: float = IDLE_TIMEOUT,
        tls: ssl.SSLContext | None = None,
        refuse: Refuse | None = None,
    ) -> None:
        self._limit = limit_per_origin
        self._limit_per_namespace = limit_per_namespace
        self._idle_timeout = idle_timeout
        self._tls = tls
        self._refuse = refuse or _refuse_nothing
        self._pools: dict[_PoolKey, _Pool] = {}
        self._places: dict[Origin, tuple[fair_places.FairPlaces, int]] = {}
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
    ) -> http_connection.Answer:
        """Send ``payload`` (a whole request) to ``origin`` for a job of ``namespace``; its
        answer's status. ``deadline`` (the loop's clock) bounds the draining of the answer.

        Raises ``OSError`` (refused, reset, TLS, ``AddressRefusedError``), or the connection's
        ``ConnectionClosedError`` or ``ProtocolError`` (``punctual.targets.http.connection``).
        """
        key = (namespace, origin)
        pool = self._pools.get(key)
        if pool is None:
            places, sharing = self._places.get(origin) or (
                fair_places.FairPlaces(limit=self._limit, per_group=self._limit_per_namespace),
                0,
            )
            self._places[origin] = (places, sharing + 1)
            pool = self._pools[key] = _Pool(namespace=namespace, places=places)
        pool.requests += 1
        try:
            await pool.take_place()
            # The place is this call's until a connection takes it with the request: the
            # connection gives it back when it is done with the call (after draining, or closed).
            held = True
            try:
                connection = self._reuse(pool)
                if connection is not None:
                    held = False
                    try:
                        return await self._send(pool, connection, payload, head_request, deadline)
                    except http_connection.ConnectionClosedError:
                        if connection.received:
                            raise
                    # Closed by the server while idle, before a byte of the answer: again, once.
                    await pool.take_place()
                    held = True
                connection = await self._connect(key, pool)
                held = False
                return await self._send(pool, connection, payload, head_request, deadline)
            finally:
                if held:
                    pool.free_place()
        finally:
            pool.requests -= 1
            self._drop_if_unused(key, pool)

    @staticmethod
    async def _send(
        pool: _Pool,
        connection: http_connection.Connection,
        payload: bytes,
        head_request: bool,
        deadline: float,
    ) -> http_connection.Answer:
        answer = connection.send(
            payload, head_request=head_request, deadline=deadline, on_free=pool.free_place
        )
        try:
            return await answer
        except asyncio.CancelledError:
            connection.abandon(answer)
            raise

    def _reuse(self, pool: _Pool) -> http_connection.Connection | None:
        now = asyncio.get_running_loop().time()
        while pool.idle:
            connection = pool.idle.pop()  # the most recently used: the likeliest still open
            if not connection.closed and now - connection.idle_since < self._idle_timeout:
                return connection
            connection.close()
        return None

    async def _connect(self, key: _PoolKey, pool: _Pool) -> http_connection.Connection:
        origin, loop = key[1], asyncio.get_running_loop()

        def on_idle(connection: http_connection.Connection) -> None:
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

        def on_closed(connection: http_connection.Connection) -> None:
            pool.connections.discard(connection)
            if connection in pool.idle:  # at most limit_per_origin long
                pool.idle.remove(connection)
            self._drop_if_unused(key, pool)

        address = await self._address(origin)
        tls = (self._tls or _default_tls()) if origin.tls else None
        _, connection = await loop.create_connection(
            lambda: http_connection.Connection(on_idle=on_idle, on_closed=on_closed),
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
