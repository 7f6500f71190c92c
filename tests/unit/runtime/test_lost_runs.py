"""Lost runs: a run's lease is held under the run's own slot id as a step of the run, and the
replica that takes a lost run's lease over records it Lost and (``retryLostRuns``) runs the same
run once more: a run asked for by hand keeps its token, its Idempotency-Key and its trigger."""

import dataclasses
from collections.abc import AsyncIterator

import pytest
from runtime_doubles import JOB, LOOPTIME, SECOND, FakeWall, Target, every

from punctual.contracts import records
from punctual.contracts.records import RunResult, Trigger
from punctual.locks.memory import MemoryLock
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import plans, slots
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

HOUR = 3600 * SECOND


class RecordedLeases:
    """``protocols.HoldsRuns`` that keeps the leases held and the slot ids released, in order."""

    def __init__(self, *, fail_with: Exception | None = None) -> None:
        self.held: list[records.Lease] = []
        self.released: list[str] = []
        self._fail_with = fail_with

    def hold(self, lease: records.Lease) -> None:
        if self._fail_with is not None:
            raise self._fail_with
        self.held.append(lease)

    def release(self, slot_id: str) -> None:
        self.released.append(slot_id)


def retrying(plan: plans.JobPlan) -> plans.JobPlan:
    return dataclasses.replace(plan, retry_lost_runs=True)


@pytest.fixture
async def replica_b(wall: FakeWall) -> AsyncIterator[tuple[Supervisor, RecordedLeases]]:
    """Another replica, whose runs' leases are recorded: the one that dies in these tests."""
    leases = RecordedLeases()
    replica = Supervisor(
        wall=wall, lock=MemoryLock(), store=MemoryStore(), replica="replica-b", leases=leases
    )
    yield replica, leases
    await replica.shutdown(hand_over=True)


class TestALeaseIsAStepOfItsRun:
    async def test_a_run_holds_its_lease_under_its_slot_id_and_releases_it_once_recorded(
        self, wall: FakeWall
    ) -> None:
        leases = RecordedLeases()
        supervisor = Supervisor(
            wall=wall, lock=MemoryLock(), store=MemoryStore(), replica="r1", leases=leases
        )
        supervisor.arm(JOB, every(HOUR), Target(wall, duration=SECOND), resume_after=wall())

        supervisor.run_now(JOB, "abc")
        await wall.sleep_until(wall() + 3 * SECOND)
        await supervisor.shutdown()

        [lease] = leases.held
        assert (lease.slot_id, lease.replica, lease.attempt) == (
            slots.run_now_slot_id(JOB, "abc"),
            "r1",
            1,
        )
        assert leases.released == [lease.slot_id]

    async def test_a_run_whose_lease_cannot_be_held_does_not_start_and_is_recorded_failed(
        self, wall: FakeWall
    ) -> None:
        store = MemoryStore()
        target = Target(wall)
        supervisor = Supervisor(
            wall=wall,
            lock=MemoryLock(),
            store=store,
            replica="r1",
            leases=RecordedLeases(fail_with=RuntimeError("no room")),
        )
        supervisor.arm(JOB, every(HOUR), target, resume_after=wall())

        supervisor.run_now(JOB, "abc")
        await wall.sleep_until(wall() + SECOND)
        await supervisor.shutdown()

        assert target.contexts == []
        [record] = store.jobs[JOB].finished
        assert record.result == RunResult.FAILED
        assert "its lease could not be held: RuntimeError: no room" in record.message


class TestALostRunIsRetriedAsTheSameRun:
    async def test_a_run_asked_for_by_hand_keeps_its_token_key_and_trigger(
        self,
        supervisor: Supervisor,
        wall: FakeWall,
        store: MemoryStore,
        replica_b: tuple[Supervisor, RecordedLeases],
    ) -> None:
        dying, leases = replica_b
        plan = retrying(every(HOUR))
        dying.arm(JOB, plan, Target(wall, hang=True), resume_after=wall())
        dying.run_now(JOB, "abc")
        await wall.sleep_until(wall() + SECOND)
        [lease] = leases.held  # replica-b dies here: its lease expires, replica-a takes it
        target = Target(wall, duration=SECOND)
        supervisor.arm(JOB, plan, target, resume_after=wall())

        await supervisor.lost(lease)
        await wall.sleep_until(wall() + 3 * SECOND)

        [context] = target.contexts
        assert (context.slot_id, context.token) == (slots.run_now_slot_id(JOB, "abc"), "abc")
        lost, retried = store.jobs[JOB].finished
        assert (lost.result, lost.token, lost.trigger, lost.attempt) == (
            RunResult.LOST,
            "abc",
            Trigger.MANUAL,
            1,
        )
        assert (retried.result, retried.token, retried.trigger, retried.attempt) == (
            RunResult.SUCCEEDED,
            "abc",
            Trigger.MANUAL,
            2,
        )

    async def test_a_slot_of_the_schedule_keeps_its_slot_id(
        self,
        supervisor: Supervisor,
        wall: FakeWall,
        store: MemoryStore,
        replica_b: tuple[Supervisor, RecordedLeases],
    ) -> None:
        dying, leases = replica_b
        plan = retrying(every(10 * SECOND))
        dying.arm(JOB, plan, Target(wall, hang=True), resume_after=wall())
        await wall.sleep_until(wall() + 11 * SECOND)
        [lease, *_] = leases.held
        target = Target(wall, duration=SECOND)
        supervisor.arm(JOB, plan, target, resume_after=wall())

        await supervisor.lost(lease)
        await wall.sleep_until(wall() + 2 * SECOND)

        [context] = target.contexts
        assert context.slot_id == lease.slot_id == slots.slot_id(JOB, lease.slot)
        lost, retried = store.jobs[JOB].finished
        assert (lost.result, lost.trigger) == (RunResult.LOST, Trigger.SCHEDULED)
        assert (retried.result, retried.attempt, retried.trigger) == (
            RunResult.SUCCEEDED,
            2,
            Trigger.SCHEDULED,
        )
