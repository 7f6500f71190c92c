"""The metered lock: every claim is counted as won, lost, forgot or error, by backend."""

from datetime import UTC, datetime, timedelta

import prometheus_client
import pytest

from punctual import metrics
from punctual.contracts import protocols, records
from punctual.locks import memory, metered
from punctual.scheduling import slots

JOB = slots.JobRef(namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-00000000abcd")
SLOT = datetime(2026, 1, 1, 2, 30, tzinfo=UTC)


def claim(holder: str, *, slot: datetime = SLOT) -> records.Claim:
    return records.Claim(
        job=JOB,
        slot=slot,
        slot_id=slots.slot_id(JOB, slot),
        holder=holder,
        ttl=timedelta(minutes=2),
    )


class UnavailableLock:
    async def claim(self, claim: records.Claim) -> bool:
        raise protocols.LockUnavailableError(f"redis: slot {claim.slot_id} not claimed: refused")


class ForgetfulLock:
    async def claim(self, claim: records.Claim) -> bool:
        raise protocols.LockForgotError(f"redis: slot {claim.slot_id} was due before the start")


def claims(registry: prometheus_client.CollectorRegistry, backend: str, outcome: str) -> float:
    value = registry.get_sample_value(
        "punctual_lock_claims_total", {"backend": backend, "outcome": outcome}
    )
    assert value is not None, f"no series for {backend}/{outcome}"
    return value


class TestClaimsAreCountedByOutcome:
    async def test_a_won_and_a_lost_claim(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        lock = metered.MeteredLock(memory.MemoryLock(), meters=meters, backend="memory")

        assert await lock.claim(claim("replica-a:1"))
        assert not await lock.claim(claim("replica-b:1"))

        assert claims(registry, "memory", "won") == 1.0
        assert claims(registry, "memory", "lost") == 1.0
        assert claims(registry, "memory", "error") == 0.0

    async def test_an_unavailable_backend_is_an_error_and_still_raises(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        lock = metered.MeteredLock(UnavailableLock(), meters=meters, backend="redis")

        with pytest.raises(protocols.LockUnavailableError):
            await lock.claim(claim("replica-a:1"))

        assert claims(registry, "redis", "error") == 1.0
        assert claims(registry, "redis", "won") == 0.0

    async def test_a_slot_the_backend_forgot_is_counted_apart_and_still_raises(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        lock = metered.MeteredLock(ForgetfulLock(), meters=meters, backend="redis")

        with pytest.raises(protocols.LockForgotError):
            await lock.claim(claim("replica-a:1"))

        assert claims(registry, "redis", "forgot") == 1.0
        assert claims(registry, "redis", "error") == 0.0

    def test_every_outcome_reads_zero_from_the_start(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        metered.MeteredLock(memory.MemoryLock(), meters=meters, backend="kubernetes")

        for outcome in metrics.CLAIM_OUTCOMES:
            assert claims(registry, "kubernetes", outcome) == 0.0

    async def test_backends_are_counted_apart(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        first = metered.MeteredLock(memory.MemoryLock(), meters=meters, backend="memory")
        metered.MeteredLock(memory.MemoryLock(), meters=meters, backend="redis")

        await first.claim(claim("replica-a:1"))

        assert claims(registry, "memory", "won") == 1.0
        assert claims(registry, "redis", "won") == 0.0
