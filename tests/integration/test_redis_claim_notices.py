"""Claim notices against a real redis-server: an owner's won claim tells its backup in the same
round trip, a lost one tells nobody; each replica hears only its own installation's channel;
hostile messages are refused and counted; the script survives a flush, the channel a restart."""

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis.asyncio

from localcluster import LocalRedis
from punctual.contracts import protocols, records
from punctual.locks import redis as redis_lock
from punctual.redis_io import claim_notices
from punctual.scheduling import slots

SLOT = datetime(2036, 12, 1, 16, 0, tzinfo=UTC)
"""After the session's Redis started: a slot due before, it could not prove unclaimed."""
TTL = timedelta(minutes=2)
HEARD_WITHIN = 2.0
"""Seconds to wait for something to be heard (it takes milliseconds)."""


@dataclass
class Heard:
    """``protocols.ClaimNotices`` that remembers what came."""

    notices: list[records.ClaimNotice] = field(default_factory=list)
    malformed_count: int = 0

    def claimed(self, notice: records.ClaimNotice) -> bool:
        self.notices.append(notice)
        return True

    def malformed(self) -> None:
        self.malformed_count += 1

    async def wait_for(self, count: int, *, malformed: int = 0) -> None:
        deadline = time.monotonic() + HEARD_WITHIN
        while len(self.notices) < count or self.malformed_count < malformed:
            assert time.monotonic() < deadline, f"heard {self.notices}, {self.malformed_count}"
            await asyncio.sleep(0.01)


def a_scope() -> str:
    # A scope per test: the session's Redis is shared.
    return claim_notices.scope(namespace=f"ns-{uuid.uuid4().hex[:8]}", group="all-namespaces")


def claim(job: slots.JobRef, holder: str, *, backup: str | None) -> records.Claim:
    return records.Claim(
        job=job,
        slot=SLOT,
        slot_id=slots.slot_id(job, SLOT),
        holder=holder,
        ttl=TTL,
        backup=backup,
    )


def a_job() -> slots.JobRef:
    return slots.JobRef(namespace="reports", name="nightly", uid=str(uuid.uuid4()))


@dataclass
class Listening:
    lock: redis_lock.RedisLock
    heard: Heard
    task: "asyncio.Task[None]"


async def listening(url: str, scope: str, member: str) -> Listening:
    lock = redis_lock.RedisLock.from_url(url, scope=scope)
    heard = Heard()
    task = asyncio.create_task(lock.hear(member, heard))
    channel = claim_notices.channel(scope, member)
    probe = redis.asyncio.Redis.from_url(url)
    try:  # subscribed once Redis counts a subscriber on the channel
        deadline = time.monotonic() + HEARD_WITHIN
        while (await probe.pubsub_numsub(channel))[0][1] < 1:
            assert time.monotonic() < deadline, "never subscribed"
            await asyncio.sleep(0.01)
    finally:
        await probe.aclose()
    return Listening(lock, heard, task)


async def stop(listener: Listening) -> None:
    listener.task.cancel()
    await asyncio.gather(listener.task, return_exceptions=True)
    await listener.lock.close()


@pytest.fixture
async def scope() -> str:
    return a_scope()


@pytest.fixture
async def owner(redis_server: LocalRedis, scope: str) -> AsyncIterator[redis_lock.RedisLock]:
    lock = redis_lock.RedisLock.from_url(redis_server.url, scope=scope)
    yield lock
    await lock.close()


@pytest.fixture
async def backup(redis_server: LocalRedis, scope: str) -> AsyncIterator[Listening]:
    listener = await listening(redis_server.url, scope, "r2")
    yield listener
    await stop(listener)


class TestAnOwnersClaimTellsItsBackup:
    async def test_a_won_claim_tells_the_member_it_names(
        self, owner: redis_lock.RedisLock, backup: Listening
    ) -> None:
        job = a_job()

        assert isinstance(owner, protocols.TellsBackups)
        assert await owner.claim(claim(job, "r1:1", backup="r2"))
        await backup.heard.wait_for(1)
        assert backup.heard.notices == [records.ClaimNotice(uid=job.uid, slot=SLOT)]

    async def test_a_lost_claim_tells_nobody(
        self, owner: redis_lock.RedisLock, backup: Listening
    ) -> None:
        job, other = a_job(), a_job()
        assert await backup.lock.claim(claim(job, "r2:1", backup=None))
        assert not await owner.claim(claim(job, "r1:1", backup="r2"))
        assert await owner.claim(claim(other, "r1:2", backup="r2"))  # a marker after it

        await backup.heard.wait_for(1)
        assert backup.heard.notices == [records.ClaimNotice(uid=other.uid, slot=SLOT)]

    async def test_it_still_claims_once_the_script_is_flushed(
        self, owner: redis_lock.RedisLock, backup: Listening, redis_server: LocalRedis
    ) -> None:
        client = redis.asyncio.Redis.from_url(redis_server.url)
        await client.script_flush()
        await client.aclose()
        job = a_job()

        assert await owner.claim(claim(job, "r1:1", backup="r2"))
        assert not await owner.claim(claim(job, "r1:2", backup="r2"))
        await backup.heard.wait_for(1)
        assert backup.heard.notices == [records.ClaimNotice(uid=job.uid, slot=SLOT)]


class TestAReplicaHearsOnlyItsOwnChannel:
    async def test_not_another_members(
        self, owner: redis_lock.RedisLock, backup: Listening, redis_server: LocalRedis, scope: str
    ) -> None:
        third = await listening(redis_server.url, scope, "r3")
        try:
            job = a_job()
            assert await owner.claim(claim(job, "r1:1", backup="r3"))
            await third.heard.wait_for(1)
        finally:
            await stop(third)

        assert backup.heard.notices == []

    async def test_not_another_installations(
        self, backup: Listening, redis_server: LocalRedis
    ) -> None:
        elsewhere = redis_lock.RedisLock.from_url(redis_server.url, scope=a_scope())
        try:
            assert await elsewhere.claim(claim(a_job(), "r1:1", backup="r2"))
        finally:
            await elsewhere.close()
        await asyncio.sleep(0.2)

        assert backup.heard.notices == []


class TestHostileMessagesAreRefused:
    async def test_each_is_counted_and_the_next_notice_still_heard(
        self,
        owner: redis_lock.RedisLock,
        backup: Listening,
        redis_server: LocalRedis,
        scope: str,
    ) -> None:
        client = redis.asyncio.Redis.from_url(redis_server.url)
        channel = claim_notices.channel(scope, "r2")
        hostile = [b"", b"\x00" * 100, b"x" * 1_000_000, b"uid 1 2", b"uid 99999999999999999999"]
        for message in hostile:
            await client.publish(channel, message)
        await client.aclose()
        job = a_job()
        assert await owner.claim(claim(job, "r1:1", backup="r2"))

        await backup.heard.wait_for(1, malformed=len(hostile))
        assert backup.heard.notices == [records.ClaimNotice(uid=job.uid, slot=SLOT)]


class TestTheChannelOutlivesARedisRestart:
    async def test_it_listens_again_once_redis_is_back(self, tmp_path: Path, scope: str) -> None:
        with LocalRedis(run_dir=tmp_path / "redis") as server:
            listener = await listening(server.url, scope, "r2")
            owner = redis_lock.RedisLock.from_url(server.url, scope=scope)
            try:
                server.stop_server()
                await asyncio.sleep(redis_lock.HEAR_AGAIN_AFTER)  # the channel is gone
                server.start_server()
                claimed = set()
                deadline = time.monotonic() + 10
                while not listener.heard.notices:  # claims of fresh slots until it hears one
                    assert time.monotonic() < deadline, "never heard again"
                    job = a_job()
                    try:
                        if await owner.claim(claim(job, "r1:1", backup="r2")):
                            claimed.add(job.uid)
                    except protocols.LockUnavailableError:
                        pass
                    await asyncio.sleep(0.2)
                assert {notice.uid for notice in listener.heard.notices} <= claimed
            finally:
                await owner.close()
                await stop(listener)
