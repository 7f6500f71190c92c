"""Slots of many jobs due at one instant: one tenant's thousand jobs (``every`` slots are
aligned to the epoch, so all of them fire on the same tens of seconds) never go ahead of another
tenant's job due at the same instant. Claims and runs start in the order the jobs' loops wake,
and those wake in turns across namespaces."""

from collections.abc import AsyncIterator

import pytest
from runtime_doubles import BASE, LOOPTIME, SECOND, FakeWall, Target, at, every

from punctual.contracts import records
from punctual.runtime.supervisor import Supervisor
from punctual.runtime.timers import HEAD_START
from punctual.scheduling import slots
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

TENANT_B = slots.JobRef(namespace="tenant-b", name="every-second", uid="uid-b")
TENANT_A = [
    slots.JobRef(namespace="tenant-a", name=f"many-{index}", uid=f"uid-a-{index}")
    for index in range(1000)
]


class ClaimsInOrder:
    """Grants every claim and remembers whose it was, in the order they were asked."""

    def __init__(self) -> None:
        self.asked: list[records.Claim] = []

    async def claim(self, claim: records.Claim) -> bool:
        self.asked.append(claim)
        return True


@pytest.fixture
def lock() -> ClaimsInOrder:
    return ClaimsInOrder()


@pytest.fixture
async def scheduling(
    wall: FakeWall, lock: ClaimsInOrder, store: MemoryStore
) -> AsyncIterator[Supervisor]:
    supervisor = Supervisor(wall=wall, lock=lock, store=store, replica="replica-a")
    yield supervisor
    await supervisor.shutdown()


class TestAThousandJobsOfOneTenantDueWithAnothersJob:
    async def test_the_other_tenants_slot_is_claimed_and_run_in_the_first_round(
        self, scheduling: Supervisor, wall: FakeWall, lock: ClaimsInOrder
    ) -> None:
        target = Target(wall)
        for job in TENANT_A:  # armed first: their loops park before B's
            scheduling.arm(job, every(10 * SECOND), target, resume_after=BASE)
        scheduling.arm(TENANT_B, every(SECOND), target, resume_after=BASE)

        await wall.sleep_until(at(10.5))

        claimed = [claim.job for claim in lock.asked if claim.slot == at(10)]
        run = [context.job for context in target.contexts if context.slot == at(10)]
        assert len(claimed) == len(run) == 1001
        assert TENANT_B in claimed[:2]
        assert TENANT_B in run[:2]

    async def test_the_other_tenants_run_starts_before_the_rest_of_the_thousand_is_woken(
        self, scheduling: Supervisor, wall: FakeWall, lock: ClaimsInOrder
    ) -> None:
        target = Target(wall)
        for job in TENANT_A:
            scheduling.arm(job, every(10 * SECOND), target, resume_after=BASE)
        scheduling.arm(TENANT_B, every(SECOND), target, resume_after=BASE)

        await wall.sleep_until(at(10.5))

        started = {
            context.job: began
            for context, began in zip(target.contexts, target.started, strict=True)
            if context.slot == at(10)
        }
        assert started[TENANT_B] < at(10) + HEAD_START
        assert sum(1 for began in started.values() if began < at(10) + HEAD_START) == 2
