"""Sharding: a job is scheduled by its owner at each slot and by its backup ``backup_delay``
later; the other replicas do not arm it; a membership change re-arms only what moved.

Three supervisors, ``r1``..``r3``, share one slot lock in one event loop; ``every: 10s`` jobs
armed at 00:00:05 have their slots at 00:00:10, 00:00:20, ...
"""

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest
from runtime_doubles import LOOPTIME, SECOND, FakeWall, Target, at, every

from punctual.contracts import records
from punctual.locks.memory import MemoryLock
from punctual.runtime.supervisor import Sharding, Supervisor
from punctual.scheduling import ownership, slots
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

PERIOD = 10 * SECOND
DELAY = timedelta(milliseconds=250)
MEMBERS = frozenset({"r1", "r2", "r3"})


@pytest.fixture
def base() -> datetime:
    return at(5)


@dataclass
class RecordingLock:
    """One lock for every replica; remembers each claim: (replica, slot, wall time, won)."""

    wall: FakeWall
    inner: MemoryLock = field(default_factory=MemoryLock)
    asked: list[tuple[str, datetime, datetime, bool]] = field(default_factory=list)

    async def claim(self, claim: records.Claim) -> bool:
        won = await self.inner.claim(claim)
        self.asked.append((claim.holder.split(":")[0], claim.slot, self.wall(), won))
        return won


@pytest.fixture
def shared_lock(wall: FakeWall) -> RecordingLock:
    return RecordingLock(wall)


@pytest.fixture
async def fleet(wall: FakeWall, shared_lock: RecordingLock) -> AsyncIterator[dict[str, Supervisor]]:
    replicas = {
        member: Supervisor(
            wall=wall,
            lock=shared_lock,
            store=MemoryStore(),
            replica=member,
            sharding=Sharding(member=member, backup_delay=DELAY),
        )
        for member in sorted(MEMBERS)
    }
    for replica in replicas.values():
        replica.members_changed(MEMBERS)
    yield replicas
    for replica in replicas.values():
        await replica.shutdown()


def job_held_by(
    owner: str, backup: str, *, then: frozenset[str] = MEMBERS, role: str | None = None
) -> slots.JobRef:
    """A job whose owner and backup among ``MEMBERS`` are the ones named (and in which
    ``backup`` has ``role`` among the members ``then``)."""
    for index in range(1000):
        job = slots.JobRef(namespace="ns", name=f"job-{index}", uid=f"uid-{index}")
        if ownership.shares(job.uid, MEMBERS) == ownership.Shares(owner=owner, backup=backup) and (
            role is None or ownership.role(job.uid, then, backup) == role
        ):
            return job
    raise AssertionError("no such job")


def arm_everywhere(fleet: dict[str, Supervisor], job: slots.JobRef, target: Target) -> None:
    for replica in fleet.values():
        replica.arm(job, every(PERIOD), target, resume_after=at(5))


class TestOnlyTheOwnerAndTheBackupArmAJob:
    async def test_the_owner_claims_at_the_slot_the_backup_after_the_delay_the_third_not(
        self, fleet: dict[str, Supervisor], wall: FakeWall, shared_lock: RecordingLock
    ) -> None:
        job = job_held_by("r1", "r2")
        target = Target(wall)
        arm_everywhere(fleet, job, target)
        await wall.sleep_until(at(11))

        assert shared_lock.asked == [("r1", at(10), at(10), True), ("r2", at(10), at(10.25), False)]
        assert target.slots == [at(10)]
        assert [job in replica.armed for replica in fleet.values()] == [True, True, False]

    async def test_only_the_owner_leads_the_job(self, fleet: dict[str, Supervisor]) -> None:
        job = job_held_by("r3", "r1")
        assert [replica.leads(job) for replica in fleet.values()] == [False, False, True]


class TestTheBackupRunsWhatADeadOwnerLeft:
    async def test_before_the_membership_changes(
        self, fleet: dict[str, Supervisor], wall: FakeWall, shared_lock: RecordingLock
    ) -> None:
        job = job_held_by("r1", "r2")
        target = Target(wall)
        arm_everywhere(fleet, job, target)
        await fleet["r1"].shutdown()  # killed: the others still count it a member
        await wall.sleep_until(at(11))

        assert shared_lock.asked == [("r2", at(10), at(10.25), True)]
        assert target.slots == [at(10)]

    async def test_then_as_owner_at_the_slot_with_a_new_backup(
        self, fleet: dict[str, Supervisor], wall: FakeWall, shared_lock: RecordingLock
    ) -> None:
        job = job_held_by("r1", "r2")
        target = Target(wall)
        arm_everywhere(fleet, job, target)
        await fleet["r1"].shutdown()
        await wall.sleep_until(at(12))
        for member in ("r2", "r3"):
            fleet[member].members_changed(frozenset({"r2", "r3"}))
        await wall.sleep_until(at(21))

        assert shared_lock.asked[1:] == [
            ("r2", at(20), at(20), True),
            ("r3", at(20), at(20.25), False),
        ]
        assert target.slots == [at(10), at(20)]


class TestAMembershipChangeMovesOnlyTheJobsWhoseRoleChanged:
    async def test_a_job_held_by_others_is_not_re_armed(
        self, fleet: dict[str, Supervisor], wall: FakeWall
    ) -> None:
        job = job_held_by("r1", "r2")
        arm_everywhere(fleet, job, Target(wall))
        await wall.sleep_until(at(6))

        moved = fleet["r1"].members_changed(frozenset({"r1", "r2"}))  # r3 left

        assert moved == []
        assert job in fleet["r1"].armed

    async def test_a_replica_no_longer_holding_a_job_lets_its_run_finish(
        self, fleet: dict[str, Supervisor], wall: FakeWall
    ) -> None:
        members = frozenset({"r1", "r2", "r3", "r4"})
        job = job_held_by("r2", "r1", then=members, role=ownership.Role.NONE)
        target = Target(wall, duration=5 * SECOND)
        arm_everywhere(fleet, job, target)
        await fleet["r2"].shutdown()  # killed: its backup r1 runs the slot
        await wall.sleep_until(at(11))

        fleet["r1"].members_changed(members)  # r4 joined and outranks r1 for this job
        await wall.sleep_until(at(16))

        assert job not in fleet["r1"].armed
        assert (target.slots, target.started, target.running) == ([at(10)], [at(10.25)], 0)
        assert len(target.finished) == 1


class TestOneReplicaSchedulesEveryJobAsToday:
    async def test_alone_it_owns_every_job_and_claims_at_the_slot(
        self, wall: FakeWall, shared_lock: RecordingLock
    ) -> None:
        alone = Supervisor(
            wall=wall,
            lock=shared_lock,
            store=MemoryStore(),
            replica="r1",
            sharding=Sharding(member="r1"),
        )
        job = job_held_by("r2", "r3")
        target = Target(wall)
        alone.arm(job, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(11))
        await alone.shutdown()

        assert shared_lock.asked == [("r1", at(10), at(10), True)]
