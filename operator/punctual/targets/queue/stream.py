"""The queue target's slot lock: claiming a slot and appending its stream entry are ONE step.

One Lua script, run atomically by Redis, does ``SET punctual:slot:<slot-id> <holder> NX PX
<ttl>`` and, only if that succeeded, ``XADD <stream> MAXLEN ~ <n> * job ... payload ...``. So a
slot is never enqueued twice (the second claimer's SET fails, and it adds nothing), and never
claimed without its entry: should the XADD fail, the script deletes the key it just set and
the claim fails (closed). The same script sets the stream's expiry (``PEXPIRE``,
``--stream-idle-expiry``) at each append, so a stream no job writes to any more, its job
deleted or stopped, goes away after that idle time instead of filling the Redis every tenant
shares. A stream key that holds another type is refused before anything is
written. The slot key is the same as the plain Redis lock's (``redis_io.slot_keys.slot_key``).
A slot due before the Redis server started is won without its entry, only to be counted missed
(``LockForgotError``; ``redis_io.lock_memory``): its entry may have been added already.

The script goes by ``EVALSHA``; it is loaded as soon as the first queue job is wired (which
also opens the connection its first slot will use), and again whenever Redis answers
``NOSCRIPT`` (a restart, ``SCRIPT FLUSH``). Claims go out in pipelines, one round trip in flight
at a time, as the plain lock's do: the queue jobs due on the same instant are claimed and
enqueued in one write and one read, not one pooled connection, timeout and task switch each. A
claim that lost its reply is retried once, like the plain lock's: if the first attempt set the
key, the retry finds it holding our holder and the slot is ours (its entry id unknown).

A claim made only to count missed slots (``Claim.run`` false) is a plain ``SET NX``: a missed
slot is never enqueued.

Entries carry the fields ``job`` (``<namespace>/<name>``), ``namespace``, ``slot`` (the slot
id), ``scheduledTime`` (RFC 3339, UTC: the slot plus the job's jitter), ``idempotencyKey``
(the slot id again, for consumers that deduplicate) and ``payload`` (JSON of
``spec.target.queue.payload``; ``{}`` when unset). On Redis Cluster the slot key and the stream
would live in different hash slots: only a standalone Redis (or a primary endpoint) works.
"""

import asyncio
import collections
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Self

import redis.asyncio
import redis.exceptions

from punctual.contracts import protocols, records
from punctual.redis_io import connections, lock_memory, pipelines, replication, slot_keys
from punctual.scheduling import slots, timeline

logger = logging.getLogger(__name__)

CLAIM_AND_ENQUEUE = (
    lock_memory.PROVABLE
    + """
-- KEYS[1] the slot key, KEYS[2] the stream
-- ARGV[1] holder, ARGV[2] TTL in ms, ARGV[3] MAXLEN, ARGV[4] the slot in Unix ms,
-- ARGV[5] the stream's idle expiry in ms (0: none), ARGV[6..] field, value, ...
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind ~= 'stream' and kind ~= 'none' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[2] .. ' holds a ' .. kind .. ', not a stream')
end
local claimed = claim_slot(KEYS[1], ARGV[1], ARGV[2], ARGV[4])
if claimed == 0 then
  return false
elseif claimed ~= 1 then
  return claimed
end
local added, id =
  pcall(redis.call, 'XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', unpack(ARGV, 6))
if not added then
  redis.call('DEL', KEYS[1])
  local reason = type(id) == 'table' and id['err'] or tostring(id)
  return redis.error_reply('XADD failed, slot released: ' .. reason)
end
if tonumber(ARGV[5]) > 0 then
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
end
return id
"""
)

DEFAULT_IDLE_EXPIRY = timedelta(days=7)
"""How long a stream lives after its last append (``--stream-idle-expiry``): a weekly job's
stream outlives the week between its entries."""
UNKNOWN_ENTRY = "(id unknown: the reply was lost)"
_ENTRY_MEMORY = 1024
"""Entry ids kept per job between the claim and the run that reports them."""


def entry_fields(claim: records.Claim, *, payload: str) -> dict[str, str]:
    """The fields of the stream entry of ``claim``'s slot, in the order they are written."""
    scheduled = claim.scheduled_time or claim.slot
    return {
        "job": f"{claim.job.namespace}/{claim.job.name}",
        "namespace": claim.job.namespace,
        "slot": claim.slot_id,
        "scheduledTime": timeline.rfc3339(scheduled),
        "idempotencyKey": claim.slot_id,
        "payload": payload,
    }


_MEASURED_SLOT = datetime(2099, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)
"""A slot whose id and scheduled time are as long as any this century's: 13 digits of Unix
milliseconds, and milliseconds in the RFC 3339 time."""


def entry_bytes(job: slots.JobRef, *, payload: str) -> int:
    """The bytes one of ``job``'s entries takes as written, field names and values in UTF-8:
    what a stream of ``maxLen`` entries holds, Redis's own bookkeeping aside."""
    claim = records.Claim(
        job=job,
        slot=_MEASURED_SLOT,
        slot_id=slots.slot_id(job, _MEASURED_SLOT),
        holder="",
        ttl=timedelta(),
    )
    fields = entry_fields(claim, payload=payload)
    return sum(
        len(f"{name}{value}".encode(errors="surrogatepass")) for name, value in fields.items()
    )


def payload_json(payload: Mapping[str, Any] | None) -> str:
    """Compact, key-sorted JSON: the same bytes on every replica."""
    return json.dumps(payload or {}, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


@dataclass(slots=True, kw_only=True)
class _Request(pipelines.Request["str | None"]):
    stream: str
    arguments: list[str | int]
    """The script's ARGV: holder, TTL in ms, MAXLEN, the slot in Unix ms, the stream's idle
    expiry in ms, then the entry's fields."""


class StreamClaims(pipelines.PipelinedClaims[_Request]):
    """The operator's Redis for queue targets: one client and script, one lock per job."""

    def __init__(
        self,
        connection: connections.Connection,
        *,
        owns_client: bool = True,
        acknowledgement: replication.Acknowledgement = replication.NO_WAIT,
        idle_expiry: timedelta = DEFAULT_IDLE_EXPIRY,
    ) -> None:
        """Use ``connection``'s client: this object's own (``close()`` closes it), or with
        ``owns_client`` false one the replica shares with its slot lock and run leases.
        ``acknowledgement``: the replicas a claim (and its entry) waits for
        (``redis_io.pipelines``). ``idle_expiry``: each append sets the stream to expire that
        long after it (zero: never)."""
        super().__init__(
            connection.client,
            description=connection.description,
            password=connection.password,
            name="redis stream claims",
            owns_client=owns_client,
            script=CLAIM_AND_ENQUEUE,
            acknowledgement=acknowledgement,
            fails_over=connection.fails_over,
        )
        self._warming: asyncio.Task[None] | None = None
        self._idle_expiry_ms = idle_expiry // timedelta(milliseconds=1)

    @classmethod
    def from_url(cls, url: str) -> Self:
        """Raises ``ValueError`` for a URL that is not redis:// or rediss:// (see
        ``redis_io.connections``)."""
        return cls(connections.connect(url))

    def __repr__(self) -> str:
        return f"StreamClaims({self._description})"

    def lock_for(
        self, *, stream: str, payload: Mapping[str, Any] | None, max_len: int
    ) -> "StreamLock":
        """The lock of one job appending to ``stream`` (a key of ``redis_io.namespace_keys``),
        trimmed to about ``max_len`` entries."""
        self._warm_up()
        return StreamLock(self, stream=stream, payload=payload_json(payload), max_len=max_len)

    async def close(self) -> None:
        await self._stop(self._warming)
        await super().close()

    async def claim(
        self, claim: records.Claim, *, stream: str, fields: Mapping[str, str], max_len: int
    ) -> str | None:
        """The new entry's id when ``claim`` won (``UNKNOWN_ENTRY`` if its reply was lost);
        ``None`` when another holder has the slot. Raises ``LockUnavailableError``."""
        ttl_ms = replication.ttl_millis(claim.ttl)
        arguments: list[str | int] = [
            claim.holder,
            ttl_ms,
            max_len,
            lock_memory.slot_millis(claim.slot),
            self._idle_expiry_ms,
        ]
        for name, value in fields.items():
            arguments += [name, value]
        request = _Request(
            key=slot_keys.slot_key(claim.slot_id),
            holder=claim.holder.encode(),
            slot_id=claim.slot_id,
            ttl_ms=ttl_ms,
            answer=asyncio.get_running_loop().create_future(),
            stream=stream,
            arguments=arguments,
            run=claim.run,
        )
        entry: str | None = await self._submit(request)
        return entry

    def _warm_up(self) -> None:
        """Load the script and open a connection before the first slot needs them (once)."""
        if self._warming is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on a loop (a test wiring targets): the first claim will
            return
        self._warming = loop.create_task(self._load_script(), name="redis stream warm-up")

    def _add(self, pipeline: redis.asyncio.client.Pipeline, request: _Request) -> None:
        if request.run:
            pipeline.evalsha(self._sha, 2, request.key, request.stream, *request.arguments)
        else:  # only to count the slot missed: never enqueued
            pipeline.set(request.key, request.holder, nx=True, px=request.ttl_ms)

    def _settle(self, request: _Request, reply: object, holder: object) -> bool:
        """Answer ``request`` from its replies; False when it must go again (``NOSCRIPT``)."""
        if reply == lock_memory.FORGOTTEN or (
            holder is not None and holder == request.holder + lock_memory.FORGOTTEN_MARK
        ):
            if not self._held(request) and not request.answer.done():
                request.answer.set_exception(
                    protocols.LockForgotError(
                        f"{self._description}: slot {request.slot_id} was due before the server "
                        "started: its claim may have been lost with the previous server, so it "
                        "is not enqueued"
                    )
                )
        elif reply is not None and not isinstance(reply, redis.exceptions.RedisError):
            self._won(request, reply.decode() if isinstance(reply, bytes) else str(reply))
        elif holder is not None and holder == request.holder:
            self._won(request, UNKNOWN_ENTRY)  # the earlier attempt had won it
        elif self._script_missing(request, reply):
            return False
        elif isinstance(reply, redis.exceptions.RedisError):
            self._refuse([request], reply)
        else:
            self._answer(request, None)  # another holder has the slot
        return True


class StreamLock:
    """``protocols.SlotLock`` of one queue-target job: a won claim has appended the slot's entry.

    The entry id waits here for the run that reports it (``take_entry``).
    """

    def __init__(self, claims: StreamClaims, *, stream: str, payload: str, max_len: int) -> None:
        self._claims = claims
        self.stream = stream
        self._payload = payload
        self.max_len = max_len
        self._entries: collections.OrderedDict[str, str] = collections.OrderedDict()

    def __repr__(self) -> str:
        return f"StreamLock({self.stream!r} on {self._claims!r})"

    async def claim(self, claim: records.Claim) -> bool:
        entry = await self._claims.claim(
            claim,
            stream=self.stream,
            fields=entry_fields(claim, payload=self._payload),
            max_len=self.max_len,
        )
        if entry is None:
            return False
        if claim.run:
            self._entries[claim.slot_id] = entry
            while len(self._entries) > _ENTRY_MEMORY:
                self._entries.popitem(last=False)
        return True

    def take_entry(self, slot_id: str) -> str | None:
        """The id of the entry the claim of ``slot_id`` appended, once."""
        return self._entries.pop(slot_id, None)
