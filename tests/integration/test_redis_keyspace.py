"""The operator's Redis shared with tenants, against a real redis-server: a namespace's consumer
user (the ACL line of docs/queue-messages.md, run as written) reads its own stream and nothing of
the operator's or of another namespace; and a Redis out of memory under ``noeviction`` refuses
claims, as unavailable, until it has room again: nothing is claimed, nothing enqueued."""

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
import redis.asyncio
import redis.exceptions

from localcluster import LocalRedis
from punctual.contracts import protocols, records
from punctual.locks import health
from punctual.locks import redis as redis_lock
from punctual.redis_io import namespace_keys, slot_keys
from punctual.scheduling import slots
from punctual.targets.queue import stream as queue_stream

DOCS = Path(__file__).resolve().parents[2] / "docs" / "queue-messages.md"
SLOT = datetime(2036, 11, 30, 1, 30, tzinfo=UTC)
"""After the session's Redis started: a slot due before, it could not prove unclaimed."""
TTL = timedelta(minutes=2)
PASSWORD = "consumer-password"
RECOVERY_TIMEOUT = 10.0


def a_job(namespace: str) -> slots.JobRef:
    return slots.JobRef(namespace=namespace, name="nightly", uid=str(uuid.uuid4()))


def claim_of(job: slots.JobRef, *, slot: datetime = SLOT) -> records.Claim:
    return records.Claim(
        job=job, slot=slot, slot_id=slots.slot_id(job, slot), holder="replica-a:1", ttl=TTL
    )


def consumer_acl(namespace: str) -> list[str]:
    """The documented ``ACL SETUSER`` line for ``namespace``, as arguments."""
    [line] = re.findall(r"^ACL SETUSER .*$", DOCS.read_text(), flags=re.MULTILINE)
    filled = line.replace("<namespace>", namespace).replace("<password>", PASSWORD)
    return filled.split()[1:]


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[LocalRedis]:
    """A server of the test's own: its memory limit is changed."""
    with LocalRedis(run_dir=tmp_path / "redis") as server:
        yield server


@pytest.fixture
async def raw(redis_server: LocalRedis) -> AsyncIterator["redis.asyncio.Redis"]:
    client = redis.asyncio.Redis.from_url(redis_server.url, decode_responses=True)
    yield client
    await client.aclose()


async def enqueue(url: str, job: slots.JobRef, stream: str) -> str:
    """One slot of ``job`` claimed and appended to its namespace's ``stream``, as the operator
    does; the key."""
    key = namespace_keys.stream_key(namespace=job.namespace, stream=stream)
    streams = queue_stream.StreamClaims.from_url(url)
    try:
        lock = streams.lock_for(stream=key, payload={"kind": "nightly"}, max_len=100)
        assert await lock.claim(claim_of(job))
    finally:
        await streams.close()
    return key


class TestANamespacesConsumerUser:
    async def test_reads_its_own_stream_and_nothing_else(
        self, redis_server: LocalRedis, raw: "redis.asyncio.Redis"
    ) -> None:
        mine, theirs = f"ns-{uuid.uuid4().hex[:8]}", f"ns-{uuid.uuid4().hex[:8]}"
        own_key = await enqueue(redis_server.url, a_job(mine), "jobs")
        their_job = a_job(theirs)
        their_key = await enqueue(redis_server.url, their_job, "jobs")
        user = f"consumer-{mine}"
        await raw.execute_command("ACL", *consumer_acl(mine))
        consumer = redis.Redis(
            host=redis_server.host,
            port=redis_server.port,
            username=user,
            password=PASSWORD,
            decode_responses=True,
        )
        try:
            consumer.xgroup_create(own_key, "workers", id="0", mkstream=True)
            [(_, entries)] = consumer.xreadgroup("workers", "w1", {own_key: ">"}, count=10)
            assert [fields["namespace"] for _, fields in entries] == [mine]
            consumer.xack(own_key, "workers", entries[0][0])
            done = f"{namespace_keys.namespace_prefix(mine)}done:workers:jobs"
            consumer.sadd(done, entries[0][1]["idempotencyKey"])

            their_slot = slot_keys.slot_key(claim_of(their_job).slot_id)
            for forbidden in (
                lambda: consumer.xrange(their_key),
                lambda: consumer.get(their_slot),
                lambda: consumer.set(their_slot, "forged"),
                lambda: consumer.xadd(own_key, {"forged": "1"}),
                lambda: consumer.scan(match="punctual:slot:*"),
                lambda: consumer.publish("punctual:claims:x", "forged"),
                consumer.flushall,
            ):
                with pytest.raises(redis.exceptions.NoPermissionError):
                    forbidden()
        finally:
            consumer.close()
            await raw.execute_command("ACL", "DELUSER", user)
        assert await raw.get(their_slot) == "replica-a:1"


class TestARedisOutOfMemory:
    async def test_refuses_claims_as_unavailable_and_nothing_is_claimed_or_enqueued(
        self, own_redis: LocalRedis
    ) -> None:
        raw = redis.asyncio.Redis.from_url(own_redis.url, decode_responses=True)
        lock = redis_lock.RedisLock.from_url(own_redis.url)
        tracked = health.HealthTrackingLock(
            lock, backend="redis", probe_every=timedelta(milliseconds=100)
        )
        answers_again = asyncio.Event()
        tracked.subscribe(lambda available, _: answers_again.set() if available else None)
        watch = asyncio.create_task(tracked.watch())
        streams = queue_stream.StreamClaims.from_url(own_redis.url)
        job = a_job("reports")
        key = namespace_keys.stream_key(namespace="reports", stream="jobs")
        try:
            assert await raw.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
            await raw.config_set("maxmemory", "1")

            with pytest.raises(protocols.LockUnavailableError, match=r"OutOfMemoryError|OOM"):
                await tracked.claim(claim_of(job))
            with pytest.raises(protocols.LockUnavailableError, match=r"OutOfMemoryError|OOM"):
                await streams.lock_for(stream=key, payload=None, max_len=10).claim(
                    claim_of(job, slot=SLOT + timedelta(minutes=1))
                )
            assert not tracked.available
            assert "OutOfMemoryError" in tracked.message
            # PING still answers; the health probe writes, and is refused too.
            assert await raw.ping()
            with pytest.raises(protocols.LockUnavailableError, match=r"OutOfMemoryError|OOM"):
                await lock.ping()
            assert await raw.exists(slot_keys.slot_key(claim_of(job).slot_id)) == 0
            assert await raw.exists(key) == 0

            await raw.config_set("maxmemory", "0")
            async with asyncio.timeout(RECOVERY_TIMEOUT):
                await answers_again.wait()  # the probe found room again
            assert await tracked.claim(claim_of(job))
        finally:
            watch.cancel()
            await streams.close()
            await lock.close()
            await raw.aclose()
