"""A slot lock on Redis: ``SET punctual:slot:<slot-id> <holder> NX PX <ttl>``, one key per slot.

Keyed by slot, never by job: a replica that dies holding a slot blocks only that slot, until the
key expires. Whatever goes wrong talking to Redis fails closed: the claim raises
``LockUnavailableError`` and nobody runs the slot on this replica's word.

Claims go out in pipelines, one round trip in flight at a time (``redis_io.pipelines``): a
lone claim is one SET; claims made while a round trip is on the wire ride in the next one.

Each claim is one script (``CLAIM_AND_TELL``): the SET; a slot due before the Redis server
started is won only to be counted missed (``LockForgotError``: the server may have lost its
claim, ``redis_io.lock_memory``); with sharding, an owner's claim that names the job's backup
(``Claim.backup``) and won a slot to run also PUBLISHes the notice to the backup's channel
(``redis_io.claim_notices``), in the same round trip. Each replica ``hear``s its own channel on
one connection of the pool. The script goes by ``EVALSHA``, loaded when the replica starts to
listen and again on ``NOSCRIPT``.

Connections (their pool, their short timeouts) come from ``redis_io.connections``, the key
from ``redis_io.slot_keys``.
"""

import asyncio
import contextlib
import itertools
import logging
from dataclasses import dataclass
from typing import Self

import redis.asyncio
import redis.asyncio.client
import redis.exceptions

from punctual.contracts import protocols, records
from punctual.redis_io import (
    claim_notices,
    connections,
    lock_memory,
    pipelines,
    replication,
    slot_keys,
)

logger = logging.getLogger(__name__)

CLAIM_AND_TELL = (
    lock_memory.PROVABLE
    + """
local claimed = claim_slot(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
if claimed == 1 and ARGV[4] ~= '' then
  redis.call('PUBLISH', ARGV[4], ARGV[5])
end
return claimed
"""
)
"""KEYS: the slot key; ARGV: holder, TTL in ms, the slot in Unix ms, the backup's channel (''
to tell nobody), the notice."""

HEAR_AGAIN_AFTER = 1.0
"""Seconds before listening again once the channel's connection failed (backups claim
meanwhile, as they would without notices)."""
_YIELD_EVERY = 64
"""Messages handled in a row at most before the listener lets the event loop run others."""
_POLL = 1.0
"""Seconds a read of the channel waits at most (the connection's own timeout is as short)."""


@dataclass(slots=True, kw_only=True)
class _Claim(pipelines.Request[bool]):
    slot_ms: int
    channel: str = ""
    """The backup's channel, to tell when won; empty: nobody is told."""
    notice: bytes = b""


class RedisLock(pipelines.PipelinedClaims[_Claim]):
    """``protocols.SlotLock`` on one Redis (standalone or behind a primary endpoint), and
    ``protocols.TellsBackups`` when given a ``scope``."""

    backend = "redis"

    def __init__(
        self,
        client: "redis.asyncio.Redis",
        *,
        description: str = "redis",
        password: str | None = None,
        owns_client: bool = True,
        scope: str | None = None,
        acknowledgement: replication.Acknowledgement = replication.NO_WAIT,
        fails_over: bool = False,
    ) -> None:
        """Use ``client`` (which this lock then owns: ``close()`` closes it; with
        ``owns_client`` false, a client the replica shares with its run leases and stream
        claims, which ``close()`` leaves open).

        ``description`` names the server in errors and logs (a redacted URL); ``password``, when
        given, is scrubbed from every error message as a last line of defence. ``scope``, the
        installation's (``claim_notices.scope``), names the channels backups are told on; None:
        claims tell nobody. ``acknowledgement``: the replicas a claim waits for; ``fails_over``:
        ``client`` reaches a primary behind Sentinel, whose failover a claim waits for (both in
        ``redis_io.pipelines``).
        """
        super().__init__(
            client,
            description=description,
            password=password,
            name="redis slot claims",
            owns_client=owns_client,
            script=CLAIM_AND_TELL,
            acknowledgement=acknowledgement,
            fails_over=fails_over,
        )
        self._scope = scope
        self._subscribed = False

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        max_connections: int = connections.DEFAULT_MAX_CONNECTIONS,
        pool_timeout: float = connections.DEFAULT_POOL_TIMEOUT,
        socket_timeout: float = connections.DEFAULT_SOCKET_TIMEOUT,
        connect_timeout: float = connections.DEFAULT_SOCKET_TIMEOUT,
        scope: str | None = None,
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
            connection.client,
            description=connection.description,
            password=connection.password,
            scope=scope,
            fails_over=connection.fails_over,
        )

    def __repr__(self) -> str:
        return f"RedisLock({self._description})"

    async def claim(self, claim: records.Claim) -> bool:
        request = _Claim(
            key=slot_keys.slot_key(claim.slot_id),
            holder=claim.holder.encode(),
            slot_id=claim.slot_id,
            answer=asyncio.get_running_loop().create_future(),
            ttl_ms=replication.ttl_millis(claim.ttl),
            slot_ms=lock_memory.slot_millis(claim.slot),
            run=claim.run,
        )
        if claim.backup is not None and self._scope is not None:
            request.channel = claim_notices.channel(self._scope, claim.backup)
            request.notice = claim_notices.encode(
                records.ClaimNotice(uid=claim.job.uid, slot=claim.slot)
            )
        won: bool = await self._submit(request)
        return won

    async def hear(self, member: str, notices: protocols.ClaimNotices) -> None:
        if self._scope is None:
            raise RuntimeError("a lock without a scope has no channel to hear")
        channel = claim_notices.channel(self._scope, member)
        self._subscribed = True
        while True:
            try:
                await self._load_script()
                await self._listen(channel, notices)
            except (redis.exceptions.RedisError, OSError) as error:
                # Once per outage: the lock's health probe says the rest.
                (logger.warning if self._subscribed else logger.debug)(
                    "claim notices: %s: %s; listening again every %.0f s",
                    self._description,
                    self._scrub(str(error)) or type(error).__name__,
                    HEAR_AGAIN_AFTER,
                )
                self._subscribed = False
            await asyncio.sleep(HEAR_AGAIN_AFTER)

    async def _listen(self, channel: str, notices: protocols.ClaimNotices) -> None:
        pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(channel)
            self._subscribed = True
            for count in itertools.count(1):
                message = await pubsub.get_message(timeout=_POLL)
                if message is None:
                    continue
                notice = (
                    claim_notices.parse(message.get("data"))
                    if message.get("type") == "message"
                    else None
                )
                if notice is None:
                    notices.malformed()
                else:
                    notices.claimed(notice)
                if not count % _YIELD_EVERY:
                    # Replies already read return without a pause: a flood of them must not
                    # hold the event loop.
                    await asyncio.sleep(0)
        finally:
            with contextlib.suppress(redis.exceptions.RedisError, OSError):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    def _add(self, pipeline: redis.asyncio.client.Pipeline, request: _Claim) -> None:
        pipeline.evalsha(
            self._sha,
            1,
            request.key,
            request.holder,
            request.ttl_ms,
            request.slot_ms,
            request.channel,
            request.notice,
        )

    def _settle(self, request: _Claim, reply: object, holder: object) -> bool:
        if holder is not None and holder == request.holder:
            self._won(request, True)  # the earlier attempt had won it
        elif reply == lock_memory.FORGOTTEN or (
            holder is not None and holder == request.holder + lock_memory.FORGOTTEN_MARK
        ):
            if not self._held(request):
                self._forgot(request)
        elif self._script_missing(request, reply):
            return False
        elif isinstance(reply, redis.exceptions.RedisError):
            # Anything else (a read-only replica after a failover, OOM, ...) cannot tell who
            # owns the slot either.
            self._refuse([request], reply)
        elif reply:
            self._won(request, True)
        else:
            self._answer(request, False)
        return True

    def _forgot(self, request: _Claim) -> None:
        if not request.answer.done():
            request.answer.set_exception(
                protocols.LockForgotError(
                    f"{self._description}: slot {request.slot_id} was due before the server "
                    "started: its claim may have been lost with the previous server, so it is "
                    "not run"
                )
            )
