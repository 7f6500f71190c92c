"""Sharding: a job is scheduled by its owner at each slot and by its backup ``backup_delay``
later; the other replicas do not arm it; a membership change re-arms only what moved. Claim
notices: the owner's claim tells the backup, which then does not claim; a backup told nothing
by its delay claims as without notices.

Three supervisors, ``r1``..``r3``, share one slot lock in one event loop; with ``tell`` on, it
tells the member a won claim names (``Claim.backup``) after ``latency``, as the redis lock does.
``every: 10s`` jobs armed at 00:00:05 have their slots at 00:00:10, 00:00:20, ...
"""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest
from runtime_doubles import LOOPTIME, SECOND, FakeWall, Target, at, every

from punctual.contracts import records
from punctual.locks.memory import MemoryLock
from punctual.runtime import notices
from punctual.runtime.sharding import Sharding
from punctual.runtime.supervisor import Supervisor
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
    """One lock for every replica; remembers each claim: (replica, slot, wall time, won), and
    the member it names (``named``). With ``tell``, a won claim's member hears of it."""

    wall: FakeWall
    tell: bool = False
    latency: timedelta = timedelta(milliseconds=2)
    fleet: dict[str, Supervisor] = field(default_factory=dict)
    inner: MemoryLock = field(default_factory=MemoryLock)
    asked: list[tuple[str, datetime, datetime, bool]] = field(default_factory=list)
    named: list[str | None] = field(default_factory=list)
    taken: list[bool] = field(default_factory=list)
    """What each notice told came to (``ClaimNotices.claimed``)."""
    _telling: set["asyncio.Task[None]"] = field(default_factory=set)

    async def claim(self, claim: records.Claim) -> bool:
        won = await self.inner.claim(claim)
        self.asked.append((claim.holder.split(":")[0], claim.slot, self.wall(), won))
        self.named.append(claim.backup)
        if won and claim.backup is not None and self.tell:
            notice = records.ClaimNotice(uid=claim.job.uid, slot=claim.slot)
            task = asyncio.create_task(self._tell(claim.backup, notice))
            self._telling.add(task)
            task.add_done_callback(self._telling.discard)
        return won

    async def _tell(self, member: str, notice: records.ClaimNotice) -> None:
        await asyncio.sleep(self.latency.total_seconds())
        replica = self.fleet.get(member)
        if replica is not None:
            self.taken.append(replica.claimed(notice))


@pytest.fixture
async def shared_lock(wall: FakeWall) -> AsyncIterator[RecordingLock]:
    lock = RecordingLock(wall)
    yield lock
    await asyncio.gather(*lock._telling)


@pytest.fixture
def stores() -> dict[str, MemoryStore]:
    return {member: MemoryStore() for member in sorted(MEMBERS)}


@pytest.fixture
async def fleet(
    wall: FakeWall, shared_lock: RecordingLock, stores: dict[str, MemoryStore]
) -> AsyncIterator[dict[str, Supervisor]]:
    replicas = {
        member: Supervisor(
            wall=wall,
            lock=shared_lock,
            store=stores[member],
            replica=member,
            sharding=Sharding(member=member, backup_delay=DELAY),
        )
        for member in sorted(MEMBERS)
    }
    for replica in replicas.values():
        replica.members_changed(MEMBERS)
    shared_lock.fleet.update(replicas)
    yield replicas
    for replica in replicas.values():
        await replica.shutdown()


@pytest.fixture
def telling(shared_lock: RecordingLock) -> RecordingLock:
    shared_lock.tell = True
    return shared_lock


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


class TestAJobNewToAReplicaStartsFromNowOnItsSlotTimeline:
    async def test_the_slot_its_offset_puts_ahead_runs_although_its_nominal_time_passed(
        self, fleet: dict[str, Supervisor], wall: FakeWall
    ) -> None:
        job = job_held_by("r1", "r2")  # r3 does not arm it
        target = Target(wall)
        fleet["r3"].arm(job, every(PERIOD, offset=4 * SECOND), target, resume_after=at(5))
        await fleet["r1"].shutdown()
        await fleet["r2"].shutdown()
        await wall.sleep_until(at(11))  # the 00:00:10 slot fires at 00:00:14

        fleet["r3"].members_changed(frozenset({"r3"}))  # its owner and backup left at once
        await wall.sleep_until(at(15))

        assert (target.slots, target.started) == ([at(10)], [at(14)])


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


class TestAToldBackupDoesNotClaim:
    async def test_the_owner_names_the_backup_and_the_backup_leaves_the_slot(
        self,
        fleet: dict[str, Supervisor],
        wall: FakeWall,
        telling: RecordingLock,
        stores: dict[str, MemoryStore],
    ) -> None:
        job = job_held_by("r1", "r2")
        target = Target(wall)
        arm_everywhere(fleet, job, target)
        await wall.sleep_until(at(31))

        assert telling.asked == [("r1", at(slot), at(slot), True) for slot in (10, 20, 30)]
        assert telling.named == ["r2", "r2", "r2"]
        assert telling.taken == [True, True, True]
        assert stores["r2"].jobs[job].skipped == [at(10), at(20), at(30)]
        assert target.slots == [at(10), at(20), at(30)]

    async def test_a_notice_that_comes_after_the_delay_is_ignored_and_the_backup_claims(
        self, fleet: dict[str, Supervisor], wall: FakeWall, telling: RecordingLock
    ) -> None:
        telling.latency = timedelta(milliseconds=400)  # Redis slow: later than the delay
        job = job_held_by("r1", "r2")
        target = Target(wall)
        arm_everywhere(fleet, job, target)
        await wall.sleep_until(at(11))

        assert telling.asked == [("r1", at(10), at(10), True), ("r2", at(10), at(10.25), False)]
        assert telling.taken == [False]  # the loop had passed that slot
        assert target.slots == [at(10)]


class TestABackupToldNothingClaimsAsWithoutNotices:
    async def test_when_the_owner_is_dead(
        self, fleet: dict[str, Supervisor], wall: FakeWall, telling: RecordingLock
    ) -> None:
        job = job_held_by("r1", "r2")
        target = Target(wall)
        arm_everywhere(fleet, job, target)
        await fleet["r1"].shutdown()  # killed: the others still count it a member
        await wall.sleep_until(at(21))

        assert telling.asked == [("r2", at(10), at(10.25), True), ("r2", at(20), at(20.25), True)]
        assert telling.named == [None, None]  # a backup names nobody
        assert target.slots == [at(10), at(20)]


class TestTheOwnerNamesTheCurrentBackup:
    async def test_a_new_backup_once_the_old_one_left(
        self, fleet: dict[str, Supervisor], wall: FakeWall, telling: RecordingLock
    ) -> None:
        job = job_held_by("r1", "r2")
        arm_everywhere(fleet, job, Target(wall))
        await wall.sleep_until(at(11))
        await fleet["r2"].shutdown()
        for member in ("r1", "r3"):
            fleet[member].members_changed(frozenset({"r1", "r3"}))
        await wall.sleep_until(at(21))

        assert [entry[0] for entry in telling.asked] == ["r1", "r1"]
        assert telling.named == ["r2", "r3"]

    async def test_nobody_when_alone(
        self, fleet: dict[str, Supervisor], wall: FakeWall, telling: RecordingLock
    ) -> None:
        fleet["r1"].members_changed(frozenset())
        fleet["r1"].arm(job_held_by("r1", "r2"), every(PERIOD), Target(wall), resume_after=at(5))
        await wall.sleep_until(at(11))

        assert telling.named == [None]


class TestANoticeIsTakenOnlyForASlotAheadOfAJobBackedUpHere:
    @pytest.mark.parametrize(
        ("member", "uid_of", "slot", "taken"),
        [
            ("r2", "job", at(10), True),
            ("r1", "job", at(10), False),  # the owner's own job
            ("r3", "job", at(10), False),  # a job not armed here
            ("r2", "other", at(10), False),  # a uid nobody here backs up
            ("r2", "job", at(5), False),  # behind the loop
            ("r2", "job", at(10) + notices.NOTICE_AHEAD + SECOND, False),  # too far ahead
        ],
    )
    async def test_what_the_supervisor_takes(  # noqa: PLR0917 (fixtures, parameters)
        self,
        fleet: dict[str, Supervisor],
        wall: FakeWall,
        member: str,
        uid_of: str,
        slot: datetime,
        taken: bool,
    ) -> None:
        job = job_held_by("r1", "r2")
        arm_everywhere(fleet, job, Target(wall))
        await wall.sleep_until(at(9))
        uid = job.uid if uid_of == "job" else "uid-unknown"

        assert fleet[member].claimed(records.ClaimNotice(uid=uid, slot=slot)) is taken

    async def test_at_most_a_bounded_number_per_job(
        self, fleet: dict[str, Supervisor], wall: FakeWall
    ) -> None:
        job = job_held_by("r1", "r2")
        arm_everywhere(fleet, job, Target(wall))
        await wall.sleep_until(at(6))

        taken = [
            fleet["r2"].claimed(records.ClaimNotice(uid=job.uid, slot=slot))
            for slot in milliseconds_from(at(6), notices.MAX_NOTICED + 3)
        ]

        assert taken == [True] * notices.MAX_NOTICED + [False] * 3

    async def test_notices_the_loop_has_passed_are_dropped(
        self, fleet: dict[str, Supervisor], wall: FakeWall
    ) -> None:
        job = job_held_by("r1", "r2")
        arm_everywhere(fleet, job, Target(wall))
        await wall.sleep_until(at(6))
        # Slots that are none of the schedule's (stray notices): gone once the loop passes them.
        for slot in milliseconds_from(at(9), notices.MAX_NOTICED):
            assert fleet["r2"].claimed(records.ClaimNotice(uid=job.uid, slot=slot))
        await wall.sleep_until(at(11))

        assert fleet["r2"].claimed(records.ClaimNotice(uid=job.uid, slot=at(12)))


def milliseconds_from(start: datetime, count: int) -> list[datetime]:
    return [start + index * timedelta(milliseconds=1) for index in range(count)]
