"""Run leases on Redis (``runtime.leases.RunLeases``): who runs which slot, until when.

Two keys per run, one sorted set per job:

- ``punctual:run:<slot-id>``: a hash ``{replica, attempt, startedAt, slot}`` (milliseconds),
  the run as the replica that started it described it;
- ``punctual:runs:<namespace>/<name>/<uid>``: a sorted set of the job's slot ids in flight,
  scored by their lease deadline in milliseconds of Redis's own clock (``TIME``), so replicas
  whose wall clocks disagree still agree on which lease is past due.

Each operation is one Lua script, atomic in Redis: a renewal only extends a lease its replica
still holds, and a take-over removes an expired lease and returns it to exactly one caller.
Keys are built from slot ids that ``locks.redis.slot_key`` accepts (validated names only).
Both keys get a generous expiry, refreshed on every hold, so a job deleted with runs in flight
leaves nothing behind for long.
"""

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Self

import redis.asyncio
import redis.exceptions

from punctual.locks import redis as redis_lock
from punctual.runtime import leases, seams
from punctual.scheduling import slots

RUN_PREFIX = "punctual:run:"
RUNS_PREFIX = "punctual:runs:"
KEEP = timedelta(days=1)
"""How long lease keys outlive their last hold: far beyond any lease, bounded all the same."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
HOLD = (
    _NOW
    + """
-- KEYS[1] runs of the job, KEYS[2] the run
-- ARGV ttl, slot id, replica, attempt, started, slot, keep
redis.call('HSET', KEYS[2], 'replica', ARGV[3], 'attempt', ARGV[4], 'startedAt', ARGV[5],
           'slot', ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[7])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return 1
"""
)
RENEW = (
    _NOW
    + """
-- KEYS[1] runs of the job, KEYS[2] the run; ARGV ttl, slot id, replica
if redis.call('HGET', KEYS[2], 'replica') ~= ARGV[3] then return 0 end
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[2])
return 1
"""
)
RELEASE = """
-- KEYS[1] runs of the job, KEYS[2] the run; ARGV slot id, replica
if redis.call('HGET', KEYS[2], 'replica') ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
return 1
"""
EXPIRED = (
    _NOW
    + """
-- KEYS[1] runs of the job
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 100)
"""
)
TAKE_OVER = (
    _NOW
    + """
-- KEYS[1] runs of the job, KEYS[2] the run; ARGV slot id
local due = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not due or tonumber(due) > now then return false end
redis.call('ZREM', KEYS[1], ARGV[1])
local run = redis.call('HGETALL', KEYS[2])
redis.call('DEL', KEYS[2])
return run
"""
)


def run_key(slot_id: str) -> str:
    return RUN_PREFIX + redis_lock.slot_key(slot_id).removeprefix(redis_lock.KEY_PREFIX)


def runs_key(job: slots.JobRef) -> str:
    # Validated like a slot id: namespace, name and uid are its first three parts.
    prefix = redis_lock.slot_key(f"{job.namespace}/{job.name}/{job.uid}/0").removesuffix("/0")
    return RUNS_PREFIX + prefix.removeprefix(redis_lock.KEY_PREFIX)


def _millis(instant: datetime) -> int:
    return (instant - _EPOCH) // timedelta(milliseconds=1)


def _ms(value: timedelta) -> int:
    return max(1, -(-value // timedelta(milliseconds=1)))


class RedisRunLeases:
    def __init__(self, connection: redis_lock.Connection) -> None:
        self._client: redis.asyncio.Redis = connection.client
        self._description = connection.description
        self._password = connection.password
        self._hold = self._client.register_script(HOLD)
        self._renew = self._client.register_script(RENEW)
        self._release = self._client.register_script(RELEASE)
        self._expired = self._client.register_script(EXPIRED)
        self._take_over = self._client.register_script(TAKE_OVER)

    @classmethod
    def from_url(cls, url: str) -> Self:
        return cls(redis_lock.connect(url))

    def __repr__(self) -> str:
        return f"RedisRunLeases({self._description})"

    async def close(self) -> None:
        await self._client.aclose()

    async def hold(self, leases_: Sequence[leases.Lease], *, ttl: timedelta) -> None:
        async def hold_all() -> None:
            for lease in leases_:
                started = lease.started_at or _EPOCH
                await self._hold(
                    keys=[runs_key(lease.job), run_key(lease.slot_id)],
                    args=[
                        _ms(ttl),
                        lease.slot_id,
                        lease.replica,
                        lease.attempt,
                        _millis(started),
                        _millis(lease.slot),
                        _ms(KEEP),
                    ],
                )

        await self._guard(hold_all())

    async def renew(self, leases_: Sequence[leases.Lease], *, ttl: timedelta) -> list[str]:
        async def renew_all() -> list[str]:
            gone = []
            for lease in leases_:
                kept = await self._renew(
                    keys=[runs_key(lease.job), run_key(lease.slot_id)],
                    args=[_ms(ttl), lease.slot_id, lease.replica],
                )
                if not kept:
                    gone.append(lease.slot_id)
            return gone

        gone: list[str] = await self._guard(renew_all())
        return gone

    async def release(self, leases_: Sequence[leases.Lease]) -> None:
        async def release_all() -> None:
            for lease in leases_:
                await self._release(
                    keys=[runs_key(lease.job), run_key(lease.slot_id)],
                    args=[lease.slot_id, lease.replica],
                )

        await self._guard(release_all())

    async def expired(self, job: slots.JobRef) -> list[str]:
        found = await self._guard(self._expired(keys=[runs_key(job)]))
        return [item.decode() if isinstance(item, bytes) else str(item) for item in found]

    async def take_over(self, job: slots.JobRef, slot_id: str) -> leases.Lease | None:
        found = await self._guard(
            self._take_over(keys=[runs_key(job), run_key(slot_id)], args=[slot_id])
        )
        if not found:
            return None
        fields = {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in zip(found[::2], found[1::2], strict=True)
        }
        slot_ms = int(fields.get("slot") or slot_id.rsplit("/", 1)[1])
        started_ms = int(fields.get("startedAt") or 0)
        return leases.Lease(
            job=job,
            slot=_EPOCH + timedelta(milliseconds=slot_ms),
            slot_id=slot_id,
            replica=fields.get("replica", "?"),
            attempt=int(fields.get("attempt") or 1),
            started_at=_EPOCH + timedelta(milliseconds=started_ms) if started_ms else None,
        )

    async def _guard(self, operation: "Any") -> Any:
        """Await ``operation``; any Redis error becomes ``LockUnavailableError`` (redacted)."""
        try:
            return await operation
        except redis.exceptions.RedisError as error:
            detail = str(error).replace(self._password, "***") if self._password else str(error)
            raise seams.LockUnavailableError(
                f"{self._description}: run leases: {type(error).__name__}: {detail}"
            ) from None
