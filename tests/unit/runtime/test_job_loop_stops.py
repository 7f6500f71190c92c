"""A loop that cannot go on says why (its schedule ran out, an error) instead of dying silently;
a long outage's slots are counted a bounded number at a time, the event loop free between."""

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from runtime_doubles import JOB, LOOPTIME, FakeWall, Target, at, ats

from punctual.runtime import job_loop, passed_slots
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import cron, interval, missed, plans, timeline, windows
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME


@dataclass(frozen=True)
class Finite:
    """A schedule with these slots and no more (as one whose next slot is past the limit)."""

    slots: tuple[datetime, ...]
    shortest_period: timedelta = timedelta(seconds=10)

    def next_after(self, instant: datetime) -> timeline.Occurrence | None:
        later = [slot for slot in self.slots if slot > instant]
        return timeline.Occurrence(at=later[0], nominal=later[0]) if later else None

    def due_between(
        self, *, after: datetime, until: datetime, keep: int, steps: int | None = None
    ) -> timeline.DueSlots:
        return timeline.scan_due(self, after=after, until=until, keep=keep, steps=steps)


class Broken(Finite):
    def next_after(self, instant: datetime) -> timeline.Occurrence | None:
        raise RuntimeError("no calendar today")


def stops(supervisor: Supervisor) -> list[tuple[str, str]]:
    told: list[tuple[str, str]] = []
    supervisor.when_stopped(lambda _job, reason, message: told.append((reason, message)))
    return told


class TestAScheduleThatRunsOut:
    async def test_its_last_slots_run_then_the_loop_says_no_future_slots(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        told = stops(supervisor)
        plan = plans.JobPlan(schedule=Finite(slots=tuple(ats(10, 20))))
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(0))
        await wall.sleep_until(at(30))

        assert [run.slot for run in store.jobs[JOB].started] == ats(10, 20)
        [(reason, message)] = told
        assert reason == job_loop.NO_FUTURE_SLOTS == "NoFutureSlots"
        assert message.startswith("spec.schedule: no slot after 2026-01-01T00:00:20Z")

    async def test_a_schedule_with_no_slot_at_all_says_so_at_once(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        told = stops(supervisor)
        supervisor.arm(
            JOB, plans.JobPlan(schedule=Finite(slots=())), Target(wall), resume_after=at(0)
        )
        await asyncio.sleep(0)

        assert [reason for reason, _ in told] == [job_loop.NO_FUTURE_SLOTS]

    async def test_a_loop_re_armed_or_suspended_is_not_reported(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        told = stops(supervisor)
        plan = plans.JobPlan(schedule=Finite(slots=tuple(ats(10, 20))))
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(0))
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(0))
        supervisor.suspend(JOB)
        await wall.sleep_until(at(30))

        assert told == []


class TestAJobWhoseWindowIsOver:
    async def test_its_slots_in_the_window_run_then_the_loop_says_ended(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        told = stops(supervisor)
        every_ten = interval.IntervalSchedule(every=timedelta(seconds=10))
        window = windows.Window(starts_at=at(10), ends_at=at(40))
        plan = plans.JobPlan(schedule=windows.within(every_ten, window))
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(0))
        await wall.sleep_until(at(60))

        assert [run.slot for run in store.jobs[JOB].started] == ats(10, 20, 30)
        [(reason, _)] = told
        assert reason == job_loop.ENDED == "Ended"

    async def test_a_one_off_runs_once_then_says_ended(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        told = stops(supervisor)
        plan = plans.JobPlan(schedule=windows.OneOff(at(15)))
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(0))
        await wall.sleep_until(at(60))

        assert [run.slot for run in store.jobs[JOB].started] == ats(15)
        assert [reason for reason, _ in told] == [job_loop.ENDED]

    async def test_a_one_off_already_past_runs_nothing_and_says_ended(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        told = stops(supervisor)
        plan = plans.JobPlan(schedule=windows.OneOff(at(15)))
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(15))
        await wall.sleep_until(at(30))

        assert JOB not in store.jobs or not store.jobs[JOB].started
        assert [reason for reason, _ in told] == [job_loop.ENDED]


class TestALoopThatFails:
    async def test_says_scheduling_failed_with_the_error(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        told = stops(supervisor)
        supervisor.arm(
            JOB, plans.JobPlan(schedule=Broken(slots=())), Target(wall), resume_after=at(0)
        )
        await wall.sleep_until(at(1))

        [(reason, message)] = told
        assert reason == job_loop.SCHEDULING_FAILED
        assert "no calendar today" in message


class TestALongOutageOfACronSchedule:
    async def test_is_counted_exactly_in_bounded_steps_while_the_loop_serves_others(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        every_second = cron.parse("* * * * * *", zone=ZoneInfo("UTC"))
        plan = plans.JobPlan(
            schedule=every_second, missed_runs=missed.MissedRuns(policy=missed.MissedRunPolicy.SKIP)
        )
        outage = 3 * passed_slots.COUNT_STEPS + 5
        turns = 0

        async def other_job() -> None:
            nonlocal turns
            while not store.jobs[JOB].missed:  # until the count is done
                turns += 1
                await asyncio.sleep(0)

        other = asyncio.create_task(other_job())
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(-outage))
        await other

        assert store.jobs[JOB].missed == outage
        assert store.jobs[JOB].newest_missed == at(0)
        assert turns > 3  # one turn at least between the steps of the count
