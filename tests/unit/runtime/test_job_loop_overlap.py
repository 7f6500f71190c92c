"""Overlapping slots: a run takes 2.5 periods; the concurrency policy decides, never silently.

An ``every: 10s`` job is armed at 00:00:05; its runs take 25 s. The slot at 00:00:10 starts a run
that lasts until 00:00:35, while the slots at 00:00:20 and 00:00:30 come due.
"""

from datetime import datetime

import pytest
from runtime_doubles import (
    JOB,
    LOOPTIME,
    SECOND,
    TOLERANCE,
    FakeWall,
    Target,
    at,
    ats,
    every,
    results,
)

from punctual.contracts.records import RunResult
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling.overlap import ConcurrencyPolicy
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

PERIOD = 10 * SECOND
MILLISECOND = SECOND / 1000
SUCCEEDED, FAILED, CANCELLED = RunResult.SUCCEEDED, RunResult.FAILED, RunResult.CANCELLED
SKIPPED = RunResult.SKIPPED_OVERLAP


@pytest.fixture
def base() -> datetime:
    return at(5)


@pytest.fixture
def target(wall: FakeWall) -> Target:
    return Target(wall, duration=25 * SECOND)


def arm(supervisor: Supervisor, target: Target, policy: ConcurrencyPolicy, **plan: int) -> None:
    supervisor.arm(JOB, every(PERIOD, concurrency=policy, **plan), target, resume_after=at(5))


class TestForbid:
    async def test_skips_the_slots_that_come_due_while_a_run_is_active(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, target: Target
    ) -> None:
        arm(supervisor, target, ConcurrencyPolicy.FORBID)
        await wall.sleep_until(at(45))

        assert target.slots == ats(10, 40)
        assert results(store.jobs[JOB].finished) == [
            (at(20), SKIPPED),
            (at(30), SKIPPED),
            (at(10), SUCCEEDED),
        ]

    async def test_records_the_skip_with_its_reason(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, target: Target
    ) -> None:
        arm(supervisor, target, ConcurrencyPolicy.FORBID)
        await wall.sleep_until(at(25))

        [skipped] = store.jobs[JOB].finished
        assert skipped.slot == skipped.scheduled_time == at(20)
        assert skipped.started_at is None
        assert skipped.replica == "replica-a"
        assert skipped.message == "1 run(s) active, concurrencyPolicy Forbid"

    async def test_a_run_that_ended_by_the_next_slot_does_not_count_as_active(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        # Each run takes exactly one period: it is over when the next slot fires.
        target = Target(wall, duration=PERIOD)
        arm(supervisor, target, ConcurrencyPolicy.FORBID)
        await wall.sleep_until(at(45))

        assert target.slots == ats(10, 20, 30, 40)
        assert SKIPPED not in store.jobs[JOB].results()


class TestAllow:
    async def test_runs_every_slot_alongside_the_active_ones(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, target: Target
    ) -> None:
        arm(supervisor, target, ConcurrencyPolicy.ALLOW)
        await wall.sleep_until(at(44))

        assert target.slots == ats(10, 20, 30, 40)
        assert target.most_running == 3
        for began, slot in zip(target.started, target.slots, strict=True):
            assert abs(began - slot) <= TOLERANCE
        assert supervisor.active_slots(JOB) == ats(20, 30, 40)
        assert results(store.jobs[JOB].finished) == [(at(10), SUCCEEDED)]


class TestTheCapOnRunsInFlight:
    """``every: 20ms`` under Allow, a target that never answers: without a cap, every slot was
    one more run held (2,228 after 45 s, memory growing by the second)."""

    async def test_runs_in_flight_stay_at_the_cap_and_every_slot_past_it_is_counted(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, hang=True)
        plan = every(20 * MILLISECOND, concurrency=ConcurrencyPolicy.ALLOW, max_runs_in_flight=10)
        supervisor.arm(JOB, plan, target, resume_after=at(5))
        await wall.sleep_until(at(15))

        assert target.running == target.most_running == 10
        assert len(supervisor.active_slots(JOB)) == 10
        skipped = store.jobs[JOB].finished
        assert {record.result for record in skipped} == {RunResult.SKIPPED_IN_FLIGHT_LIMIT}
        assert len(target.contexts) == 10
        assert len(skipped) >= 10 * 50 - 10 - 1  # every slot of 10 s but the ten running
        assert skipped[0].message == "10 run(s) active, the most the operator allows one job"
        assert skipped[0].started_at is None

    async def test_a_run_that_ends_makes_room_for_the_next_slot(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, target: Target
    ) -> None:
        # Runs of 25 s every 10 s: three at once under Allow, two with a cap of two.
        arm(supervisor, target, ConcurrencyPolicy.ALLOW, max_runs_in_flight=2)
        await wall.sleep_until(at(44))

        assert target.slots == ats(10, 20, 40)
        assert target.most_running == 2
        assert results(store.jobs[JOB].finished) == [
            (at(30), RunResult.SKIPPED_IN_FLIGHT_LIMIT),
            (at(10), SUCCEEDED),
        ]


class TestReplace:
    async def test_cancels_the_active_run_and_records_it_cancelled_as_replaced(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, target: Target
    ) -> None:
        arm(supervisor, target, ConcurrencyPolicy.REPLACE)
        await wall.sleep_until(at(25))

        [replaced] = store.jobs[JOB].finished
        assert replaced.slot == at(10)
        assert replaced.result == CANCELLED
        assert replaced.message.startswith("cancelled: replaced")
        assert abs(replaced.finished_at - at(20)) <= TOLERANCE  # type: ignore[operator]

    async def test_starts_the_new_slot_on_time(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, target: Target
    ) -> None:
        arm(supervisor, target, ConcurrencyPolicy.REPLACE)
        await wall.sleep_until(at(45))

        assert target.slots == ats(10, 20, 30, 40)
        for began, slot in zip(target.started, target.slots, strict=True):
            assert abs(began - slot) <= TOLERANCE
        assert supervisor.active_slots(JOB) == ats(40)
        assert results(store.jobs[JOB].finished) == [
            (at(10), CANCELLED),
            (at(20), CANCELLED),
            (at(30), CANCELLED),
        ]

    async def test_lets_a_run_that_fits_its_period_finish(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=4 * SECOND)
        arm(supervisor, target, ConcurrencyPolicy.REPLACE)
        await wall.sleep_until(at(35))

        assert results(store.jobs[JOB].finished) == [
            (at(10), SUCCEEDED),
            (at(20), SUCCEEDED),
            (at(30), SUCCEEDED),
        ]


class TestQueue:
    async def test_starts_one_waiting_slot_when_the_active_run_ends(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, target: Target
    ) -> None:
        arm(supervisor, target, ConcurrencyPolicy.QUEUE, max_queued=1)
        await wall.sleep_until(at(36))

        assert target.slots == ats(10, 20)
        queued = store.jobs[JOB].started[1]
        assert queued.slot == queued.scheduled_time == at(20)
        assert abs(queued.started_at - at(35)) <= TOLERANCE

    async def test_skips_the_slots_beyond_max_queued(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, target: Target
    ) -> None:
        arm(supervisor, target, ConcurrencyPolicy.QUEUE, max_queued=1)
        await wall.sleep_until(at(36))

        assert results(store.jobs[JOB].finished) == [(at(30), SKIPPED), (at(10), SUCCEEDED)]

    async def test_keeps_queueing_and_skipping_as_runs_end(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, target: Target
    ) -> None:
        arm(supervisor, target, ConcurrencyPolicy.QUEUE, max_queued=1)
        await wall.sleep_until(at(59))

        assert target.slots == ats(10, 20)  # 00:00:40 waits for 00:00:20, which ends at 01:00
        assert results(store.jobs[JOB].finished) == [
            (at(30), SKIPPED),
            (at(10), SUCCEEDED),
            (at(50), SKIPPED),
        ]

        await wall.sleep_until(at(61))
        assert target.slots == ats(10, 20, 40)
        assert abs(target.started[-1] - at(60)) <= TOLERANCE
        assert target.most_running == 1

    async def test_a_queued_slot_survives_re_arming(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, target: Target
    ) -> None:
        arm(supervisor, target, ConcurrencyPolicy.QUEUE, max_queued=1)
        await wall.sleep_until(at(25))  # 00:00:10 runs, 00:00:20 is claimed and waits

        # A spec change: the reconciler re-arms from now; runs in flight survive it.
        plan = every(PERIOD, concurrency=ConcurrencyPolicy.QUEUE, max_queued=1)
        supervisor.arm(JOB, plan, target, resume_after=wall())
        await wall.sleep_until(at(36))

        accounted = target.slots + [record.slot for record in store.jobs[JOB].finished]
        assert at(20) in accounted, "the claimed, queued slot 00:00:20 vanished without a trace"

    async def test_a_queued_slot_is_accounted_for_when_the_job_is_disarmed(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, target: Target
    ) -> None:
        arm(supervisor, target, ConcurrencyPolicy.QUEUE, max_queued=1)
        await wall.sleep_until(at(25))  # 00:00:10 runs, 00:00:20 is claimed and waits

        await supervisor.disarm(JOB)

        history = store.jobs[JOB]
        assert [record.slot for record in history.finished] == [at(10)]  # cancelled, recorded
        # The claimed, queued slot will not run here: it is counted missed, not lost silently.
        assert (history.missed, history.newest_missed) == (1, at(20))
