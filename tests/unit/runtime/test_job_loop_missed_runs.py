"""Missed slots: armed behind, the missed-run policy decides what runs; the rest is counted.

Every test arms an ``every: 10s`` job at 00:00:05 with ``resume_after`` at 23:59:35, so three
slots are overdue: 23:59:40, 23:59:50 and 00:00:00 (``at(-20)``, ``at(-10)``, ``at(0)``).
"""

import asyncio
from datetime import datetime, timedelta

import pytest
from runtime_doubles import (
    JOB,
    LOOPTIME,
    SECOND,
    TOLERANCE,
    FakeWall,
    GrantingLock,
    Target,
    at,
    ats,
    every,
)

from punctual.contracts import protocols, records
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling.missed import MissedRunPolicy
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

PERIOD = 10 * SECOND
SKIP, RUN_ONCE, CATCH_UP = MissedRunPolicy.SKIP, MissedRunPolicy.RUN_ONCE, MissedRunPolicy.CATCH_UP


@pytest.fixture
def base() -> datetime:
    return at(5)


def started_slots(store: MemoryStore) -> list[datetime]:
    return [run.slot for run in store.jobs[JOB].started]


class TestThreeOverdueSlots:
    async def test_skip_runs_none_and_counts_three_missed(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        supervisor.arm(JOB, every(PERIOD, policy=SKIP), Target(wall), resume_after=at(-25))
        await wall.sleep_until(at(7))

        assert started_slots(store) == []
        assert store.jobs[JOB].missed == 3
        assert store.jobs[JOB].newest_missed == at(0)

    async def test_skip_resumes_at_the_next_future_slot(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        supervisor.arm(JOB, every(PERIOD, policy=SKIP), Target(wall), resume_after=at(-25))
        await wall.sleep_until(at(25))

        assert started_slots(store) == ats(10, 20)
        assert store.jobs[JOB].missed == 3

    async def test_run_once_runs_the_newest_now_and_counts_two_missed(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        supervisor.arm(JOB, every(PERIOD, policy=RUN_ONCE), Target(wall), resume_after=at(-25))
        await wall.sleep_until(at(7))

        [run] = store.jobs[JOB].started
        assert run.slot == at(0)
        assert abs(run.started_at - at(5)) <= TOLERANCE
        assert store.jobs[JOB].missed == 2

    async def test_catch_up_runs_the_newest_max_catch_up_in_order_and_counts_the_rest(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = every(PERIOD, policy=CATCH_UP, max_catch_up=2)
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(-25))
        await wall.sleep_until(at(7))

        assert started_slots(store) == ats(-10, 0)
        assert store.jobs[JOB].missed == 1

    async def test_catch_up_under_its_cap_runs_them_all(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = every(PERIOD, policy=CATCH_UP, max_catch_up=10)
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(-25))
        await wall.sleep_until(at(7))

        assert started_slots(store) == ats(-20, -10, 0)
        assert store.jobs[JOB].missed == 0

    async def test_catch_up_runs_one_after_another(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = Target(wall, duration=2 * SECOND)
        plan = every(PERIOD, policy=CATCH_UP, max_catch_up=3)
        supervisor.arm(JOB, plan, target, resume_after=at(-25))
        await wall.sleep_until(at(9.5))

        assert target.slots == ats(-20, -10, 0)
        assert target.most_running == 1
        for began, expected in zip(target.started, ats(5, 7, 9), strict=True):
            assert abs(began - expected) <= TOLERANCE

    async def test_catch_up_then_keeps_the_schedule(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = every(PERIOD, policy=CATCH_UP, max_catch_up=2)
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(-25))
        await wall.sleep_until(at(35))

        history = store.jobs[JOB]
        assert started_slots(store) == ats(-10, 0, 10, 20, 30)
        for run in history.started[2:]:
            assert abs(run.started_at - run.slot) <= TOLERANCE


class TestStartingDeadline:
    async def test_slots_older_than_the_deadline_are_missed_not_run(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = every(PERIOD, policy=CATCH_UP, starting_deadline=20 * SECOND)
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(-25))
        await wall.sleep_until(at(7))

        assert started_slots(store) == ats(-10, 0)  # 15 s and 5 s late; 23:59:40 is 25 s late
        assert store.jobs[JOB].missed == 1

    async def test_run_once_runs_nothing_when_even_the_newest_is_too_old(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = every(PERIOD, policy=RUN_ONCE, starting_deadline=3 * SECOND)
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(-25))
        await wall.sleep_until(at(7))

        assert started_slots(store) == []
        assert store.jobs[JOB].missed == 3

    async def test_a_slot_the_loop_wakes_up_for_too_late_is_missed(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = every(timedelta(hours=1), starting_deadline=10 * SECOND)
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(5))
        await wall.sleep_until(at(3594.5))

        wall.jump(30 * SECOND)  # the loop wakes up about 25 s after the 01:00 slot
        await wall.sleep(5 * SECOND)

        assert started_slots(store) == []
        assert store.jobs[JOB].missed == 1
        assert store.jobs[JOB].newest_missed == at(3600)


class TestSuspendedThrough:
    """Slots up to it passed while the job was suspended: counted so, never missed."""

    async def test_counts_the_slots_up_to_it_as_suspended_and_never_runs_them(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = every(PERIOD, policy=CATCH_UP, max_catch_up=100)
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(-55), suspended_through=at(5))
        await wall.sleep_until(at(25))

        assert store.jobs[JOB].missed_by_reason == {records.MissedReason.SUSPENDED: 6}  # 23:59:10 …
        assert store.jobs[JOB].missed == 0
        assert started_slots(store) == ats(10, 20)

    async def test_slots_after_it_follow_the_policy(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = every(PERIOD, policy=CATCH_UP, max_catch_up=100)
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(-55), suspended_through=at(-15))
        await wall.sleep_until(at(7))

        assert store.jobs[JOB].missed_by_reason == {records.MissedReason.SUSPENDED: 4}  # 23:59:10 …
        assert store.jobs[JOB].missed == 0
        assert started_slots(store) == ats(-10, 0)


class TestReArming:
    async def test_a_new_plan_never_fires_a_slot_at_or_before_resume_after(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        supervisor.arm(JOB, every(PERIOD, policy=CATCH_UP), Target(wall), resume_after=at(5))
        await wall.sleep_until(at(27))
        assert started_slots(store) == ats(10, 20)

        faster = every(5 * SECOND, policy=CATCH_UP)
        supervisor.arm(JOB, faster, Target(wall), resume_after=at(20))
        await wall.sleep_until(at(37))

        assert started_slots(store) == ats(10, 20, 25, 30, 35)

    async def test_a_slot_exactly_at_resume_after_is_not_run(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        supervisor.arm(JOB, every(PERIOD, policy=CATCH_UP), Target(wall), resume_after=at(0))
        await wall.sleep_until(at(15))

        assert started_slots(store) == ats(10)
        assert store.jobs[JOB].missed == 0

    async def test_resume_after_in_the_future_runs_nothing_until_after_it(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        supervisor.arm(JOB, every(PERIOD, policy=CATCH_UP), Target(wall), resume_after=at(5))
        await wall.sleep_until(at(17))

        supervisor.arm(JOB, every(PERIOD, policy=CATCH_UP), Target(wall), resume_after=at(60))
        await wall.sleep_until(at(75))

        assert started_slots(store) == ats(10, 70)
        assert store.jobs[JOB].missed == 0

    async def test_re_arming_again_and_again_runs_each_slot_once(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = every(PERIOD, policy=CATCH_UP)
        last = at(5)
        supervisor.arm(JOB, plan, Target(wall), resume_after=last)
        for moment in (12, 12, 19.5, 21, 33, 40, 40.5, 58):
            await wall.sleep_until(at(moment))
            ran = started_slots(store)
            last = ran[-1] if ran else last
            supervisor.arm(JOB, plan, Target(wall), resume_after=last)
        await wall.sleep_until(at(65))

        assert started_slots(store) == ats(10, 20, 30, 40, 50, 60)


class TestReplicasThatFallBehindAtDifferentTimes:
    """Two replicas share one lock; each stalls (stops scheduling, then picks up again from
    the last slot it dealt with) at its own times. Every slot is run or counted, once."""

    @pytest.fixture
    def base(self) -> datetime:
        return at(-5)

    async def test_each_slot_given_up_is_counted_by_one_replica(
        self, supervisor: Supervisor, wall: FakeWall, lock: protocols.SlotLock, store: MemoryStore
    ) -> None:
        other_store = MemoryStore()
        other = Supervisor(wall=wall, lock=lock, store=other_store, replica="replica-b")
        plan, target = every(PERIOD, policy=RUN_ONCE), Target(wall)
        try:
            for replica in (supervisor, other):
                replica.arm(JOB, plan, target, resume_after=at(-5))
            await wall.sleep_until(at(5))  # both ran slot 0 (one of them did)
            stalled = {replica: replica.suspend(JOB) for replica in (supervisor, other)}
            await wall.sleep_until(at(35))  # replica a is back: 30 runs, 10 and 20 given up
            supervisor.arm(JOB, plan, target, resume_after=stalled[supervisor] or at(-5))
            await wall.sleep_until(at(38))
            stalled[supervisor] = supervisor.suspend(JOB)
            await wall.sleep_until(at(65))  # replica b is back, from slot 0: 60 runs
            other.arm(JOB, plan, target, resume_after=stalled[other] or at(-5))
            await wall.sleep_until(at(68))  # replica a is back, from slot 30
            supervisor.arm(JOB, plan, target, resume_after=stalled[supervisor] or at(-5))
            await wall.sleep_until(at(69))
        finally:
            await other.shutdown()

        assert sorted(target.slots) == ats(0, 30, 60)
        assert store.jobs[JOB].missed + other_store.jobs[JOB].missed == 4  # 10, 20, 40, 50


class StuckLock(GrantingLock):
    """Never answers for the given slots (a claim on the wire when the loop stops)."""

    def __init__(self, wall: FakeWall, *, stuck: set[datetime]) -> None:
        super().__init__(wall)
        self.stuck = stuck

    async def claim(self, claim: records.Claim) -> bool:
        if claim.slot in self.stuck:
            await asyncio.Event().wait()
        return await super().claim(claim)


class TestCountingWhileTheLoopStops:
    async def test_the_slots_already_won_are_counted_and_the_unanswered_are_not(
        self, wall: FakeWall, store: MemoryStore
    ) -> None:
        lock = StuckLock(wall, stuck={at(-10)})
        replica = Supervisor(wall=wall, lock=lock, store=store, replica="replica-a")
        replica.arm(JOB, every(PERIOD, policy=SKIP), Target(wall), resume_after=at(-25))
        await wall.sleep_until(at(6))  # -20 and 0 are won; -10 never answers

        await replica.shutdown()

        assert store.jobs[JOB].missed == 2
        assert store.jobs[JOB].newest_missed == at(0)
