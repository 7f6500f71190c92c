"""Run leases on a real Redis: held, renewed, expired on Redis's clock, taken over by exactly
one replica, and a renewal by the presumed-dead holder learns that its lease is gone."""

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from localcluster import LocalRedis
from punctual.locks.redis_leases import RedisRunLeases
from punctual.runtime.leases import Lease
from punctual.scheduling import slots

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
SHORT = timedelta(milliseconds=300)
LONG = timedelta(minutes=1)


def a_lease(replica: str = "r1", attempt: int = 1) -> Lease:
    # A fresh uid per test: the session's Redis is shared.
    job = slots.JobRef(namespace="leases", name="nightly", uid=str(uuid.uuid4()))
    return Lease(
        job=job,
        slot=SLOT,
        slot_id=slots.slot_id(job, SLOT),
        replica=replica,
        attempt=attempt,
        started_at=SLOT + timedelta(milliseconds=12),
    )


@pytest.fixture
async def replicas(redis_server: LocalRedis) -> AsyncIterator[tuple[RedisRunLeases, ...]]:
    """Three replicas' views of the same Redis, each with its own client."""
    opened = tuple(RedisRunLeases.from_url(redis_server.url) for _ in range(3))
    yield opened
    for leases in opened:
        await leases.close()


async def test_a_held_lease_is_not_expired(replicas: tuple[RedisRunLeases, ...]) -> None:
    mine, other, _ = replicas
    lease = a_lease()

    await mine.hold([lease], ttl=LONG)

    assert await other.expired(lease.job) == []
    assert await other.take_over(lease.job, lease.slot_id) is None


async def test_a_lease_not_renewed_expires_and_exactly_one_replica_takes_it_over(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    dead, first, second = replicas
    lease = a_lease(attempt=1)
    await dead.hold([lease], ttl=SHORT)
    await asyncio.sleep(SHORT.total_seconds() + 0.2)

    assert await first.expired(lease.job) == [lease.slot_id]
    taken = await asyncio.gather(
        first.take_over(lease.job, lease.slot_id), second.take_over(lease.job, lease.slot_id)
    )

    winners = [found for found in taken if found is not None]
    assert winners == [lease]
    assert await first.expired(lease.job) == []


async def test_renewals_keep_a_lease_alive_past_its_first_deadline(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    mine, other, _ = replicas
    lease = a_lease()
    await mine.hold([lease], ttl=SHORT)
    for _ in range(4):
        await asyncio.sleep(SHORT.total_seconds() / 3)
        assert await mine.renew([lease], ttl=SHORT) == []

    assert await other.take_over(lease.job, lease.slot_id) is None


async def test_the_presumed_dead_holder_learns_its_lease_was_taken(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    slow, detector, _ = replicas
    lease = a_lease()
    await slow.hold([lease], ttl=SHORT)
    await asyncio.sleep(SHORT.total_seconds() + 0.2)
    await detector.take_over(lease.job, lease.slot_id)

    assert await slow.renew([lease], ttl=SHORT) == [lease.slot_id]


async def test_a_retry_holds_the_slot_again_under_its_new_replica(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    dead, retrier, _ = replicas
    lease = a_lease(replica="r1", attempt=1)
    await dead.hold([lease], ttl=SHORT)
    await asyncio.sleep(SHORT.total_seconds() + 0.2)
    await retrier.take_over(lease.job, lease.slot_id)
    retry = Lease(job=lease.job, slot=lease.slot, slot_id=lease.slot_id, replica="r2", attempt=2)

    await retrier.hold([retry], ttl=LONG)

    assert await dead.renew([lease], ttl=LONG) == [lease.slot_id]  # r1 no longer holds it
    assert await retrier.renew([retry], ttl=LONG) == []


async def test_a_released_lease_is_gone_for_good(replicas: tuple[RedisRunLeases, ...]) -> None:
    mine, other, _ = replicas
    lease = a_lease()
    await mine.hold([lease], ttl=SHORT)

    await mine.release([lease])
    await asyncio.sleep(SHORT.total_seconds() + 0.2)

    assert await other.expired(lease.job) == []
    assert await other.take_over(lease.job, lease.slot_id) is None


async def test_a_slot_id_with_control_characters_is_refused_before_redis(
    replicas: tuple[RedisRunLeases, ...],
) -> None:
    lease = a_lease()
    odd = Lease(job=lease.job, slot=lease.slot, slot_id=lease.slot_id + "\n", replica="r1")

    with pytest.raises(ValueError, match="refusing a slot id"):
        await replicas[0].hold([odd], ttl=LONG)
