"""Run now: a run asked for by hand (``punctual.dev/run-now``) is claimed under its token's slot
id, run now with the job's plan (its concurrency policy and timeout), and recorded like any run,
carrying its token; it is no slot of the schedule."""

from datetime import timedelta

import pytest
from runtime_doubles import JOB, LOOPTIME, SECOND, FakeWall, GrantingLock, Target, every

from punctual.contracts import protocols, records
from punctual.contracts.records import RunResult
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import slots
from punctual.scheduling.overlap import ConcurrencyPolicy
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

HOUR = 3600 * SECOND
MILLISECOND = timedelta(milliseconds=1)


@pytest.fixture
def lock(wall: FakeWall) -> protocols.SlotLock:
    return GrantingLock(wall)


class TestRunNow:
    async def test_it_runs_now_under_the_token_s_slot_id_and_records_the_token(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=SECOND)
        supervisor.arm(JOB, every(HOUR), target, resume_after=wall())

        assert supervisor.run_now(JOB, "abc")
        await wall.sleep_until(wall() + 2 * SECOND)

        [context] = target.contexts
        assert context.slot_id == slots.run_now_slot_id(JOB, "abc")
        assert context.token == "abc"
        assert context.scheduled_time == context.slot
        [record] = store.jobs[JOB].finished
        assert (record.result, record.token, record.trigger) == (
            RunResult.SUCCEEDED,
            "abc",
            "Manual",
        )

    async def test_its_claim_carries_the_token_and_another_replica_s_win_runs_nothing(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, lock: GrantingLock
    ) -> None:
        lock.answer = lambda claim: not isinstance(claim.purpose, records.RunNow)  # type: ignore[method-assign]
        target = Target(wall)
        supervisor.arm(JOB, every(HOUR), target, resume_after=wall())

        supervisor.run_now(JOB, "abc")
        await wall.sleep_until(wall() + SECOND)

        assert target.contexts == []
        assert not store.jobs[JOB].finished

    async def test_the_concurrency_policy_applies_to_it(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=10 * SECOND)
        plan = every(HOUR, concurrency=ConcurrencyPolicy.FORBID)
        supervisor.arm(JOB, plan, target, resume_after=wall())

        supervisor.run_now(JOB, "first")
        await wall.sleep_until(wall() + SECOND)
        supervisor.run_now(JOB, "second")
        await wall.sleep_until(wall() + 20 * SECOND)

        assert [context.token for context in target.contexts] == ["first"]
        found = {record.token: record.result for record in store.jobs[JOB].finished}
        assert found == {"first": RunResult.SUCCEEDED, "second": RunResult.SKIPPED_OVERLAP}

    async def test_a_job_not_armed_here_runs_nothing(self, supervisor: Supervisor) -> None:
        assert not supervisor.run_now(JOB, "abc")


async def test_two_asked_within_a_millisecond_are_told_apart_by_their_slots(
    supervisor: Supervisor, wall: FakeWall
) -> None:
    target = Target(wall, duration=SECOND)
    supervisor.arm(
        JOB, every(HOUR, concurrency=ConcurrencyPolicy.ALLOW), target, resume_after=wall()
    )

    supervisor.run_now(JOB, "first")
    supervisor.run_now(JOB, "second")
    await wall.sleep_until(wall() + 3 * SECOND)

    first, second = sorted(context.slot for context in target.contexts)
    assert second - first == MILLISECOND
