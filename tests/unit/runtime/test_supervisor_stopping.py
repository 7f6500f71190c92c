"""Stopping: shutdown, disarm and suspend end what they should, record it, and leave no task.

``every: 10s`` jobs are armed at 00:00:05: their slots are 00:00:10, 00:00:20, ...
"""

import asyncio
import logging
from datetime import datetime

import pytest
from runtime_doubles import JOB, LOOPTIME, SECOND, FakeWall, Target, at, ats, every, results

from punctual.contracts.records import MissedReason, RunContext, RunResult
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import slots
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

PERIOD = 10 * SECOND
OTHER = slots.JobRef(namespace="reports", name="hourly", uid="5f0c1d2e-0000-4000-8000-000000000002")
STOPPING = "cancelled: operator stopping"


@pytest.fixture
def base() -> datetime:
    return at(5)


def other_tasks() -> set[asyncio.Task[object]]:
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


class TestShutdown:
    async def test_cancels_the_runs_in_flight_and_records_them_cancelled(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, hang=True)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(12))

        await supervisor.shutdown()

        [record] = store.jobs[JOB].finished
        assert (record.slot, record.result, record.message) == (
            at(10),
            RunResult.CANCELLED,
            STOPPING,
        )
        assert target.cancelled == 1
        assert target.running == 0

    async def test_stops_every_job_and_leaves_no_task_behind(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        hanging, quick = Target(wall, hang=True), Target(wall)
        supervisor.arm(JOB, every(PERIOD), hanging, resume_after=at(5))
        supervisor.arm(OTHER, every(3 * SECOND), quick, resume_after=at(5))
        await wall.sleep_until(at(12))

        await supervisor.shutdown()

        assert supervisor.armed == frozenset()
        assert other_tasks() == set()
        ran = (list(hanging.slots), list(quick.slots))
        await wall.sleep_until(at(3600))
        assert (hanging.slots, quick.slots) == ran

    async def test_with_nothing_armed_returns_at_once(self, supervisor: Supervisor) -> None:
        before = asyncio.get_running_loop().time()

        await supervisor.shutdown()

        assert asyncio.get_running_loop().time() == before

    async def test_waits_at_most_the_grace_period_for_a_run_that_will_not_stop(
        self,
        supervisor: Supervisor,
        wall: FakeWall,
        store: MemoryStore,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        async def stubborn(context: RunContext) -> None:
            try:
                await asyncio.Event().wait()
            finally:
                await asyncio.sleep(60)  # a slow clean-up, well past the grace period

        supervisor.arm(JOB, every(PERIOD), stubborn, resume_after=at(5))  # type: ignore[arg-type]
        await wall.sleep_until(at(12))
        began = asyncio.get_running_loop().time()

        with caplog.at_level(logging.WARNING):
            await supervisor.shutdown()

        assert asyncio.get_running_loop().time() - began == pytest.approx(5.0)  # the grace
        assert "did not stop within" in caplog.text
        await wall.sleep(60 * SECOND)  # let it end, so that no task is left behind
        assert results(store.jobs[JOB].finished) == [(at(10), RunResult.CANCELLED)]


class TestDisarm:
    async def test_cancels_the_jobs_runs_and_stops_its_slots(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=25 * SECOND)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(12))

        await supervisor.disarm(JOB)
        await wall.sleep_until(at(60))

        assert target.slots == ats(10)
        assert target.cancelled == 1
        assert results(store.jobs[JOB].finished) == [(at(10), RunResult.CANCELLED)]
        assert JOB not in supervisor.armed
        assert supervisor.active_slots(JOB) == []

    async def test_leaves_the_other_jobs_alone(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        disarmed, kept = Target(wall), Target(wall, duration=8 * SECOND)
        supervisor.arm(JOB, every(PERIOD), disarmed, resume_after=at(5))
        supervisor.arm(OTHER, every(PERIOD), kept, resume_after=at(5))
        await wall.sleep_until(at(12))

        await supervisor.disarm(JOB)
        await wall.sleep_until(at(35))

        assert disarmed.slots == ats(10)
        assert kept.slots == ats(10, 20, 30)
        assert kept.cancelled == 0
        assert supervisor.armed == frozenset({OTHER})

    async def test_of_a_job_never_armed_does_nothing(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))

        await supervisor.disarm(OTHER)
        await wall.sleep_until(at(15))

        assert target.slots == ats(10)


class TestSuspend:
    async def test_stops_new_slots_but_lets_the_run_in_flight_finish(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=5 * SECOND)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(12))

        supervisor.suspend(JOB)
        await wall.sleep_until(at(60))

        assert target.slots == ats(10)
        assert results(store.jobs[JOB].finished) == [(at(10), RunResult.SUCCEEDED)]
        assert JOB in supervisor.armed

    async def test_then_arming_again_resumes_after_the_given_slot(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(12))
        supervisor.suspend(JOB)
        await wall.sleep_until(at(47))

        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(10), suspended_through=at(47))
        await wall.sleep_until(at(55))

        assert target.slots == ats(10, 50)
        assert store.jobs[JOB].missed_by_reason == {MissedReason.SUSPENDED: 3}  # 00:00:20 … 40
        assert store.jobs[JOB].missed == 0
