"""The queue target's claim-and-enqueue script against a real redis-server.

A slot is enqueued exactly once however many claims race for it, never claimed without its
entry, and a slot claimed only to count it missed is never enqueued.
"""

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import redis.asyncio

from localcluster import LocalRedis
from punctual.contracts import protocols, records
from punctual.redis_io import connections, slot_keys
from punctual.scheduling import slots
from punctual.targets.queue import stream as queue_stream

SLOT = datetime(2036, 11, 30, 1, 30, tzinfo=UTC)
"""After the session's Redis started: a slot due before, it could not prove unclaimed."""
TTL = timedelta(minutes=2)


def a_job() -> slots.JobRef:
    return slots.JobRef(namespace="reports", name="nightly", uid=str(uuid.uuid4()))


def a_stream() -> str:
    return f"test:jobs:{uuid.uuid4().hex[:8]}"


def claim(
    job: slots.JobRef, holder: str, *, slot: datetime = SLOT, run: bool = True
) -> records.Claim:
    return records.Claim(
        job=job,
        slot=slot,
        slot_id=slots.slot_id(job, slot),
        holder=holder,
        ttl=TTL,
        scheduled_time=slot + timedelta(seconds=2),
        purpose=records.ScheduledSlot() if run else records.CountedMissed(),
    )


@pytest.fixture
async def streams(redis_server: LocalRedis) -> AsyncIterator[queue_stream.StreamClaims]:
    opened = queue_stream.StreamClaims.from_url(redis_server.url)
    yield opened
    await opened.close()


@pytest.fixture
async def raw(redis_server: LocalRedis) -> AsyncIterator["redis.asyncio.Redis"]:
    client = redis.asyncio.Redis.from_url(redis_server.url, decode_responses=True)
    yield client
    await client.aclose()


class TestASlotDueBeforeTheServerStarted:
    async def test_is_won_without_its_entry(
        self, streams: queue_stream.StreamClaims, raw: "redis.asyncio.Redis"
    ) -> None:
        """Its entry may have been added by the server that was lost: never added again."""
        job, stream = a_job(), a_stream()
        lock = streams.lock_for(stream=stream, payload=None, max_len=1000)
        before_the_start = datetime(2020, 1, 1, tzinfo=UTC)

        with pytest.raises(protocols.LockForgotError, match="not enqueued"):
            await lock.claim(claim(job, "r1:1", slot=before_the_start))

        assert await raw.xlen(stream) == 0
        assert not await lock.claim(claim(job, "r2:1", slot=before_the_start))


class TestClaimAndEnqueue:
    async def test_a_claim_appends_the_slots_entry(
        self, streams: queue_stream.StreamClaims, raw: "redis.asyncio.Redis"
    ) -> None:
        job, stream = a_job(), a_stream()
        lock = streams.lock_for(stream=stream, payload={"kind": "nightly"}, max_len=1000)

        assert await lock.claim(claim(job, "r1:1"))

        [(entry_id, fields)] = await raw.xrange(stream)
        slot_id = slots.slot_id(job, SLOT)
        assert fields == {
            "job": "reports/nightly",
            "namespace": "reports",
            "slot": slot_id,
            "scheduledTime": "2036-11-30T01:30:02Z",
            "idempotencyKey": slot_id,
            "payload": '{"kind":"nightly"}',
        }
        assert lock.take_entry(slot_id) == entry_id
        assert lock.take_entry(slot_id) is None  # reported once
        assert await raw.get(slot_keys.slot_key(slot_id)) == "r1:1"
        assert 0 < await raw.pttl(slot_keys.slot_key(slot_id)) <= TTL / timedelta(milliseconds=1)

    async def test_each_append_sets_the_streams_idle_expiry(
        self, streams: queue_stream.StreamClaims, raw: "redis.asyncio.Redis"
    ) -> None:
        job, stream = a_job(), a_stream()
        lock = streams.lock_for(stream=stream, payload=None, max_len=1000)
        await lock.claim(claim(job, "r1:1"))
        await raw.persist(stream)

        await lock.claim(claim(job, "r1:2", slot=SLOT + timedelta(minutes=1)))

        week = queue_stream.DEFAULT_IDLE_EXPIRY / timedelta(milliseconds=1)
        assert week - 60_000 < await raw.pttl(stream) <= week

    async def test_a_zero_idle_expiry_leaves_the_stream_without_one(
        self, redis_server: LocalRedis, raw: "redis.asyncio.Redis"
    ) -> None:
        job, stream = a_job(), a_stream()
        never = queue_stream.StreamClaims(
            connections.connect(redis_server.url), idle_expiry=timedelta()
        )
        try:
            lock = never.lock_for(stream=stream, payload=None, max_len=1000)
            assert await lock.claim(claim(job, "r1:1"))
        finally:
            await never.close()

        assert await raw.pttl(stream) == -1  # no expiry

    async def test_claiming_twice_enqueues_once(
        self, streams: queue_stream.StreamClaims, raw: "redis.asyncio.Redis"
    ) -> None:
        job, stream = a_job(), a_stream()
        lock = streams.lock_for(stream=stream, payload=None, max_len=1000)

        first = await lock.claim(claim(job, "r1:1"))
        second = await lock.claim(claim(job, "r2:1"))

        assert (first, second) == (True, False)
        assert await raw.xlen(stream) == 1

    async def test_twenty_replicas_racing_enqueue_once(
        self, redis_server: LocalRedis, raw: "redis.asyncio.Redis"
    ) -> None:
        job, stream = a_job(), a_stream()
        replicas = [queue_stream.StreamClaims.from_url(redis_server.url) for _ in range(20)]
        try:
            locks = [r.lock_for(stream=stream, payload=None, max_len=1000) for r in replicas]
            won = await asyncio.gather(
                *(lock.claim(claim(job, f"r{i}:1")) for i, lock in enumerate(locks))
            )
        finally:
            await asyncio.gather(*(r.close() for r in replicas))

        assert sum(won) == 1
        assert await raw.xlen(stream) == 1

    async def test_each_slot_gets_its_own_entry(
        self, streams: queue_stream.StreamClaims, raw: "redis.asyncio.Redis"
    ) -> None:
        job, stream = a_job(), a_stream()
        lock = streams.lock_for(stream=stream, payload=None, max_len=1000)

        for minute in range(3):
            assert await lock.claim(claim(job, "r1:1", slot=SLOT + timedelta(minutes=minute)))

        entries = await raw.xrange(stream)
        assert [fields["scheduledTime"] for _, fields in entries] == [
            "2036-11-30T01:30:02Z",
            "2036-11-30T01:31:02Z",
            "2036-11-30T01:32:02Z",
        ]

    async def test_max_len_trims_the_stream_approximately(
        self, streams: queue_stream.StreamClaims, raw: "redis.asyncio.Redis"
    ) -> None:
        job, stream = a_job(), a_stream()
        lock = streams.lock_for(stream=stream, payload=None, max_len=10)

        for second in range(500):
            await lock.claim(claim(job, "r1:1", slot=SLOT + timedelta(seconds=second)))

        # MAXLEN ~ trims whole macro nodes (100 entries by default): about 10, never 500.
        assert 10 <= await raw.xlen(stream) <= 110

    async def test_a_missed_slot_is_claimed_but_never_enqueued(
        self, streams: queue_stream.StreamClaims, raw: "redis.asyncio.Redis"
    ) -> None:
        job, stream = a_job(), a_stream()
        lock = streams.lock_for(stream=stream, payload=None, max_len=1000)

        assert await lock.claim(claim(job, "r1:1", run=False))
        assert not await lock.claim(claim(job, "r2:1"))

        assert await raw.exists(stream) == 0

    async def test_it_survives_a_flushed_script_cache(
        self, streams: queue_stream.StreamClaims, raw: "redis.asyncio.Redis"
    ) -> None:
        job, stream = a_job(), a_stream()
        lock = streams.lock_for(stream=stream, payload=None, max_len=1000)
        await lock.claim(claim(job, "r1:1"))

        await raw.script_flush()  # as after a Redis restart: EVALSHA answers NOSCRIPT

        assert await lock.claim(claim(job, "r1:2", slot=SLOT + timedelta(minutes=1)))
        assert await raw.xlen(stream) == 2


class TestNeverClaimedWithoutItsEntry:
    async def test_a_key_of_another_type_refuses_the_claim_and_leaves_the_slot_free(
        self, streams: queue_stream.StreamClaims, raw: "redis.asyncio.Redis"
    ) -> None:
        job, stream = a_job(), a_stream()
        await raw.set(stream, "not a stream")
        lock = streams.lock_for(stream=stream, payload=None, max_len=1000)

        with pytest.raises(protocols.LockUnavailableError, match="holds a string, not a stream"):
            await lock.claim(claim(job, "r1:1"))

        assert await raw.exists(slot_keys.slot_key(slots.slot_id(job, SLOT))) == 0

    async def test_a_failing_append_releases_the_slot(
        self, streams: queue_stream.StreamClaims, raw: "redis.asyncio.Redis"
    ) -> None:
        job, stream = a_job(), a_stream()
        lock = streams.lock_for(stream=stream, payload=None, max_len=1000)
        # An entry id far in the future: XADD's auto id must be greater, so Redis refuses it
        # ("The ID specified in XADD is equal or smaller than the target stream top item").
        await raw.xadd(stream, {"x": "1"}, id="18446744073709551615-18446744073709551615")

        with pytest.raises(protocols.LockUnavailableError, match="XADD failed, slot released"):
            await lock.claim(claim(job, "r1:1"))

        assert await raw.exists(slot_keys.slot_key(slots.slot_id(job, SLOT))) == 0
        assert await raw.xlen(stream) == 1

    async def test_an_unreachable_redis_fails_closed(self) -> None:
        from localcluster import ports  # noqa: PLC0415 (only here)

        dead = queue_stream.StreamClaims.from_url(f"redis://127.0.0.1:{ports.free_port()}/0")
        lock = dead.lock_for(stream=a_stream(), payload=None, max_len=1000)
        try:
            with pytest.raises(protocols.LockUnavailableError, match="not claimed"):
                await lock.claim(claim(a_job(), "r1:1"))
        finally:
            await dead.close()


def test_the_payload_is_json() -> None:
    assert json.loads(queue_stream.payload_json({"b": 1, "a": "ü"})) == {"a": "ü", "b": 1}
