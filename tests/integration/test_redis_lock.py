"""The Redis slot lock against a real redis-server: one owner per slot, expiry, passwords,
failing closed, and bursts of claims."""

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis.asyncio

from localcluster import LocalRedis, ports
from punctual.contracts import protocols, records
from punctual.locks import redis as redis_lock
from punctual.redis_io import slot_keys
from punctual.scheduling import slots

SLOT = datetime(2036, 11, 30, 1, 30, tzinfo=UTC)
"""After the session's Redis started: a slot due before, it could not prove unclaimed."""
TTL = timedelta(minutes=2)
PASSWORD = "c0rrect-h0rse:b@ttery/staple"
"""Characters that need percent-encoding in a URL, to exercise the decoding as well."""
FAIL_FAST = 2.0
"""Seconds within which a dead Redis must answer "unavailable"."""


def a_job() -> slots.JobRef:
    # A fresh uid per test: the session's Redis is shared, and keys are never cleaned up.
    return slots.JobRef(namespace="reports", name="nightly", uid=str(uuid.uuid4()))


def claim(
    job: slots.JobRef, holder: str, *, slot: datetime = SLOT, ttl: timedelta = TTL
) -> records.Claim:
    return records.Claim(
        job=job, slot=slot, slot_id=slots.slot_id(job, slot), holder=holder, ttl=ttl
    )


@pytest.fixture
async def lock(redis_server: LocalRedis) -> AsyncIterator[redis_lock.RedisLock]:
    opened = redis_lock.RedisLock.from_url(redis_server.url)
    yield opened
    await opened.close()


@pytest.fixture
async def raw(redis_server: LocalRedis) -> AsyncIterator["redis.asyncio.Redis"]:
    """A plain client, to look at the keys the lock writes."""
    client = redis.asyncio.Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


@pytest.fixture(scope="module")
def password_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedis]:
    with LocalRedis(password=PASSWORD, run_dir=tmp_path_factory.mktemp("redis-auth")) as server:
        yield server


@pytest.fixture
def doomed_server(tmp_path: Path) -> Iterator[LocalRedis]:
    """A server of the test's own, which the test stops."""
    with LocalRedis(run_dir=tmp_path / "redis") as server:
        yield server


class TestASlotIsClaimedOnce:
    async def test_the_first_claim_wins(self, lock: redis_lock.RedisLock) -> None:
        assert await lock.claim(claim(a_job(), "replica-a:1"))

    async def test_a_second_claim_by_another_holder_loses(self, lock: redis_lock.RedisLock) -> None:
        job = a_job()
        await lock.claim(claim(job, "replica-a:1"))

        assert not await lock.claim(claim(job, "replica-b:7"))

    async def test_a_claim_through_another_client_loses_too(
        self, lock: redis_lock.RedisLock, redis_server: LocalRedis
    ) -> None:
        job = a_job()
        other_replica = redis_lock.RedisLock.from_url(redis_server.url)
        try:
            assert await other_replica.claim(claim(job, "replica-b:1"))
            assert not await lock.claim(claim(job, "replica-a:1"))
        finally:
            await other_replica.close()

    async def test_the_key_is_the_slot_and_holds_the_holder(
        self, lock: redis_lock.RedisLock, raw: "redis.asyncio.Redis"
    ) -> None:
        job = a_job()
        await lock.claim(claim(job, "replica-a:1"))

        key = f"punctual:slot:reports/nightly/{job.uid}/{2_111_621_400_000}"
        assert await raw.get(key) == b"replica-a:1"
        assert 0 < await raw.pttl(key) <= TTL // timedelta(milliseconds=1)

    async def test_of_many_replicas_claiming_at_once_exactly_one_wins(
        self, lock: redis_lock.RedisLock
    ) -> None:
        job = a_job()

        won = await asyncio.gather(
            *(lock.claim(claim(job, f"replica-{index}:1")) for index in range(200))
        )

        assert won.count(True) == 1


class TestSlotsAreIndependent:
    async def test_the_next_slot_of_a_job_is_its_own(self, lock: redis_lock.RedisLock) -> None:
        job = a_job()
        await lock.claim(claim(job, "replica-a:1"))

        assert await lock.claim(claim(job, "replica-b:1", slot=SLOT + timedelta(minutes=1)))

    async def test_the_same_instant_of_another_job_is_its_own(
        self, lock: redis_lock.RedisLock
    ) -> None:
        await lock.claim(claim(a_job(), "replica-a:1"))

        assert await lock.claim(claim(a_job(), "replica-b:1"))

    async def test_a_re_created_namesake_has_its_own_slots(
        self, lock: redis_lock.RedisLock
    ) -> None:
        job = a_job()
        recreated = slots.JobRef(namespace=job.namespace, name=job.name, uid=str(uuid.uuid4()))
        await lock.claim(claim(job, "replica-a:1"))

        assert await lock.claim(claim(recreated, "replica-a:2"))


class TestAClaimExpiresAfterItsTtl:
    async def test_after_the_ttl_the_slot_can_be_claimed_again(
        self, lock: redis_lock.RedisLock, raw: "redis.asyncio.Redis"
    ) -> None:
        job = a_job()
        ttl = timedelta(milliseconds=200)
        assert await lock.claim(claim(job, "replica-a:1", ttl=ttl))
        assert not await lock.claim(claim(job, "replica-b:1", ttl=ttl))

        key = slot_keys.slot_key(slots.slot_id(job, SLOT))
        deadline = time.monotonic() + 5
        while await raw.exists(key):
            assert time.monotonic() < deadline, "the key outlived its TTL"
            await asyncio.sleep(0.05)

        assert await lock.claim(claim(job, "replica-b:1", ttl=ttl))

    async def test_a_sub_millisecond_ttl_still_expires(
        self, lock: redis_lock.RedisLock, raw: "redis.asyncio.Redis"
    ) -> None:
        job = a_job()

        assert await lock.claim(claim(job, "replica-a:1", ttl=timedelta(microseconds=10)))

        assert await raw.pttl(slot_keys.slot_key(slots.slot_id(job, SLOT))) <= 1


class TestAPasswordProtectedServer:
    async def test_claims_work_with_the_password_in_the_url(
        self, password_server: LocalRedis
    ) -> None:
        assert "%" in password_server.url  # the password is percent-encoded in the URL
        lock = redis_lock.RedisLock.from_url(password_server.url)
        try:
            assert await lock.claim(claim(a_job(), "replica-a:1"))
            await lock.ping()
        finally:
            await lock.close()

    async def test_a_wrong_password_fails_closed_without_showing_it(
        self, password_server: LocalRedis
    ) -> None:
        wrong = "wr0ng-passw0rd"
        lock = redis_lock.RedisLock.from_url(f"redis://:{wrong}@127.0.0.1:{password_server.port}/0")
        try:
            with pytest.raises(
                protocols.LockUnavailableError, match="AuthenticationError"
            ) as raised:
                await lock.claim(claim(a_job(), "replica-a:1"))
        finally:
            await lock.close()

        assert wrong not in str(raised.value)
        assert "redis://:***@127.0.0.1" in str(raised.value)

    async def test_no_password_fails_closed(self, password_server: LocalRedis) -> None:
        lock = redis_lock.RedisLock.from_url(f"redis://127.0.0.1:{password_server.port}/0")
        try:
            with pytest.raises(protocols.LockUnavailableError):
                await lock.claim(claim(a_job(), "replica-a:1"))
        finally:
            await lock.close()


class TestADeadServerFailsClosedQuickly:
    async def test_a_stopped_server_is_unavailable_within_two_seconds(
        self, doomed_server: LocalRedis
    ) -> None:
        lock = redis_lock.RedisLock.from_url(doomed_server.url)
        try:
            assert await lock.claim(claim(a_job(), "replica-a:1"))  # a pooled connection now
            doomed_server.stop()

            started = time.monotonic()
            with pytest.raises(protocols.LockUnavailableError, match="not claimed"):
                await lock.claim(claim(a_job(), "replica-a:2"))
            assert time.monotonic() - started < FAIL_FAST
        finally:
            await lock.close()

    async def test_a_server_that_never_was_is_unavailable_within_two_seconds(self) -> None:
        lock = redis_lock.RedisLock.from_url(f"redis://127.0.0.1:{ports.free_port()}/0")
        try:
            started = time.monotonic()
            with pytest.raises(protocols.LockUnavailableError):
                await lock.claim(claim(a_job(), "replica-a:1"))
            assert time.monotonic() - started < FAIL_FAST
            with pytest.raises(protocols.LockUnavailableError):
                await lock.ping()
        finally:
            await lock.close()


class TestABurstOfClaimsWaitsForConnections:
    async def test_five_thousand_concurrent_claims_all_get_an_answer(
        self, redis_server: LocalRedis
    ) -> None:
        # Far more claims than connections: they queue in the pool instead of failing.
        lock = redis_lock.RedisLock.from_url(redis_server.url, max_connections=16)
        job = a_job()
        try:
            won = await asyncio.gather(
                *(
                    lock.claim(claim(job, "replica-a:1", slot=SLOT + index * timedelta(seconds=1)))
                    for index in range(5_000)
                )
            )
        finally:
            await lock.close()

        assert won == [True] * 5_000

    async def test_five_thousand_claims_of_one_slot_have_one_winner(
        self, redis_server: LocalRedis
    ) -> None:
        lock = redis_lock.RedisLock.from_url(redis_server.url, max_connections=16)
        job = a_job()
        try:
            won = await asyncio.gather(
                *(lock.claim(claim(job, f"replica-{index}:1")) for index in range(5_000))
            )
        finally:
            await lock.close()

        assert won.count(True) == 1


class TestASlotDueBeforeTheServerStartedIsNotProvable:
    """A Redis that restarted without its data may have held a claim of any slot due before it
    started: such a claim is won only to be counted missed, once (``redis_io.lock_memory``).
    The server tells its age in whole seconds: its start is taken as the whole second after the
    one it started in."""

    @pytest.mark.parametrize(
        ("after_the_second_it_started_in", "provable"),
        [
            (timedelta(hours=-1), False),
            (timedelta(), False),
            (timedelta(milliseconds=999), False),
            (timedelta(seconds=1), True),
            (timedelta(days=1), True),
        ],
    )
    async def test_only_slots_from_the_latest_instant_it_may_have_started_are(
        self,
        lock: redis_lock.RedisLock,
        raw: "redis.asyncio.Redis",
        after_the_second_it_started_in: timedelta,
        provable: bool,
    ) -> None:
        job = a_job()
        started_in = datetime.fromtimestamp(await _the_second_the_server_started_in(raw), UTC)
        slot = started_in + after_the_second_it_started_in

        if provable:
            assert await lock.claim(claim(job, "replica-a:1", slot=slot))
        else:
            with pytest.raises(protocols.LockForgotError, match="before the server started"):
                await lock.claim(claim(job, "replica-a:1", slot=slot))
        # Either way the key is held: another replica neither runs nor counts the slot again.
        assert not await lock.claim(claim(job, "replica-b:1", slot=slot))


async def _the_second_the_server_started_in(raw: "redis.asyncio.Redis") -> int:
    """Read in one script, as the claim's does: its clock and its age on the same tick."""
    script = """
    local uptime = string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)')
    return tonumber(redis.call('TIME')[1]) - tonumber(uptime)
    """
    return int(await raw.eval(script, 0))
