"""The Redis slot lock over TLS (``rediss://``) with AUTH, against a real redis-server that
serves TLS only, with a throwaway CA."""

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from localcluster import LocalRedis, certs
from punctual.contracts import protocols, records
from punctual.locks import redis as redis_lock
from punctual.scheduling import slots

PASSWORD = "tls-and-auth"
WRONG_PASSWORD = "n0t-the-passw0rd"
SLOT = datetime(2036, 11, 30, 1, 30, tzinfo=UTC)
"""After the session's Redis started: a slot due before, it could not prove unclaimed."""


def a_claim(holder: str) -> records.Claim:
    job = slots.JobRef(namespace="reports", name="nightly", uid=str(uuid.uuid4()))
    return records.Claim(
        job=job,
        slot=SLOT,
        slot_id=slots.slot_id(job, SLOT),
        holder=holder,
        ttl=timedelta(minutes=1),
    )


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedis]:
    run_dir = tmp_path_factory.mktemp("redis-tls")
    with LocalRedis(password=PASSWORD, tls=True, run_dir=run_dir) as server:
        yield server


class TestATlsRedisWithAPassword:
    async def test_claims_once_over_rediss(self, tls_server: LocalRedis) -> None:
        assert tls_server.url.startswith("rediss://")
        lock = redis_lock.RedisLock.from_url(tls_server.url)
        try:
            claim = a_claim("replica-a:1")
            assert await lock.claim(claim)
            assert not await lock.claim(a_claim_for(claim, holder="replica-b:1"))
        finally:
            await lock.close()

    async def test_refuses_plain_text_so_the_claim_fails_closed(
        self, tls_server: LocalRedis
    ) -> None:
        plain = tls_server.url.replace("rediss://", "redis://").split("?")[0]
        lock = redis_lock.RedisLock.from_url(plain)
        try:
            with pytest.raises(protocols.LockUnavailableError) as caught:
                await lock.claim(a_claim("replica-a:1"))
        finally:
            await lock.close()
        assert PASSWORD not in str(caught.value)

    async def test_refuses_a_server_signed_by_another_ca(
        self, tls_server: LocalRedis, tmp_path: Path
    ) -> None:
        stranger = certs.generate(tmp_path / "other-pki")
        url = tls_server.url.replace(str(tls_server.ca_file), str(stranger.ca_cert))
        lock = redis_lock.RedisLock.from_url(url)
        try:
            with pytest.raises(protocols.LockUnavailableError):
                await lock.claim(a_claim("replica-a:1"))
        finally:
            await lock.close()

    async def test_refuses_a_wrong_password(self, tls_server: LocalRedis) -> None:
        lock = redis_lock.RedisLock.from_url(tls_server.url.replace(PASSWORD, WRONG_PASSWORD))
        try:
            with pytest.raises(protocols.LockUnavailableError) as caught:
                await lock.claim(a_claim("replica-a:1"))
        finally:
            await lock.close()
        assert WRONG_PASSWORD not in str(caught.value)


def a_claim_for(claim: records.Claim, *, holder: str) -> records.Claim:
    """The same slot, claimed by someone else."""
    return records.Claim(
        job=claim.job, slot=claim.slot, slot_id=claim.slot_id, holder=holder, ttl=claim.ttl
    )
