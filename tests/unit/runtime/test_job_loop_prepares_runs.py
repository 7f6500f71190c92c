"""A target that can prepare its runs (a Job, built and serialised) is handed each upcoming slot
as the loop starts waiting for it, so that work is done before the slot, not at it.

An ``every: 10s`` job is armed at 00:00:05: its slots are 00:00:10, 00:00:20, ...
"""

from dataclasses import dataclass, field
from datetime import datetime

import pytest
from runtime_doubles import JOB, LOOPTIME, SECOND, FakeWall, Target, at, ats, every

from punctual.contracts import protocols, records
from punctual.runtime.supervisor import Supervisor

pytestmark = LOOPTIME

PERIOD = 10 * SECOND


@pytest.fixture
def base() -> datetime:
    return at(5)


@dataclass
class PreparingTarget(Target):
    """Remembers which slot it was asked to prepare, and when (wall time)."""

    prepared: list[tuple[datetime, datetime]] = field(default_factory=list)
    fails_to_prepare: bool = False

    def prepare(self, context: records.RunContext) -> None:
        self.prepared.append((context.slot, self.wall()))
        if self.fails_to_prepare:
            raise RuntimeError("the template cannot be serialised")


class TestRunsArePreparedBeforeTheirSlot:
    def test_a_target_with_prepare_prepares_runs(self, wall: FakeWall) -> None:
        assert isinstance(PreparingTarget(wall), protocols.PreparesRuns)
        assert not isinstance(Target(wall), protocols.PreparesRuns)

    async def test_each_slot_is_prepared_as_soon_as_the_previous_one_is_started(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = PreparingTarget(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(25))

        assert target.prepared == [(at(10), at(5)), (at(20), at(10)), (at(30), at(20))]
        assert target.slots == ats(10, 20)

    async def test_the_prepared_context_is_the_one_the_run_gets(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = PreparingTarget(wall)
        contexts: list[records.RunContext] = []
        target.prepare = contexts.append  # type: ignore[method-assign]
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(15))

        assert contexts[0] == target.contexts[0]

    async def test_a_target_that_fails_to_prepare_still_runs_on_time(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = PreparingTarget(wall, fails_to_prepare=True)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(25))

        assert target.slots == ats(10, 20)
        assert target.started == ats(10, 20)
