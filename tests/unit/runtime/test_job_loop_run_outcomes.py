"""What a run's end is recorded as, and that no run's end stops the schedule.

An ``every: 10s`` job is armed at 00:00:05: its slots are 00:00:10, 00:00:20, ...
"""

from datetime import datetime, timedelta

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

from punctual.contracts.records import Outcome, RunContext, RunResult
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import interval, merged, plans, slots
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

PERIOD = 10 * SECOND
SUCCEEDED, FAILED, TIMED_OUT = RunResult.SUCCEEDED, RunResult.FAILED, RunResult.TIMED_OUT


@pytest.fixture
def base() -> datetime:
    return at(5)


def arm(supervisor: Supervisor, target: Target, *, timeout: timedelta = 10 * 60 * SECOND) -> None:
    supervisor.arm(JOB, every(PERIOD, timeout=timeout), target, resume_after=at(5))


class TestASucceedingRun:
    async def test_is_recorded_with_its_message_start_and_end(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=3 * SECOND, outcome=Outcome(True, "HTTP 204"))
        arm(supervisor, target)
        await wall.sleep_until(at(15))

        [record] = store.jobs[JOB].finished
        assert record.result == SUCCEEDED
        assert record.message == "HTTP 204"
        assert record.replica == "replica-a"
        assert abs(record.lateness) <= TOLERANCE  # type: ignore[arg-type]
        assert abs(record.duration - 3 * SECOND) <= TOLERANCE  # type: ignore[operator]

    async def test_is_told_its_slot_its_id_and_its_timeout(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = Target(wall)
        arm(supervisor, target, timeout=7 * SECOND)
        await wall.sleep_until(at(15))

        [context] = target.contexts
        assert context == RunContext(
            job=JOB,
            slot=at(10),
            slot_id=f"reports/nightly/{JOB.uid}/1767225610000",
            scheduled_time=at(10),
            timeout=7 * SECOND,
        )
        assert context.slot_id == slots.slot_id(JOB, at(10))

    async def test_is_reported_started_while_it_runs(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        arm(supervisor, Target(wall, duration=3 * SECOND))
        await wall.sleep_until(at(11))

        [run] = store.jobs[JOB].started
        assert run.slot == run.scheduled_time == at(10)
        assert abs(run.started_at - at(10)) <= TOLERANCE
        assert store.jobs[JOB].finished == []
        assert supervisor.active_slots(JOB) == ats(10)


class TestAFailingRun:
    async def test_an_unsuccessful_outcome_is_recorded_failed_with_its_message(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        arm(supervisor, Target(wall, outcome=Outcome(False, "HTTP 503")))
        await wall.sleep_until(at(15))

        [record] = store.jobs[JOB].finished
        assert (record.result, record.message) == (FAILED, "HTTP 503")

    async def test_an_exception_is_recorded_failed_with_its_message(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=SECOND, fail_with=RuntimeError("database is down"))
        arm(supervisor, target)
        await wall.sleep_until(at(15))

        [record] = store.jobs[JOB].finished
        assert (record.result, record.message) == (FAILED, "RuntimeError: database is down")

    async def test_an_exception_without_a_message_is_recorded_by_its_type(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        arm(supervisor, Target(wall, fail_with=KeyError()))
        await wall.sleep_until(at(15))

        [record] = store.jobs[JOB].finished
        assert (record.result, record.message) == (FAILED, "KeyError")

    async def test_an_exception_leaves_the_loop_running(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=SECOND, fail_with=RuntimeError("database is down"))
        arm(supervisor, target)
        await wall.sleep_until(at(45))

        assert target.slots == ats(10, 20, 30, 40)
        assert results(store.jobs[JOB].finished) == [
            (at(10), FAILED),
            (at(20), FAILED),
            (at(30), FAILED),
            (at(40), FAILED),
        ]
        assert JOB in supervisor.armed


class TestATimeout:
    async def test_a_hung_run_is_cut_at_its_timeout_and_recorded_timed_out(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, hang=True)
        arm(supervisor, target, timeout=3 * SECOND)
        await wall.sleep_until(at(15))

        [record] = store.jobs[JOB].finished
        assert record.result == TIMED_OUT
        assert record.message == "cancelled at its timeout of 3s"
        assert abs(record.finished_at - at(13)) <= TOLERANCE  # type: ignore[operator]
        assert target.running == 0
        assert supervisor.active_slots(JOB) == []

    async def test_a_hung_run_does_not_hold_up_the_next_slots(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, hang=True)
        arm(supervisor, target, timeout=3 * SECOND)
        await wall.sleep_until(at(35))

        assert target.slots == ats(10, 20, 30)
        assert results(store.jobs[JOB].finished) == [
            (at(10), TIMED_OUT),
            (at(20), TIMED_OUT),
            (at(30), TIMED_OUT),
        ]

    async def test_a_timeout_error_raised_by_the_executor_itself_is_a_failure(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=SECOND, fail_with=TimeoutError("upstream timed out"))
        arm(supervisor, target, timeout=3 * SECOND)
        await wall.sleep_until(at(15))

        [record] = store.jobs[JOB].finished
        assert (record.result, record.message) == (FAILED, "TimeoutError: upstream timed out")

    async def test_a_run_that_ends_just_within_its_timeout_succeeds(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        arm(supervisor, Target(wall, duration=2.999 * SECOND), timeout=3 * SECOND)
        await wall.sleep_until(at(15))

        [record] = store.jobs[JOB].finished
        assert record.result == SUCCEEDED


class TestARunOfSeveralSchedules:
    async def test_is_told_and_records_the_entries_that_fired_its_slot_once(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        entries = merged.merge(
            [
                merged.Entry("tens", interval.IntervalSchedule(every=10 * SECOND)),
                merged.Entry("fifteens", interval.IntervalSchedule(every=15 * SECOND)),
            ]
        )
        plan = plans.JobPlan(schedule=entries, entries=entries)
        target = Target(wall, duration=SECOND)
        supervisor.arm(JOB, plan, target, resume_after=at(5))
        await wall.sleep_until(at(35))

        fired = [(record.slot, record.schedules) for record in store.jobs[JOB].finished]
        assert fired == [
            (at(10), ("tens",)),
            (at(15), ("fifteens",)),
            (at(20), ("tens",)),
            (at(30), ("tens", "fifteens")),
        ]
        assert [context.schedules for context in target.contexts] == [
            schedules for _, schedules in fired
        ]
