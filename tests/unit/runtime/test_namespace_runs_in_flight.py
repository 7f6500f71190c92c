"""The cap on one namespace's runs in flight on a replica: one tenant's many jobs against a
target that never answers hold that many of the replica's runs, and another tenant's slots
still start on time."""

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime

import pytest
from runtime_doubles import BASE, LOOPTIME, SECOND, TOLERANCE, FakeWall, Target, at, ats, every

from punctual.contracts import protocols
from punctual.contracts.records import RunResult
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import overlap, slots
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

ALLOW, REPLACE = overlap.ConcurrencyPolicy.ALLOW, overlap.ConcurrencyPolicy.REPLACE
QUEUE = overlap.ConcurrencyPolicy.QUEUE
TENANT_B = slots.JobRef(namespace="tenant-b", name="every-second", uid="uid-b")


def tenant_a(count: int) -> list[slots.JobRef]:
    return [
        slots.JobRef(namespace="tenant-a", name=f"job-{index}", uid=f"uid-a-{index}")
        for index in range(count)
    ]


@pytest.fixture
def namespace_cap() -> int:
    return 2


@pytest.fixture
async def capped(
    wall: FakeWall, lock: protocols.SlotLock, store: MemoryStore, namespace_cap: int
) -> AsyncIterator[Supervisor]:
    """A supervisor allowing each namespace ``namespace_cap`` runs in flight."""
    supervisor = Supervisor(
        wall=wall,
        lock=lock,
        store=store,
        replica="replica-a",
        max_runs_in_flight_per_namespace=namespace_cap,
    )
    yield supervisor
    await supervisor.shutdown()


@dataclass
class SeesRunsElsewhere(Target):
    """A target that sees runs this replica did not start (another replica's Jobs)."""

    elsewhere: set[datetime] = field(default_factory=set)

    def running_slots(self) -> set[datetime]:
        return set(self.elsewhere)


class TestOneTenantsManyJobsAgainstATargetThatNeverAnswers:
    """50 jobs of tenant A, ``every: 1s`` under Allow, their target never answers: without the
    cap, each job held up to its own cap of 10 runs, 500 of the replica's. The namespace's cap
    is 100 here."""

    @pytest.fixture
    def namespace_cap(self) -> int:
        return 100

    async def test_stay_at_the_namespaces_cap_while_another_tenants_job_runs_each_slot_on_time(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        never_answers = Target(wall, hang=True)
        for job in tenant_a(50):
            capped.arm(job, every(SECOND, concurrency=ALLOW), never_answers, resume_after=BASE)
        answers = Target(wall, duration=0.1 * SECOND)
        capped.arm(TENANT_B, every(SECOND), answers, resume_after=BASE)

        await wall.sleep_until(at(30.5))

        assert never_answers.running == never_answers.most_running == 100
        started_b = store.jobs[TENANT_B].started
        assert [run.slot for run in started_b] == ats(*range(1, 31))
        assert max(abs(run.started_at - run.slot) for run in started_b) <= TOLERANCE
        assert {record.result for record in store.jobs[TENANT_B].finished} == {RunResult.SUCCEEDED}

    async def test_every_slot_past_the_cap_is_counted_naming_the_namespaces_cap(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        never_answers = Target(wall, hang=True)
        jobs = tenant_a(50)
        for job in jobs:
            capped.arm(job, every(SECOND, concurrency=ALLOW), never_answers, resume_after=BASE)

        await wall.sleep_until(at(10.5))

        skipped = [record for job in jobs for record in store.jobs[job].finished]
        assert len(skipped) == 50 * 10 - 100
        assert {record.result for record in skipped} == {RunResult.SKIPPED_IN_FLIGHT_LIMIT}
        assert {record.message for record in skipped} == {
            "100 run(s) of namespace tenant-a active on replica replica-a, the most the "
            "operator allows one namespace"
        }


class TestTheNamespacesPlaces:
    async def test_a_run_that_ends_makes_room_for_the_namespaces_next_slot(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        # Three jobs, runs of 25 s every 10 s: two at once in the namespace, the third skipped.
        target = Target(wall, duration=25 * SECOND)
        jobs = tenant_a(3)
        for job in jobs:
            plan = every(10 * SECOND, concurrency=ALLOW)
            capped.arm(job, plan, target, resume_after=at(5))

        await wall.sleep_until(at(44))

        assert target.most_running == 2
        assert sorted(target.slots) == ats(10, 10, 40, 40)
        skipped = [
            record.slot
            for job in jobs
            for record in store.jobs[job].finished
            if record.result == RunResult.SKIPPED_IN_FLIGHT_LIMIT
        ]
        assert sorted(skipped) == ats(10, 20, 20, 20, 30, 30, 30, 40)

    async def test_a_replacement_takes_the_place_of_the_run_it_cancels(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        never_answers = Target(wall, hang=True)
        busy, replacing = tenant_a(2)
        capped.arm(busy, every(10 * SECOND, concurrency=ALLOW), never_answers, resume_after=at(5))
        capped.arm(
            replacing, every(10 * SECOND, concurrency=REPLACE), never_answers, resume_after=at(5)
        )

        await wall.sleep_until(at(35))

        # From 00:00:20 the namespace is at its cap; each slot of the Replace job still runs.
        assert [run.slot for run in store.jobs[replacing].started] == ats(10, 20, 30)
        assert [run.slot for run in store.jobs[busy].started] == ats(10)
        assert never_answers.running == 2

    async def test_a_disarmed_jobs_runs_give_their_places_back(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        never_answers = Target(wall, hang=True)
        first, second = tenant_a(2)
        plan = every(SECOND, concurrency=ALLOW)
        capped.arm(first, plan, never_answers, resume_after=BASE)
        await wall.sleep_until(at(3.5))
        await capped.disarm(first)

        capped.arm(second, plan, never_answers, resume_after=at(3.5))
        await wall.sleep_until(at(5.5))

        assert [run.slot for run in store.jobs[second].started] == ats(4, 5)

    async def test_a_slot_queued_behind_runs_elsewhere_waits_for_a_place_too(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        # The busy job holds both places from 00:00:20 to 00:00:35; the queued job's slot of
        # 00:00:10 waits behind another replica's run until 00:00:22, then for a place.
        busy, queueing = tenant_a(2)
        long_runs = Target(wall, duration=25 * SECOND)
        capped.arm(busy, every(10 * SECOND, concurrency=ALLOW), long_runs, resume_after=at(5))
        shared = SeesRunsElsewhere(wall, duration=SECOND, elsewhere={at(0)})
        capped.arm(queueing, every(10 * SECOND, concurrency=QUEUE), shared, resume_after=at(5))
        await wall.sleep_until(at(22))
        shared.elsewhere.clear()

        await wall.sleep_until(at(40))

        assert shared.slots == ats(10)
        assert at(35) <= shared.started[0] <= at(36)

    async def test_namespaces_are_counted_apart(
        self, capped: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        never_answers = Target(wall, hang=True)
        [job_a] = tenant_a(1)
        plan = every(SECOND, concurrency=ALLOW)
        for job in (job_a, TENANT_B):
            capped.arm(job, plan, never_answers, resume_after=BASE)

        await wall.sleep_until(at(5.5))

        assert never_answers.running == 4
        for job in (job_a, TENANT_B):
            assert [run.slot for run in store.jobs[job].started] == ats(1, 2)
