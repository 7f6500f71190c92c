"""Backfills of one job run one at a time on a replica: eight requests with new tokens, made
while the first one ran, ran eight windows side by side (8,000 runs in 10 s)."""

from datetime import timedelta

import pytest
from runtime_doubles import JOB, LOOPTIME, SECOND, FakeWall, GrantingLock, Target, at, every

from punctual.contracts import protocols, records
from punctual.runtime.supervisor import Supervisor
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

HOUR = 3600 * SECOND


@pytest.fixture
def lock(wall: FakeWall) -> protocols.SlotLock:
    return GrantingLock(wall)


def request(token: str) -> records.BackfillRequest:
    """The five past slots of an ``every: 1h`` job (each run takes a second)."""
    return records.BackfillRequest(token=token, start=at(-5 * 3600), end=at(-3600))


class TestOneBackfillAtATime:
    async def test_a_request_while_one_is_going_is_refused_and_runs_nothing(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=SECOND)
        supervisor.arm(JOB, every(HOUR), target, resume_after=wall())

        assert supervisor.backfill(JOB, request("first")) is None
        await wall.sleep_until(wall() + SECOND / 2)
        problem = supervisor.backfill(JOB, request("second"))
        await wall.sleep_until(wall() + 10 * SECOND)

        assert problem is not None
        assert problem.startswith("the backfill 'first' is still going (status.backfill)")
        assert len(target.contexts) == 5
        assert target.most_running == 1
        assert {progress.request.token for progress in store.jobs[JOB].backfills} == {"first"}
        assert store.jobs[JOB].backfills[-1].finished

    async def test_once_it_has_finished_the_next_request_runs(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = Target(wall, duration=SECOND)
        supervisor.arm(JOB, every(HOUR), target, resume_after=wall())

        supervisor.backfill(JOB, request("first"))
        await wall.sleep_until(wall() + 6 * SECOND)
        later = records.BackfillRequest(token="second", start=at(-10 * 3600), end=at(-9 * 3600))

        assert supervisor.backfill(JOB, later) is None
        await wall.sleep_until(wall() + timedelta(seconds=3))
        assert len(target.contexts) == 7
