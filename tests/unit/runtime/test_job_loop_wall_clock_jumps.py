"""Wall-clock steps (NTP, VM resume): forward, the skipped slots are missed runs; backward, no
slot runs twice and the loop waits for the next new one.

An ``every: 10s`` job is armed at 00:00:05 and runs 00:00:10 and 00:00:20; at 00:00:25.5 the
wall clock steps by an hour, while the loop waits for 00:00:30.
"""

import asyncio
from datetime import datetime, timedelta

import pytest
from runtime_doubles import JOB, LOOPTIME, SECOND, TOLERANCE, FakeWall, Target, at, ats, every

from punctual.runtime.supervisor import Supervisor
from punctual.scheduling.missed import MissedRunPolicy
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

PERIOD = 10 * SECOND
HOUR = timedelta(hours=1)


@pytest.fixture
def base() -> datetime:
    return at(5)


async def run_then_jump(
    supervisor: Supervisor, wall: FakeWall, target: Target, by: timedelta, **plan: object
) -> None:
    supervisor.arm(JOB, every(PERIOD, **plan), target, resume_after=at(5))  # type: ignore[arg-type]
    await wall.sleep_until(at(25.5))
    assert target.slots == ats(10, 20)
    wall.jump(by)


class TestAForwardJump:
    async def test_with_run_once_runs_the_newest_skipped_slot_once_not_a_burst(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        await run_then_jump(supervisor, wall, target, HOUR, policy=MissedRunPolicy.RUN_ONCE)
        await wall.sleep(12 * SECOND)  # the wall clock reads 01:00:37.5

        assert target.slots == ats(10, 20, 3620, 3630)
        assert store.jobs[JOB].missed == 359  # 00:00:30 ... 01:00:10
        catch_up = store.jobs[JOB].started[2]
        assert catch_up.started_at - at(3625.5) <= SECOND  # within one timer chunk

    async def test_with_skip_runs_none_of_the_skipped_slots(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        await run_then_jump(supervisor, wall, target, HOUR, policy=MissedRunPolicy.SKIP)
        await wall.sleep(12 * SECOND)

        assert target.slots == ats(10, 20, 3630)
        assert store.jobs[JOB].missed == 360

    async def test_with_catch_up_runs_the_newest_max_catch_up_in_order(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        await run_then_jump(
            supervisor, wall, target, HOUR, policy=MissedRunPolicy.CATCH_UP, max_catch_up=3
        )
        await wall.sleep(12 * SECOND)

        assert target.slots == ats(10, 20, 3600, 3610, 3620, 3630)
        assert store.jobs[JOB].missed == 357

    async def test_then_keeps_the_schedule_on_time(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        await run_then_jump(supervisor, wall, target, HOUR)
        await wall.sleep(60 * SECOND)

        after = [run for run in store.jobs[JOB].started if run.slot >= at(3630)]
        assert [run.slot for run in after] == ats(3630, 3640, 3650, 3660, 3670, 3680)
        for run in after:
            assert abs(run.started_at - run.slot) <= TOLERANCE


class TestABackwardJump:
    async def test_never_runs_a_slot_twice(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        await run_then_jump(supervisor, wall, target, -HOUR)
        await wall.sleep(2 * HOUR)  # the wall clock reads 01:00:25.5 again

        assert target.slots == [at(seconds) for seconds in range(10, 3630, 10)]
        assert store.jobs[JOB].missed == 0

    async def test_waits_for_the_next_new_slot(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        await run_then_jump(supervisor, wall, target, -HOUR)
        jumped_at = asyncio.get_running_loop().time()

        await wall.sleep(HOUR)
        assert target.slots == ats(10, 20)

        await wall.sleep(5 * SECOND)
        assert target.slots == ats(10, 20, 30)
        run = store.jobs[JOB].started[-1]
        assert abs(run.started_at - at(30)) <= TOLERANCE
        waited = asyncio.get_running_loop().time() - jumped_at
        assert waited == pytest.approx((HOUR + 5 * SECOND).total_seconds())

    async def test_during_a_run_keeps_the_run_and_its_record(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=3 * SECOND)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(11))

        wall.jump(-HOUR)
        await wall.sleep(5 * SECOND)

        [record] = store.jobs[JOB].finished
        assert record.slot == at(10)
        assert record.finished_at == at(13) - HOUR  # as the wall clock read it
        assert supervisor.active_slots(JOB) == []
