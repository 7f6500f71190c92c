"""The cap on one namespace's runs queued on a replica (``concurrencyPolicy: Queue``): each job's
queue is bounded by its ``maxQueued``, a tenant's jobs' queues together by the platform. A slot
that would be queued past the cap is skipped and counted ``SkippedQueueLimit``; another
namespace's slots still queue."""

from collections.abc import AsyncIterator

import pytest
from runtime_doubles import LOOPTIME, SECOND, FakeWall, Target, at, ats, every

from punctual.contracts import protocols
from punctual.contracts.records import RunResult
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import overlap, slots
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

QUEUE = overlap.ConcurrencyPolicy.QUEUE
TENANT_A = [
    slots.JobRef(namespace="tenant-a", name=f"job-{index}", uid=f"uid-a-{index}")
    for index in range(2)
]
TENANT_B = slots.JobRef(namespace="tenant-b", name="job", uid="uid-b")
AT_THE_CAP = (
    "1 run(s) of namespace tenant-a queued on replica replica-a, the most the operator allows "
    "one namespace"
)


@pytest.fixture
async def capped(
    wall: FakeWall, lock: protocols.SlotLock, store: MemoryStore
) -> AsyncIterator[Supervisor]:
    """A supervisor allowing each namespace one run queued."""
    supervisor = Supervisor(
        wall=wall, lock=lock, store=store, replica="replica-a", max_queued_runs_per_namespace=1
    )
    yield supervisor
    await supervisor.shutdown()


def queue_limit_skips(store: MemoryStore, jobs: list[slots.JobRef]) -> list[tuple[str, str]]:
    """``(slot, message)`` of each slot of ``jobs`` skipped at the namespace's queue cap."""
    return sorted(
        (record.slot.isoformat(), record.message)
        for job in jobs
        for record in store.jobs[job].finished
        if record.result == RunResult.SKIPPED_QUEUE_LIMIT
    )


class TestANamespaceAtItsQueuedCap:
    """Runs of 25 s every 10 s under Queue (``maxQueued: 1``): at 00:00:20 each job's slot would
    queue behind its run of 00:00:10."""

    async def test_skips_the_slot_with_its_own_reason_while_another_namespace_queues(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=25 * SECOND)
        plan = every(10 * SECOND, concurrency=QUEUE)
        for job in [*TENANT_A, TENANT_B]:
            capped.arm(job, plan, target, resume_after=at(5))

        await wall.sleep_until(at(25))

        assert queue_limit_skips(store, TENANT_A) == [(at(20).isoformat(), AT_THE_CAP)]
        assert store.jobs[TENANT_B].finished == []
        await wall.sleep_until(at(36))
        assert [run.slot for run in store.jobs[TENANT_B].started] == ats(10, 20)

    async def test_a_queued_run_that_starts_gives_its_place_back(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        # The run queued at 00:00:20 starts at 00:00:35: the slot of 00:00:40 queues again.
        target = Target(wall, duration=25 * SECOND)
        plan = every(10 * SECOND, concurrency=QUEUE)
        for job in TENANT_A:
            capped.arm(job, plan, target, resume_after=at(5))

        await wall.sleep_until(at(45))

        skipped = [slot for slot, _ in queue_limit_skips(store, TENANT_A)]
        assert skipped == [at(20).isoformat(), at(30).isoformat()]

    async def test_a_disarmed_jobs_queued_run_gives_its_place_back(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=25 * SECOND)
        plan = every(10 * SECOND, concurrency=QUEUE)
        for job in TENANT_A:
            capped.arm(job, plan, target, resume_after=at(5))
        await wall.sleep_until(at(25))
        [queueing] = [job for job in TENANT_A if not store.jobs[job].finished]

        await capped.disarm(queueing)
        await wall.sleep_until(at(35))

        [other] = [job for job in TENANT_A if job != queueing]
        assert [record.slot for record in store.jobs[other].finished] == ats(20)
