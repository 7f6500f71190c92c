"""A slot lock on Redis: ``SET punctual:slot:<slot-id> <holder> NX PX <ttl>``, one key per slot.

Keyed by slot, never by job: a replica that dies holding a slot blocks only that slot, until the
key expires. Whatever goes wrong talking to Redis fails closed: the claim raises
``LockUnavailableError`` and nobody runs the slot on this replica's word.

Claims go out in pipelines, one round trip in flight at a time: a claim made while the previous
round trip is on the wire rides in the next one. A lone claim costs one SET as before; at
hundreds of claims a second (or a burst on one instant) the per-command costs of the driver (a
pooled connection, a timeout, a task switch each) are paid once per round trip, and the batch
grows with the load instead of the lateness.

Connections come from a ``BlockingConnectionPool`` (the pipelines need one; ``ping`` another).
Socket timeouts are short so that a dead or unreachable Redis answers "unavailable" within a
second or two rather than stalling the scheduler.
"""

import asyncio
import collections
import contextlib
import logging
import re
import urllib.parse
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Self

import redis.asyncio
import redis.asyncio.retry
import redis.backoff
import redis.exceptions

from punctual.runtime import seams

logger = logging.getLogger(__name__)

KEY_PREFIX = "punctual:slot:"
SCHEMES = frozenset({"redis", "rediss"})

DEFAULT_MAX_CONNECTIONS = 64
DEFAULT_POOL_TIMEOUT = 10.0
"""Seconds a claim waits for a free connection: generous, a burst of claims drains quickly."""
DEFAULT_SOCKET_TIMEOUT = 1.0
"""Seconds for connecting and for each reply: a healthy Redis answers a SET in well under this."""
ATTEMPTS = 2
"""One retry, on a fresh connection, after a connection or timeout error."""
MAX_BATCH = 512
"""Claims per round trip at most: a burst of thousands goes out in a few pipelines."""

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
class _Request:
    """One claim waiting for its round trip."""

    key: str
    holder: bytes
    ttl_ms: int
    slot_id: str
    answer: "asyncio.Future[bool]"
    failure: redis.exceptions.RedisError | None = field(default=None)
    """Why the previous attempt got no answer; ``None`` on the first attempt."""


class RedisLock:
    """``seams.SlotLock`` on one Redis (standalone or behind a primary endpoint)."""

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
        self._client = client
        self._description = description
        self._password = password
        self._queue: collections.deque[_Request] = collections.deque()
        self._sender: asyncio.Task[None] | None = None

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

    async def claim(self, claim: seams.Claim) -> bool:
        # PX takes whole milliseconds and refuses 0: round up, at least 1 ms.
        ttl_ms = max(1, -(-claim.ttl // timedelta(milliseconds=1)))
        request = _Request(
            key=slot_key(claim.slot_id),
            holder=claim.holder.encode(),
            ttl_ms=ttl_ms,
            slot_id=claim.slot_id,
            answer=asyncio.get_running_loop().create_future(),
        )
        self._queue.append(request)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send(), name="redis slot claims")
        return await request.answer

    async def _send(self) -> None:
        """Round trips until no claim waits (claims made meanwhile ride in the next one)."""
        while self._queue:
            batch = [self._queue.popleft() for _ in range(min(MAX_BATCH, len(self._queue)))]
            try:
                # A claim whose caller was cancelled needs no answer.
                await self._round_trip([r for r in batch if not r.answer.done()])
            except asyncio.CancelledError:  # closing: nobody is left to answer them
                self._refuse(batch, redis.exceptions.ConnectionError("the lock is closed"))
                raise

    async def _round_trip(self, batch: list["_Request"]) -> None:
        if not batch:
            return
        pipeline = self._client.pipeline(transaction=False)
        for request in batch:
            pipeline.set(request.key, request.holder, nx=True, px=request.ttl_ms)
            if request.failure is not None:
                # The earlier attempt may have set the key and lost only the reply: then the
                # slot is ours, and answering "lost" would leave it run by nobody.
                pipeline.get(request.key)
        try:
            replies = iter(await pipeline.execute(raise_on_error=False))
        except redis.exceptions.AuthenticationError as error:
            self._refuse(batch, error)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as error:
            self._retry(batch, error)
        except redis.exceptions.RedisError as error:
            self._refuse(batch, error)
        else:
            for request in batch:
                won = next(replies)
                holder = next(replies) if request.failure is not None else None
                if isinstance(won, redis.exceptions.RedisError):
                    # Anything else (a read-only replica after a failover, OOM, ...) cannot
                    # tell who owns the slot either.
                    self._refuse([request], won)
                elif not request.answer.done():
                    request.answer.set_result(bool(won) or holder == request.holder)

    def _retry(self, batch: list["_Request"], error: redis.exceptions.RedisError) -> None:
        """Once more, first in the next round trip; a second failure fails the claim closed."""
        for request in reversed(batch):
            if request.failure is not None:
                self._refuse([request], error)
                continue
            request.failure = error
            logger.debug("claim of %s failed once: %s", request.slot_id, self._scrub(str(error)))
            self._queue.appendleft(request)

    def _refuse(self, batch: list["_Request"], error: redis.exceptions.RedisError) -> None:
        for request in batch:
            if not request.answer.done():
                request.answer.set_exception(self._unavailable(request.slot_id, error))

    async def ping(self) -> None:
        """Raise ``LockUnavailableError`` unless Redis answers (for readiness and startup)."""
        try:
            await self._client.ping()
        except redis.exceptions.RedisError as error:
            raise self._unavailable(None, error) from None

    async def close(self) -> None:
        """Close the client and every pooled connection; claims still waiting fail closed."""
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
        self._refuse(list(self._queue), redis.exceptions.ConnectionError("the lock is closed"))
        self._queue.clear()
        await self._client.aclose()

    def _unavailable(
        self, slot_id: str | None, error: redis.exceptions.RedisError
    ) -> seams.LockUnavailableError:
        # `from None` at the raise sites keeps the driver's exception (and whatever it holds)
        # out of tracebacks; the message says everything an operator needs.
        detail = self._scrub(str(error))
        what = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
        subject = f"slot {slot_id} not claimed" if slot_id else "no answer"
        return seams.LockUnavailableError(f"{self._description}: {subject}: {what}")

    def _scrub(self, text: str) -> str:
        return text.replace(self._password, "***") if self._password else text
