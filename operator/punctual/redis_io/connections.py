"""Connecting to the operator's Redis: a client with the pool and timeouts every Redis user of
the operator shares (the slot lock, the run leases, the queue target's stream claims).

A replica makes one client per URL (``SHARED_MAX_CONNECTIONS``) and hands it to those three,
which then leave it open when they close; it closes the client once, after all three. Each of
them can still make a client of its own (``from_url``: then its ``close`` closes it).

Connections come from a ``BlockingConnectionPool`` (the pipelines need one; ``ping`` another).
Socket timeouts are short so that a dead or unreachable Redis answers "unavailable" within a
second or two rather than stalling the scheduler.
"""

import urllib.parse
from dataclasses import dataclass

import redis.asyncio
import redis.asyncio.retry
import redis.backoff

SCHEMES = frozenset({"redis", "rediss"})

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
class Connection:
    client: "redis.asyncio.Redis"
    description: str
    """The redacted URL: safe in errors and logs."""
    password: str | None
    """To scrub from error messages, as a last line of defence."""


def connect(
    url: str,
    *,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    pool_timeout: float = DEFAULT_POOL_TIMEOUT,
    socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
    connect_timeout: float = DEFAULT_SOCKET_TIMEOUT,
) -> Connection:
    """A client for ``url`` (connecting lazily) with the pool and timeouts described above.

    Raises ``ValueError`` for another scheme or a malformed URL (the message carries the
    redacted URL only).
    """
    description = redact_url(url)
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(
            f"the Redis URL must start with redis:// or rediss://, got {description!r}"
        )
    if max_connections < 1:
        raise ValueError(f"max_connections must be at least 1, got {max_connections}")
    try:
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=pool_timeout,
            socket_timeout=socket_timeout,
            socket_connect_timeout=connect_timeout,
            # Retries are the callers' (see RedisLock.claim): a blind retry of SET NX could
            # report a slot we won as lost, and then nobody would run it.
            retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 0),
        )
    except ValueError:
        raise ValueError(f"not a usable Redis URL: {description!r}") from None
    password = urllib.parse.unquote(parts.password) if parts.password else None
    return Connection(redis.asyncio.Redis.from_pool(pool), description, password)
