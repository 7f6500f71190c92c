"""A slot lock on Redis: ``SET punctual:slot:<slot-id> <holder> NX PX <ttl>``, one key per slot.

Keyed by slot, never by job: a replica that dies holding a slot blocks only that slot, until the
key expires. Whatever goes wrong talking to Redis fails closed: the claim raises
``LockUnavailableError`` and nobody runs the slot on this replica's word.

Claims go out in pipelines, one round trip in flight at a time (``locks.redis_pipelines``): a
lone claim is one SET; claims made while a round trip is on the wire ride in the next one.

Connections come from a ``BlockingConnectionPool`` (the pipelines need one; ``ping`` another).
Socket timeouts are short so that a dead or unreachable Redis answers "unavailable" within a
second or two rather than stalling the scheduler.
"""

import asyncio
import logging
import re
import urllib.parse
from dataclasses import dataclass
from typing import Self

import redis.asyncio
import redis.asyncio.client
import redis.asyncio.retry
import redis.backoff
import redis.exceptions

from punctual.contracts import records
from punctual.locks import redis_pipelines

logger = logging.getLogger(__name__)

KEY_PREFIX = "punctual:slot:"
SCHEMES = frozenset({"redis", "rediss"})

DEFAULT_MAX_CONNECTIONS = 64
DEFAULT_POOL_TIMEOUT = 10.0
"""Seconds a claim waits for a free connection: generous, a burst of claims drains quickly."""
DEFAULT_SOCKET_TIMEOUT = 1.0
"""Seconds for connecting and for each reply: a healthy Redis answers a SET in well under this."""

_UNSAFE_IN_KEY = re.compile(r"[\s\x00-\x1f\x7f]")


def slot_key(slot_id: str) -> str:
    """The Redis key of one slot; refuses ids that could not have come from ``slot_id()``."""
    if not slot_id or _UNSAFE_IN_KEY.search(slot_id):
        # Slot ids are built from validated Kubernetes names and a uid, so this is a bug
        # upstream; refusing it keeps odd bytes out of Redis keys and out of the logs.
        raise ValueError(f"refusing a slot id with whitespace or control characters: {slot_id!r}")
    return KEY_PREFIX + slot_id


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


@dataclass(slots=True, kw_only=True)
class _Claim(redis_pipelines.Request[bool]):
    ttl_ms: int


class RedisLock(redis_pipelines.PipelinedClaims[_Claim]):
    """``protocols.SlotLock`` on one Redis (standalone or behind a primary endpoint)."""

    backend = "redis"

    def __init__(
        self,
        client: "redis.asyncio.Redis",
        *,
        description: str = "redis",
        password: str | None = None,
    ) -> None:
        """Use ``client`` (which this lock then owns: ``close()`` closes it).

        ``description`` names the server in errors and logs (a redacted URL); ``password``, when
        given, is scrubbed from every error message as a last line of defence.
        """
        super().__init__(
            client, description=description, password=password, name="redis slot claims"
        )

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        pool_timeout: float = DEFAULT_POOL_TIMEOUT,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        connect_timeout: float = DEFAULT_SOCKET_TIMEOUT,
    ) -> Self:
        """A lock on the Redis at ``redis://[[user]:password@]host[:port][/db]`` or ``rediss://``.

        ``max_connections`` bounds the pool; claims beyond it wait up to ``pool_timeout``
        seconds for a connection. Raises ``ValueError`` for another scheme or a malformed URL
        (the message carries the redacted URL only).
        """
        connection = connect(
            url,
            max_connections=max_connections,
            pool_timeout=pool_timeout,
            socket_timeout=socket_timeout,
            connect_timeout=connect_timeout,
        )
        return cls(
            connection.client, description=connection.description, password=connection.password
        )

    def __repr__(self) -> str:
        return f"RedisLock({self._description})"

    async def claim(self, claim: records.Claim) -> bool:
        request = _Claim(
            key=slot_key(claim.slot_id),
            holder=claim.holder.encode(),
            slot_id=claim.slot_id,
            answer=asyncio.get_running_loop().create_future(),
            ttl_ms=redis_pipelines.ttl_millis(claim.ttl),
        )
        won: bool = await self._submit(request)
        return won

    def _add(self, pipeline: redis.asyncio.client.Pipeline, request: _Claim) -> None:
        pipeline.set(request.key, request.holder, nx=True, px=request.ttl_ms)

    def _settle(self, request: _Claim, reply: object, holder: object) -> bool:
        if isinstance(reply, redis.exceptions.RedisError):
            # Anything else (a read-only replica after a failover, OOM, ...) cannot tell who
            # owns the slot either.
            self._refuse([request], reply)
        else:
            self._answer(request, bool(reply) or holder == request.holder)
        return True
