"""Run leases on a real Redis: held, renewed, expired on Redis's clock, taken over by exactly
one replica, and a renewal by the presumed-dead holder learns that its lease is gone. All jobs'
leases live in one sorted set: one listing finds the expired leases of every job, a scan costs
one round trip however many jobs a replica schedules, and leases nobody takes over are dropped
a day after they expired."""

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import pytest
import redis

from localcluster import LocalRedis
from punctual.contracts.records import Lease
from punctual.locks import redis_leases
from punctual.locks.redis_leases import RedisRunLeases
from punctual.runtime.leases import LossDetector
from punctual.scheduling import slots

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
SHORT = timedelta(milliseconds=300)
LONG = timedelta(minutes=1)
EVERY_JOB = 10_000
"""A limit on the listing that shows every expired lease in the session's Redis."""
MADE: list[Lease] = []
"""The leases of the running test: released at its end, so that none is left expired in the
session's Redis for later tests (and test_durable_runs) to list."""


def a_job() -> slots.JobRef:
    # A fresh uid per lease: the session's Redis is shared.
    return slots.JobRef(namespace="leases", name="nightly", uid=str(uuid.uuid4()))


def a_lease(
    replica: str = "r1", attempt: int = 1, *, job: slots.JobRef | None = None, slot: datetime = SLOT
) -> Lease:
    job = job or a_job()
    lease = Lease(
        job=job,
        slot=slot,
        slot_id=slots.slot_id(job, slot),
        replica=replica,
        attempt=attempt,
        started_at=slot + timedelta(milliseconds=12),
    )
    MADE.append(lease)
    return lease


async def expired_ids(replica: RedisRunLeases) -> list[str]:
    return await replica.expired(limit=EVERY_JOB)


async def expire() -> None:
    await asyncio.sleep(SHORT.total_seconds() + 0.2)


@pytest.fixture
async def replicas(redis_server: LocalRedis) -> AsyncIterator[tuple[RedisRunLeases, ...]]:
    """Three replicas' views of the same Redis, each with its own client."""
    opened = tuple(RedisRunLeases.from_url(redis_server.url) for _ in range(3))
    yield opened
    await opened[0].release(MADE)
    MADE.clear()
    for leases in opened:
        await leases.close()


@pytest.fixture
def raw(redis_server: LocalRedis) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server.url)
    yield client
    client.close()


async def test_a_held_lease_is_not_expired(replicas: tuple[RedisRunLeases, ...]) -> None:
    mine, other, _ = replicas
    lease = a_lease()

    await mine.hold([lease], ttl=LONG)

    assert lease.slot_id not in await expired_ids(other)
    assert await other.take_over([lease.slot_id]) == []


async def test_a_lease_not_renewed_expires_and_exactly_one_replica_takes_it_over(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    dead, first, second = replicas
    lease = a_lease(attempt=1)
    await dead.hold([lease], ttl=SHORT)
    await expire()

    assert lease.slot_id in await expired_ids(first)
    taken = await asyncio.gather(
        first.take_over([lease.slot_id]), second.take_over([lease.slot_id])
    )

    assert sorted(taken, key=len) == [[], [lease]]
    assert lease.slot_id not in await expired_ids(first)


async def test_one_listing_shows_the_expired_leases_of_every_job_newest_first(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    dead, detector, _ = replicas
    older, newer = a_lease(), a_lease()
    await dead.hold([older], ttl=SHORT)
    await asyncio.sleep(0.05)
    await dead.hold([newer], ttl=SHORT)
    await expire()

    listed = await expired_ids(detector)

    assert listed.index(newer.slot_id) < listed.index(older.slot_id)


async def test_the_listing_pages_through_the_expired_leases(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    dead, detector, _ = replicas
    await dead.hold([a_lease() for _ in range(3)], ttl=SHORT)
    await expire()
    every = await expired_ids(detector)

    pages = [await detector.expired(limit=2, skip=skip) for skip in (0, 2)]

    assert pages == [every[:2], every[2:4]]


async def test_several_leases_are_taken_over_in_one_call_each_by_exactly_one_replica(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    dead, first, second = replicas
    found = [a_lease(attempt=2) for _ in range(20)]
    alive = a_lease()
    await dead.hold(found, ttl=SHORT)
    await dead.hold([alive], ttl=LONG)
    await expire()
    ids = [lease.slot_id for lease in [*found, alive]]

    taken = await asyncio.gather(first.take_over(ids), second.take_over(ids[::-1]))

    won = sorted([*taken[0], *taken[1]], key=lambda lease: lease.slot_id)
    assert won == sorted(found, key=lambda lease: lease.slot_id)
    assert await first.renew([alive], ttl=LONG) == []


async def test_renewals_keep_a_lease_alive_past_its_first_deadline(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    mine, other, _ = replicas
    lease = a_lease()
    await mine.hold([lease], ttl=SHORT)
    for _ in range(4):
        await asyncio.sleep(SHORT.total_seconds() / 3)
        assert await mine.renew([lease], ttl=SHORT) == []

    assert await other.take_over([lease.slot_id]) == []


async def test_the_presumed_dead_holder_learns_its_lease_was_taken(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    slow, detector, _ = replicas
    lease, kept = a_lease(), a_lease()
    await slow.hold([lease, kept], ttl=SHORT)
    await expire()
    await detector.take_over([lease.slot_id])

    assert await slow.renew([lease, kept], ttl=SHORT) == [lease.slot_id]


async def test_a_retry_holds_the_slot_again_under_its_new_replica(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    dead, retrier, _ = replicas
    lease = a_lease(replica="r1", attempt=1)
    await dead.hold([lease], ttl=SHORT)
    await expire()
    await retrier.take_over([lease.slot_id])
    retry = Lease(job=lease.job, slot=lease.slot, slot_id=lease.slot_id, replica="r2", attempt=2)
    MADE.append(retry)

    await retrier.hold([retry], ttl=LONG)

    assert await dead.renew([lease], ttl=LONG) == [lease.slot_id]  # r1 no longer holds it
    await dead.release([lease])  # nor can it release it
    assert await retrier.renew([retry], ttl=LONG) == []


async def test_a_released_lease_is_gone_for_good(replicas: tuple[RedisRunLeases, ...]) -> None:
    mine, other, _ = replicas
    lease = a_lease()
    await mine.hold([lease], ttl=SHORT)

    await mine.release([lease])
    await expire()

    assert lease.slot_id not in await expired_ids(other)
    assert await other.take_over([lease.slot_id]) == []


async def test_more_leases_than_one_script_call_takes_are_held_renewed_and_released(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    mine, other, _ = replicas
    many = [a_lease() for _ in range(2 * redis_leases.MAX_BATCH + 7)]

    await mine.hold(many, ttl=SHORT)
    await asyncio.sleep(SHORT.total_seconds() / 2)
    assert await mine.renew(many, ttl=SHORT) == []
    await asyncio.sleep(SHORT.total_seconds() / 2 + 0.05)  # past the first deadline
    listed = set(await expired_ids(other))
    assert not listed & {lease.slot_id for lease in many}

    await mine.release(many)
    await expire()
    assert not set(await expired_ids(other)) & {lease.slot_id for lease in many}


async def test_a_lease_nobody_took_over_for_a_day_is_dropped(
    replicas: tuple[RedisRunLeases, ...], raw: redis.Redis
) -> None:
    """Its job was deleted while its replica was dead: no replica schedules it any more."""
    mine, other, _ = replicas
    orphan, recent = a_lease(), a_lease()
    await mine.hold([orphan, recent], ttl=SHORT)
    await expire()
    (now, _) = raw.time()
    a_day_and_a_second = (redis_leases.KEEP + timedelta(seconds=1)) // timedelta(milliseconds=1)
    raw.zadd(redis_leases.RUNS_KEY, {orphan.slot_id: now * 1000 - a_day_and_a_second})

    listed = await expired_ids(other)

    assert orphan.slot_id not in listed
    assert recent.slot_id in listed
    assert raw.zscore(redis_leases.RUNS_KEY, orphan.slot_id) is None
    await other.take_over([recent.slot_id])


async def test_a_scan_costs_one_round_trip_whatever_the_number_of_jobs(
    replicas: tuple[RedisRunLeases, ...], raw: redis.Redis
) -> None:
    detector_side, _, _ = replicas
    jobs = [a_job() for _ in range(1000)]

    async def on_lost(lease: Lease) -> None:
        raise AssertionError(f"nothing was lost: {lease}")

    # Only the jobs of this test: whatever other tests left expired is not theirs.
    detector = LossDetector(detector_side, jobs=lambda: jobs, on_lost=on_lost)
    await detector.scan()  # the script loaded
    before = raw.info("commandstats")

    await detector.scan()

    after = raw.info("commandstats")
    calls = {
        name.removeprefix("cmdstat_"): after[name]["calls"] - before.get(name, {}).get("calls", 0)
        for name in after
    }
    assert calls["evalsha"] == 1


async def test_a_slot_id_with_control_characters_is_refused_before_redis(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    lease = a_lease()
    odd = Lease(job=lease.job, slot=lease.slot, slot_id=lease.slot_id + "\n", replica="r1")

    with pytest.raises(ValueError, match="refusing a slot id"):
        await replicas[0].hold([odd], ttl=LONG)
