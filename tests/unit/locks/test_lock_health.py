"""The lock health tracker tells its listeners once when the backend stops answering, once when
it answers again (at a claim, or by its own ping while down), and passes every outcome through."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import protocols, records
from punctual.locks.health import HealthTrackingLock
from punctual.scheduling import slots

JOB = slots.JobRef(namespace="ns", name="job", uid="uid-1")
SLOT = datetime(2026, 1, 1, tzinfo=UTC)
CLAIM = records.Claim(
    job=JOB, slot=SLOT, slot_id=slots.slot_id(JOB, SLOT), holder="r1:1", ttl=timedelta(minutes=1)
)
DOWN = protocols.LockUnavailableError("redis://:***@127.0.0.1:6379/0: slot not claimed: refused")


class ScriptedLock:
    """Answers claims (True, False) or raises, in order; ``ping`` fails while ``down``."""

    def __init__(self, *answers: bool | Exception) -> None:
        self.answers = list(answers)
        self.down = False
        self.pings = 0

    async def claim(self, claim: records.Claim) -> bool:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def ping(self) -> None:
        self.pings += 1
        if self.down:
            raise DOWN


class UnpingableLock:
    async def claim(self, claim: records.Claim) -> bool:
        return True


def tracked(inner: object) -> tuple[HealthTrackingLock, list[tuple[bool, str]]]:
    lock = HealthTrackingLock(inner, backend="redis", probe_every=timedelta(milliseconds=5))  # type: ignore[arg-type]
    changes: list[tuple[bool, str]] = []
    lock.subscribe(lambda available, message: changes.append((available, message)))
    return lock, changes


async def test_claims_pass_through_and_a_lost_claim_is_an_answer() -> None:
    lock, changes = tracked(ScriptedLock(True, False))

    assert [await lock.claim(CLAIM), await lock.claim(CLAIM)] == [True, False]
    assert lock.available
    assert changes == []


async def test_the_first_unanswered_claim_reports_unavailable_once_with_the_reason() -> None:
    lock, changes = tracked(ScriptedLock(DOWN, DOWN))

    for _ in range(2):
        with pytest.raises(protocols.LockUnavailableError):
            await lock.claim(CLAIM)

    assert not lock.available
    assert len(changes) == 1
    available, message = changes[0]
    assert not available
    assert "redis lock backend does not answer" in message
    assert "refused" in message


async def test_the_next_answered_claim_reports_available_again() -> None:
    lock, changes = tracked(ScriptedLock(DOWN, False))
    with pytest.raises(protocols.LockUnavailableError):
        await lock.claim(CLAIM)

    await lock.claim(CLAIM)

    assert lock.available
    assert lock.message == ""
    assert [available for available, _ in changes] == [False, True]


async def test_while_down_the_watch_pings_until_the_backend_answers() -> None:
    inner = ScriptedLock(DOWN)
    inner.down = True
    lock, changes = tracked(inner)
    watching = asyncio.create_task(lock.watch())
    try:
        with pytest.raises(protocols.LockUnavailableError):
            await lock.claim(CLAIM)
        await asyncio.sleep(0.05)
        assert not lock.available
        assert inner.pings >= 2

        inner.down = False
        await asyncio.sleep(0.05)
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)

    assert lock.available
    assert [available for available, _ in changes] == [False, True]


async def test_a_backend_that_cannot_be_pinged_is_not_watched() -> None:
    lock, _ = tracked(UnpingableLock())

    await asyncio.wait_for(lock.watch(), timeout=1)


async def test_a_failing_listener_does_not_hide_the_change_from_the_others() -> None:
    lock = HealthTrackingLock(ScriptedLock(DOWN), backend="redis")  # type: ignore[arg-type]
    changes: list[bool] = []

    def broken(available: bool, message: str) -> None:
        raise RuntimeError("a listener bug")

    lock.subscribe(broken)
    lock.subscribe(lambda available, _: changes.append(available))

    with pytest.raises(protocols.LockUnavailableError):
        await lock.claim(CLAIM)

    assert changes == [False]
