"""A slot lock on Redis: ``SET punctual:slot:<slot-id> <holder> NX PX <ttl>``, one key per slot.

Keyed by slot, never by job: a replica that dies holding a slot blocks only that slot, until the
key expires. Whatever goes wrong talking to Redis fails closed: the claim raises
``LockUnavailableError`` and nobody runs the slot on this replica's word.

Claims go out in pipelines, one round trip in flight at a time (``redis_io.pipelines``): a
lone claim is one SET; claims made while a round trip is on the wire ride in the next one.

Connections (their pool, their short timeouts) come from ``redis_io.connections``, the key
from ``redis_io.slot_keys``.
"""

import asyncio
import logging
from dataclasses import dataclass
from typing import Self

import redis.asyncio
import redis.asyncio.client
import redis.exceptions

from punctual.contracts import records
from punctual.redis_io import connections, pipelines, slot_keys

logger = logging.getLogger(__name__)


@dataclass(slots=True, kw_only=True)
class _Claim(pipelines.Request[bool]):
    ttl_ms: int


class RedisLock(pipelines.PipelinedClaims[_Claim]):
    """``protocols.SlotLock`` on one Redis (standalone or behind a primary endpoint)."""

    backend = "redis"

    def __init__(
        self,
        client: "redis.asyncio.Redis",
        *,
        description: str = "redis",
        password: str | None = None,
        owns_client: bool = True,
    ) -> None:
        """Use ``client`` (which this lock then owns: ``close()`` closes it; with
        ``owns_client`` false, a client the replica shares with its run leases and stream
        claims, which ``close()`` leaves open).

        ``description`` names the server in errors and logs (a redacted URL); ``password``, when
        given, is scrubbed from every error message as a last line of defence.
        """
        super().__init__(
            client,
            description=description,
            password=password,
            name="redis slot claims",
            owns_client=owns_client,
        )

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        max_connections: int = connections.DEFAULT_MAX_CONNECTIONS,
        pool_timeout: float = connections.DEFAULT_POOL_TIMEOUT,
        socket_timeout: float = connections.DEFAULT_SOCKET_TIMEOUT,
        connect_timeout: float = connections.DEFAULT_SOCKET_TIMEOUT,
    ) -> Self:
        """A lock on the Redis at ``redis://[[user]:password@]host[:port][/db]`` or ``rediss://``.

        ``max_connections`` bounds the pool; claims beyond it wait up to ``pool_timeout``
        seconds for a connection. Raises ``ValueError`` for another scheme or a malformed URL
        (the message carries the redacted URL only).
        """
        connection = connections.connect(
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
            key=slot_keys.slot_key(claim.slot_id),
            holder=claim.holder.encode(),
            slot_id=claim.slot_id,
            answer=asyncio.get_running_loop().create_future(),
            ttl_ms=pipelines.ttl_millis(claim.ttl),
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
