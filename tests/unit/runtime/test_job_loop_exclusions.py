"""Excluded slots (``spec.exclude``, skipped occurrences): the plan leaves them out, so they
never run and are never missed; the loop counts them ``Excluded`` as it passes them.

Every test arms an ``every: 10s`` job at 00:00:05 (``at(5)``).
"""

import dataclasses
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from runtime_doubles import JOB, LOOPTIME, SECOND, FakeWall, Target, at, ats, every

from punctual.contracts import records
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import exclusions, plans
from punctual.scheduling.missed import MissedRunPolicy
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

PERIOD = 10 * SECOND
EXCLUDED = records.MissedReason.EXCLUDED


@pytest.fixture
def base() -> datetime:
    return at(5)


def skipping(plan: plans.JobPlan, *slots: datetime) -> plans.JobPlan:
    skipped = exclusions.Exclusions(zone=ZoneInfo("UTC"), skipped=frozenset(slots))
    return dataclasses.replace(plan, schedule=exclusions.excluding(plan.schedule, skipped))


def started_slots(store: MemoryStore) -> list[datetime]:
    return [run.slot for run in store.jobs[JOB].started]


class TestExcludedSlots:
    async def test_are_not_run_and_counted_excluded_when_the_next_slot_comes(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = skipping(every(PERIOD), at(10), at(20))
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(5))
        await wall.sleep_until(at(35))

        assert started_slots(store) == ats(30)
        assert store.jobs[JOB].missed_by_reason == {EXCLUDED: 2}
        assert store.jobs[JOB].missed == 0

    async def test_a_long_stretch_is_counted_a_minute_at_a_time_as_it_passes(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        whole_day = exclusions.Exclusions(
            zone=ZoneInfo("UTC"), ranges=((at(0).date(), at(0).date()),)
        )
        plan = every(PERIOD)
        plan = dataclasses.replace(plan, schedule=exclusions.excluding(plan.schedule, whole_day))
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(5))
        await wall.sleep_until(at(65))
        assert EXCLUDED not in store.jobs[JOB].missed_by_reason

        await wall.sleep_until(at(75))
        assert store.jobs[JOB].missed_by_reason == {EXCLUDED: 7}  # 00:00:10 to 00:01:10

        await wall.sleep_until(at(145))
        assert store.jobs[JOB].missed_by_reason == {EXCLUDED: 14}
        assert started_slots(store) == []

    async def test_among_overdue_slots_are_counted_excluded_not_missed(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = skipping(every(PERIOD, policy=MissedRunPolicy.CATCH_UP), at(-10))
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(-25))
        await wall.sleep_until(at(7))

        assert started_slots(store) == ats(-20, 0)
        assert store.jobs[JOB].missed_by_reason == {EXCLUDED: 1}

    async def test_passed_while_suspended_are_counted_excluded_not_suspended(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        plan = skipping(every(PERIOD, policy=MissedRunPolicy.CATCH_UP), at(-30))
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(-55), suspended_through=at(5))
        await wall.sleep_until(at(15))

        assert store.jobs[JOB].missed_by_reason == {
            records.MissedReason.SUSPENDED: 5,
            EXCLUDED: 1,
        }
        assert started_slots(store) == ats(10)

    async def test_a_job_without_exclusions_counts_none(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        supervisor.arm(JOB, every(PERIOD), Target(wall), resume_after=at(5))
        await wall.sleep_until(at(35))

        assert started_slots(store) == ats(10, 20, 30)
        assert EXCLUDED not in store.jobs[JOB].missed_by_reason
