"""The cap on one namespace's backfills going at once on a replica: eight jobs of one namespace,
each asked for a backfill, ran their eight windows side by side (8,000 runs in 10 s). A backfill
past the cap waits, saying why in its progress, and starts when one of its namespace's ends;
another namespace's backfill starts at once."""

from collections.abc import AsyncIterator

import pytest
from runtime_doubles import LOOPTIME, SECOND, FakeWall, GrantingLock, Target, at, every

from punctual.contracts import protocols, records
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import slots
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

HOUR = 3600 * SECOND
TENANT_A = [
    slots.JobRef(namespace="tenant-a", name=f"job-{index}", uid=f"uid-a-{index}")
    for index in range(3)
]
TENANT_B = slots.JobRef(namespace="tenant-b", name="job", uid="uid-b")
WAITING = (
    "2 backfill(s) of namespace tenant-a going on replica replica-a, the most the operator "
    "allows one namespace: it starts when one of them ends"
)


@pytest.fixture
def lock(wall: FakeWall) -> protocols.SlotLock:
    return GrantingLock(wall)


@pytest.fixture
async def capped(
    wall: FakeWall, lock: protocols.SlotLock, store: MemoryStore
) -> AsyncIterator[Supervisor]:
    """A supervisor allowing each namespace two backfills at once."""
    supervisor = Supervisor(
        wall=wall, lock=lock, store=store, replica="replica-a", max_backfills_per_namespace=2
    )
    yield supervisor
    await supervisor.shutdown()


def request(token: str) -> records.BackfillRequest:
    """The five past slots of an ``every: 1h`` job: with runs of a second, five seconds."""
    return records.BackfillRequest(token=token, start=at(-5 * 3600), end=at(-3600))


class TestANamespacesBackfillsPastItsCap:
    async def test_the_third_waits_for_one_of_the_first_two_while_another_namespaces_starts(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        targets = {job: Target(wall, duration=SECOND) for job in [*TENANT_A, TENANT_B]}
        for job, target in targets.items():
            capped.arm(job, every(HOUR), target, resume_after=wall())
        asked = wall()

        refused = [capped.backfill(job, request(f"token-{job.uid}")) for job in targets]
        await wall.sleep_until(asked + 12 * SECOND)

        assert refused == [None] * 4
        first, second, third = (targets[job] for job in TENANT_A)
        assert first.started[0] == second.started[0] == targets[TENANT_B].started[0] == asked
        assert third.started[0] == first.finished[-1] == asked + 5 * SECOND
        assert len(third.contexts) == 5
        assert third.finished[-1] == asked + 10 * SECOND

    async def test_the_waiting_ones_progress_says_why_until_it_starts(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=SECOND)
        for job in TENANT_A:
            capped.arm(job, every(HOUR), target, resume_after=wall())

        for job in TENANT_A:
            capped.backfill(job, request(f"token-{job.uid}"))
        await wall.sleep_until(wall() + 12 * SECOND)

        first, *_, third = (store.jobs[job].backfills for job in TENANT_A)
        assert [progress.waiting for progress in third[:2]] == [WAITING, None]
        assert (third[1].done, third[-1].done, third[-1].finished) == (0, 5, True)
        assert {progress.waiting for progress in first} == {None}

    async def test_a_waiting_backfill_of_a_disarmed_job_takes_no_place(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=SECOND)
        for job in TENANT_A:
            capped.arm(job, every(HOUR), target, resume_after=wall())
        for job in TENANT_A:
            capped.backfill(job, request(f"token-{job.uid}"))
        await wall.sleep_until(wall() + SECOND / 2)
        await capped.disarm(TENANT_A[2])
        await wall.sleep_until(wall() + 5 * SECOND)
        asked_again = wall()

        for job in TENANT_A[:2]:
            assert capped.backfill(job, request(f"again-{job.uid}")) is None
        await wall.sleep_until(asked_again + SECOND / 2)

        assert target.started.count(asked_again) == 2
        assert not any(progress.done for progress in store.jobs[TENANT_A[2]].backfills)
