"""Run leases on Redis (``runtime.protocols.RunLeases``): who runs which slot, until when.

One key per run, one sorted set for all of them:

- ``punctual:run:<slot-id>``: a hash ``{replica, attempt, startedAt, slot}`` (milliseconds),
  the run as the replica that started it described it;
- ``punctual:runs``: the slot ids of every run in flight, of every job, scored by their lease
  deadline in milliseconds of Redis's own clock (``TIME``), so replicas whose wall clocks
  disagree still agree on which lease is past due, and one ``ZREVRANGEBYSCORE`` finds the
  expired leases of every job: a scan costs one round trip whatever the number of jobs.

Each operation is one Lua script, atomic in Redis, over all the leases it is given (chunks of
``MAX_BATCH`` leases, sent at once, when there are more): a renewal only extends a lease its
replica still holds, and a take-over removes an expired lease and returns it to exactly one
caller. Keys are built from slot ids that ``redis_io.slot_keys.slot_key`` accepts (validated
names only). A run's hash expires ``KEEP`` after its last hold or renewal, and every listing of
the expired leases drops those past their deadline by more than ``KEEP``: a job deleted while
its run's replica was dead (nobody schedules it, nobody takes the lease over) leaves nothing
behind for more than a day.
"""

import asyncio
import itertools
import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Self

import redis.asyncio
import redis.exceptions

from punctual.contracts import protocols, records
from punctual.redis_io import connections, slot_keys
from punctual.scheduling import slots

RUN_PREFIX = "punctual:run:"
RUNS_KEY = "punctual:runs"
KEEP = timedelta(days=1)
"""How long lease keys outlive their last hold or renewal: far beyond any lease, bounded."""
MAX_BATCH = 512
"""Leases per script call at most, so that no call holds Redis up for long."""
MAX_REPLICA_LENGTH = 253
"""A replica is named after its pod: a longer name in a run's hash is not one we wrote."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_WHOLE_NUMBER = re.compile(r"[0-9]{1,16}")

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
HOLD = (
    _NOW
    + """
-- KEYS[1] the runs in flight, KEYS[1 + i] run i
-- ARGV[1] ttl, ARGV[2] keep, then per run: slot id, replica, attempt, started, slot
local deadline = now + tonumber(ARGV[1])
local scored = {}
for i = 2, #KEYS do
  local a = 3 + (i - 2) * 5
  redis.call('HSET', KEYS[i], 'replica', ARGV[a + 1], 'attempt', ARGV[a + 2],
             'startedAt', ARGV[a + 3], 'slot', ARGV[a + 4])
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
  scored[#scored + 1] = deadline
  scored[#scored + 1] = ARGV[a]
end
redis.call('ZADD', KEYS[1], unpack(scored))
return #KEYS - 1
"""
)
RENEW = (
    _NOW
    + """
-- KEYS[1] the runs in flight, KEYS[1 + i] run i
-- ARGV[1] ttl, ARGV[2] keep, then per run: slot id, replica
-- Returns the slot ids no longer held by their replica.
local deadline = now + tonumber(ARGV[1])
local gone, scored = {}, {}
for i = 2, #KEYS do
  local id, replica = ARGV[2 * i - 1], ARGV[2 * i]
  if redis.call('HGET', KEYS[i], 'replica') == replica
     and redis.call('ZSCORE', KEYS[1], id) then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    scored[#scored + 1] = deadline
    scored[#scored + 1] = id
  else
    gone[#gone + 1] = id
  end
end
if #scored > 0 then redis.call('ZADD', KEYS[1], 'XX', unpack(scored)) end
return gone
"""
)
RELEASE = """
-- KEYS[1] the runs in flight, KEYS[1 + i] run i; ARGV per run: slot id, replica
local released = {}
for i = 2, #KEYS do
  local id, replica = ARGV[2 * i - 3], ARGV[2 * i - 2]
  if redis.call('HGET', KEYS[i], 'replica') == replica then
    redis.call('DEL', KEYS[i])
    released[#released + 1] = id
  end
end
if #released > 0 then redis.call('ZREM', KEYS[1], unpack(released)) end
return #released
"""
EXPIRED = (
    _NOW
    + """
-- KEYS[1] the runs in flight; ARGV limit, skip, keep
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - tonumber(ARGV[3])))
return redis.call('ZREVRANGEBYSCORE', KEYS[1], now, '-inf', 'LIMIT', ARGV[2], ARGV[1])
"""
)
TAKE_OVER = (
    _NOW
    + """
-- KEYS[1] the runs in flight, KEYS[1 + i] run i; ARGV[i] slot id i
-- Returns slot id, run (HGETALL), slot id, run, ... for the expired leases removed.
local taken = {}
for i = 2, #KEYS do
  local id = ARGV[i - 1]
  local due = redis.call('ZSCORE', KEYS[1], id)
  if due and tonumber(due) <= now then
    redis.call('ZREM', KEYS[1], id)
    taken[#taken + 1] = id
    taken[#taken + 1] = redis.call('HGETALL', KEYS[i])
    redis.call('DEL', KEYS[i])
  end
end
return taken
"""
)


def run_key(slot_id: str) -> str:
    return RUN_PREFIX + slot_keys.slot_key(slot_id).removeprefix(slot_keys.KEY_PREFIX)


def _millis(instant: datetime) -> int:
    return (instant - _EPOCH) // timedelta(milliseconds=1)


def _ms(value: timedelta) -> int:
    return max(1, -(-value // timedelta(milliseconds=1)))


def _text(value: bytes | str) -> str:
    # Whatever else writes to this Redis may leave bytes that are not UTF-8 (a member of the
    # runs in flight, a field of a run): they read as escapes, never as an exception that would
    # end the heartbeat or the detector. Such a slot id parses as no job this replica schedules.
    return value.decode(errors="backslashreplace") if isinstance(value, bytes) else str(value)


def _whole_number(text: str | None) -> int | None:
    """``text`` as HOLD wrote it (decimal digits); None for anything else."""
    return int(text) if text is not None and _WHOLE_NUMBER.fullmatch(text) else None


def _started(text: str | None) -> datetime | None:
    """The run's start as HOLD wrote it (milliseconds; 0 for none); None for anything else."""
    millis = _whole_number(text)
    if not millis:
        return None
    try:
        return _EPOCH + timedelta(milliseconds=millis)
    except OverflowError:  # past the year 9999
        return None


def _asked_at(text: str | None) -> datetime:
    """When a run asked for by hand was asked for, as HOLD wrote it in the run's slot field
    (milliseconds); the epoch for anything else, so that an odd value still lets the run be
    recorded Lost and retried under its token."""
    return _started(text) or _EPOCH


def _replica(text: str | None) -> str:
    """The replica named in a run's hash, as HOLD wrote it (a pod's name); ``?`` otherwise, so
    that no odd value reaches a run record, an Event or a log line."""
    if text and len(text) <= MAX_REPLICA_LENGTH and text.isprintable():
        return text
    return "?"


class RedisRunLeases:
    def __init__(self, connection: connections.Connection, *, owns_client: bool = True) -> None:
        """Use ``connection``'s client: this object's own (``close()`` closes it), or with
        ``owns_client`` false one the replica shares with its slot lock and stream claims."""
        self._client: redis.asyncio.Redis = connection.client
        self._owns_client = owns_client
        self._description = connection.description
        self._password = connection.password
        self._hold = self._client.register_script(HOLD)
        self._renew = self._client.register_script(RENEW)
        self._release = self._client.register_script(RELEASE)
        self._expired = self._client.register_script(EXPIRED)
        self._take_over = self._client.register_script(TAKE_OVER)

    @classmethod
    def from_url(cls, url: str) -> Self:
        return cls(connections.connect(url))

    def __repr__(self) -> str:
        return f"RedisRunLeases({self._description})"

    async def close(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def hold(self, leases_: Sequence[records.Lease], *, ttl: timedelta) -> None:
        def call(batch: Sequence[records.Lease]) -> Awaitable[Any]:
            args: list[str | int] = [_ms(ttl), _ms(KEEP)]
            for lease in batch:
                args += [
                    lease.slot_id,
                    lease.replica,
                    lease.attempt,
                    _millis(lease.started_at or _EPOCH),
                    _millis(lease.slot),
                ]
            return self._hold(keys=self._keys(batch), args=args)

        await self._batched(leases_, call)

    async def renew(self, leases_: Sequence[records.Lease], *, ttl: timedelta) -> list[str]:
        def call(batch: Sequence[records.Lease]) -> Awaitable[Any]:
            args: list[str | int] = [_ms(ttl), _ms(KEEP)]
            for lease in batch:
                args += [lease.slot_id, lease.replica]
            return self._renew(keys=self._keys(batch), args=args)

        replies = await self._batched(leases_, call)
        return [_text(slot_id) for slot_id in itertools.chain.from_iterable(replies)]

    async def release(self, leases_: Sequence[records.Lease]) -> None:
        def call(batch: Sequence[records.Lease]) -> Awaitable[Any]:
            args = [part for lease in batch for part in (lease.slot_id, lease.replica)]
            return self._release(keys=self._keys(batch), args=args)

        await self._batched(leases_, call)

    async def expired(self, *, limit: int, skip: int = 0) -> list[str]:
        found = await self._guard(self._expired(keys=[RUNS_KEY], args=[limit, skip, _ms(KEEP)]))
        return [_text(item) for item in found]

    async def take_over(self, slot_ids: Sequence[str]) -> list[records.Lease]:
        """One script call, however many: callers pass a page of expired leases (an answer
        lost on the way would lose every lease it took; no retry could find them again)."""
        if not slot_ids:
            return []
        keys = [RUNS_KEY, *(run_key(slot_id) for slot_id in slot_ids)]
        found = await self._guard(self._take_over(keys=keys, args=list(slot_ids)))
        return [
            self._lease(_text(slot_id), run)
            for slot_id, run in zip(found[::2], found[1::2], strict=True)
        ]

    @staticmethod
    def _keys(batch: Sequence[records.Lease]) -> list[str]:
        return [RUNS_KEY, *(run_key(lease.slot_id) for lease in batch)]

    @staticmethod
    def _lease(slot_id: str, run: list[Any]) -> records.Lease:
        """The lease taken over. The script has removed it already: a field that does not
        read as HOLD wrote it counts as missing, and the lease is still recorded (raising here
        would lose every lease of the take-over). The slot comes from the slot id (the key the
        run was claimed and taken over by), never from the hash's copy of it, but for a run
        asked for by hand: its id names its token, and the hash when it was asked for."""
        fields = {_text(k): _text(v) for k, v in zip(run[::2], run[1::2], strict=True)}
        if slots.run_now_token(slot_id) is None:
            job, slot = slots.parse_slot_id(slot_id)
        else:
            job, slot = slots.job_of(slot_id), _asked_at(fields.get("slot"))
        attempt = _whole_number(fields.get("attempt"))
        return records.Lease(
            job=job,
            slot=slot,
            slot_id=slot_id,
            replica=_replica(fields.get("replica")),
            attempt=attempt if attempt else 1,
            started_at=_started(fields.get("startedAt")),
        )

    async def _batched(
        self,
        leases_: Sequence[records.Lease],
        call: Callable[[Sequence[records.Lease]], Awaitable[Any]],
    ) -> list[Any]:
        """``call`` for each chunk of ``MAX_BATCH`` leases, all sent at once; the replies."""
        if not leases_:
            return []
        if len(leases_) <= MAX_BATCH:
            return [await self._guard(call(leases_))]
        batches = [leases_[at : at + MAX_BATCH] for at in range(0, len(leases_), MAX_BATCH)]
        replies = await asyncio.gather(
            *(self._guard(call(batch)) for batch in batches), return_exceptions=True
        )
        for reply in replies:
            if isinstance(reply, BaseException):
                raise reply
        return replies

    async def _guard(self, operation: "Any") -> Any:
        """Await ``operation``; any Redis error becomes ``LockUnavailableError`` (redacted)."""
        try:
            return await operation
        except redis.exceptions.RedisError as error:
            detail = str(error).replace(self._password, "***") if self._password else str(error)
            raise protocols.LockUnavailableError(
                f"{self._description}: run leases: {type(error).__name__}: {detail}"
            ) from None
