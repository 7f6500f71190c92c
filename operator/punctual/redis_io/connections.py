"""Connecting to the operator's Redis: a client with the pool and timeouts every Redis user of
the operator shares (the slot lock, the run leases, the queue target's stream claims).

A replica makes one client per URL (``SHARED_MAX_CONNECTIONS``) and hands it to those three,
which then leave it open when they close; it closes the client once, after all three. Each of
them can still make a client of its own (``from_url``: then its ``close`` closes it).

Connections come from a ``BlockingConnectionPool`` (the pipelines need one; ``ping`` another).
Socket timeouts are short so that a dead or unreachable Redis answers "unavailable" within a
second or two rather than stalling the scheduler.

A Redis behind Sentinel is named by ``redis+sentinel://[user:password@]host:port[,host:port...]
/service[?db=N]`` (``rediss+sentinel://`` for TLS): the Sentinels at those addresses are asked
for the service's primary each time a connection is made, so after a failover every new
connection goes to the promoted replica. A connection still open to a demoted primary fails on
its next write (``READONLY``: the driver drops it) or on its timeout (a primary that stopped), so
every user of the client follows the failover within the timeouts below. The credentials and
the TLS settings are the same for the Sentinels and the Redis servers (one secret for both, as
Sentinel deployments usually set them up); the query options are redis-py's, as in a plain URL.
For a Redis the operator does not trust (a tenant's broker: ``max_reply_bytes``,
``admit_primary``), the Sentinels' replies are bounded as the servers' are, and each primary
they name is checked before a connection is made to it.
"""

import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio
import redis.asyncio.connection
import redis.asyncio.retry
import redis.asyncio.sentinel
import redis.backoff

from punctual.redis_io import bounded_replies

SCHEMES = frozenset({"redis", "rediss"})
SENTINEL_SCHEMES = {"redis+sentinel": "redis", "rediss+sentinel": "rediss"}
"""The Sentinel schemes, and the scheme of the same Redis without Sentinel (TLS or not)."""
SENTINEL_PORT = 26379
"""A Sentinel's port when its address names none (Sentinel's own default)."""

DEFAULT_MAX_CONNECTIONS = 64
SHARED_MAX_CONNECTIONS = DEFAULT_MAX_CONNECTIONS + 5
"""The pool of the one client a replica's slot lock, run leases and stream claims share: what
each could hold at once with a pool of its own. The slot lock holds three at most (its one
round trip of claims in flight, a ``ping`` while the lock is down or a script load, and, with
sharding, the subscription its claim notices come on), the stream claims two (their round
trip, and the script load ahead of the first queue claim); the run leases held up to their own
pool's ``DEFAULT_MAX_CONNECTIONS`` (a renewal of many leases goes out in chunks, all at
once)."""
DEFAULT_POOL_TIMEOUT = 10.0
"""Seconds a claim waits for a free connection: generous, a burst of claims drains quickly."""
DEFAULT_SOCKET_TIMEOUT = 1.0
"""Seconds for connecting and for each reply: a healthy Redis answers a SET in well under this."""


def redact_url(url: str) -> str:
    """``url`` without its password (``redis://:***@host:6379/0``), safe to log."""
    parts = urllib.parse.urlsplit(url)
    # Split the authority by hand: urlsplit's .port raises on a malformed port, and a URL that
    # is about to be refused must still be shown (redacted) in the error.
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.partition(":")[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{hostport}"))


@dataclass(frozen=True, slots=True)
class SentinelAddress:
    """Where a Sentinel-managed primary is found: the Sentinels and the service they watch."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    plain_url: str
    """The same URL for one server, without Sentinel (``redis://`` or ``rediss://``, the first
    Sentinel's address): its credentials, database and query options are the connections'."""


def sentinel_address(url: str) -> SentinelAddress | None:
    """The Sentinels and service of a ``redis+sentinel://`` or ``rediss+sentinel://`` URL;
    ``None`` for another scheme. Raises ``ValueError`` (the redacted URL only) when the URL
    names no Sentinel or no service, or an address is malformed."""
    parts = urllib.parse.urlsplit(url)
    plain_scheme = SENTINEL_SCHEMES.get(parts.scheme)
    if plain_scheme is None:
        return None
    description = redact_url(url)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    sentinels = tuple(_host_port(host, description) for host in hosts.split(","))
    service = urllib.parse.unquote(parts.path.removeprefix("/"))
    if not service or "/" in service:
        raise ValueError(
            f"a Sentinel URL ends with the service's name (/mymaster), got {description!r}"
        )
    host, port = sentinels[0]
    first = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    netloc = f"{userinfo}{at}{first}"
    plain_url = urllib.parse.urlunsplit((plain_scheme, netloc, "", parts.query, ""))
    return SentinelAddress(sentinels=sentinels, service=service, plain_url=plain_url)


def _host_port(address: str, description: str) -> tuple[str, int]:
    host, colon, port = address.rpartition(":") if not address.endswith("]") else ("", "", "")
    if not colon:
        host, port = address, str(SENTINEL_PORT)
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"not a Sentinel address ({address!r}) in {description!r}")
    return host, int(port)


AdmitPrimary = Callable[[str, int], Awaitable[None]]
"""Checks the address of the primary the Sentinels name before a connection is made to it;
raises to refuse it (for Sentinels the operator does not trust: a tenant's broker)."""


class _BlockingSentinelPool(
    redis.asyncio.sentinel.SentinelConnectionPool, redis.asyncio.BlockingConnectionPool
):
    """A pool of connections to the service's current primary that waits for a free one (as
    the plain URL's ``BlockingConnectionPool`` does) rather than failing at the limit. Closing
    the client closes the Sentinels' connections too (the client is all its users hold). With
    ``admit_primary``, every address the Sentinels name is checked before it is connected to."""

    def __init__(self, *args: Any, admit_primary: AdmitPrimary | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        self._admit_primary = admit_primary

    async def get_master_address(self) -> Any:
        address = await super().get_master_address()  # type: ignore[no-untyped-call]
        if self._admit_primary is not None:
            host, port = address
            await self._admit_primary(str(host), int(port))
        return address

    async def disconnect(self, inuse_connections: bool = True) -> None:
        await super().disconnect(inuse_connections)
        if inuse_connections:  # a close, not the primary's change
            await self.sentinel_manager.aclose()


@dataclass(frozen=True, slots=True)
class Connection:
    client: "redis.asyncio.Redis"
    description: str
    """The redacted URL: safe in errors and logs."""
    password: str | None
    """To scrub from error messages, as a last line of defence."""
    fails_over: bool = False
    """Whether the server is a primary behind Sentinel, which another one replaces when it
    fails (the claims of ``redis_io.pipelines`` then wait for the new one)."""


def connect(
    url: str,
    *,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    pool_timeout: float = DEFAULT_POOL_TIMEOUT,
    socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
    connect_timeout: float = DEFAULT_SOCKET_TIMEOUT,
    max_reply_bytes: int | None = None,
    admit_primary: AdmitPrimary | None = None,
) -> Connection:
    """A client for ``url`` (connecting lazily) with the pool and timeouts described above;
    with ``max_reply_bytes``, a reply larger than that fails its command, the Sentinels' too
    (``bounded_replies``: for a Redis the operator does not trust); behind Sentinel, each
    primary they name is checked by ``admit_primary`` first.

    Raises ``ValueError`` for another scheme or a malformed URL (the message carries the
    redacted URL only).
    """
    description = redact_url(url)
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in SCHEMES and parts.scheme not in SENTINEL_SCHEMES:
        raise ValueError(
            "the Redis URL must start with redis:// or rediss:// (redis+sentinel:// or "
            f"rediss+sentinel:// for a primary behind Sentinel), got {description!r}"
        )
    if max_connections < 1:
        raise ValueError(f"max_connections must be at least 1, got {max_connections}")
    options: dict[str, Any] = {
        "max_connections": max_connections,
        "timeout": pool_timeout,
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": connect_timeout,
        # Retries are the callers' (see RedisLock.claim): a blind retry of SET NX could
        # report a slot we won as lost, and then nobody would run it.
        "retry": redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 0),
    }
    if max_reply_bytes is not None:
        options["parser_class"] = bounded_replies.bounded_parser(max_reply_bytes)
    address = sentinel_address(url)
    try:
        if address is None:
            pool = redis.asyncio.BlockingConnectionPool.from_url(url, **options)
        else:
            pool = _sentinel_pool(address, options, admit_primary=admit_primary)
    except ValueError:
        raise ValueError(f"not a usable Redis URL: {description!r}") from None
    password = urllib.parse.unquote(parts.password) if parts.password else None
    return Connection(
        redis.asyncio.Redis.from_pool(pool), description, password, fails_over=address is not None
    )


def _sentinel_pool(
    address: SentinelAddress, options: dict[str, Any], *, admit_primary: AdmitPrimary | None
) -> redis.asyncio.BlockingConnectionPool:
    """The pool of connections to ``address``'s primary: the plain URL's options for the Redis
    servers and for the Sentinels (their credentials, TLS and timeouts, and a bounded reply
    parser when the servers have one), whose own connections make no retries either."""
    kwargs = dict(options)
    kwargs.update(redis.asyncio.connection.parse_url(address.plain_url))
    kwargs.pop("host", None)
    kwargs.pop("port", None)
    if kwargs.pop("connection_class", None) is redis.asyncio.SSLConnection:
        kwargs["ssl"] = True
    sentinel_options = {
        key: value
        for key, value in kwargs.items()
        if key.startswith(("socket_", "ssl")) or key in ("username", "password", "retry")
    }
    sentinel = redis.asyncio.sentinel.Sentinel(  # type: ignore[no-untyped-call]
        list(address.sentinels), sentinel_kwargs=sentinel_options
    )
    if "parser_class" in kwargs:
        # The Sentinels' clients take no parser of their own: their pools hand it to each
        # connection they make.
        for client in sentinel.sentinels:
            client.connection_pool.connection_kwargs["parser_class"] = kwargs["parser_class"]
    return sentinel.master_for(  # type: ignore[no-any-return]
        address.service,
        connection_pool_class=_BlockingSentinelPool,
        admit_primary=admit_primary,
        **kwargs,
    ).connection_pool
