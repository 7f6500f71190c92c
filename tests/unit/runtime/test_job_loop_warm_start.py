"""A target that arms slots ahead (a warm start) has each slot claimed its lead early, armed at
once, and run at its time under the concurrency policy of that moment; what must not run is
disarmed and counted, never recorded Failed.

An ``every: 60s`` job with a lead of 30 s is armed at 00:00:05: its first slot is 00:01:00,
claimed and armed at 00:00:30.
"""

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest
from runtime_doubles import JOB, LOOPTIME, SECOND, FakeWall, GrantingLock, Target, at, every

from punctual.contracts import protocols, records
from punctual.contracts.records import MissedReason, RunResult, StartMode
from punctual.runtime import ahead
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import missed, slots
from punctual.scheduling.overlap import ConcurrencyPolicy
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

PERIOD = 60 * SECOND
LEAD = 30 * SECOND
SLOT = at(60)
BASE_TIME = at(5)
SLOT_ID = slots.slot_id(JOB, SLOT)


@pytest.fixture
def base() -> datetime:
    return BASE_TIME


@pytest.fixture
def lock(wall: FakeWall) -> protocols.SlotLock:
    return ClaimsOnce(wall)


class ClaimsOnce(GrantingLock):
    """A shared lock: the first claim of a slot wins, every later one loses."""

    def __init__(self, wall: FakeWall) -> None:
        super().__init__(wall)
        self.claims: list[records.Claim] = []
        self.holders: dict[str, str] = {}

    def answer(self, claim: records.Claim) -> bool:
        self.claims.append(claim)
        return self.holders.setdefault(claim.slot_id, claim.holder) == claim.holder


@dataclass
class WarmTarget(Target):
    """Arms a slot (10 ms), disarms it (10 ms), aborts runs; its runs say how they started (the
    mode if it armed the slot, else Cold); it sees the runs of ``elsewhere`` as going."""

    lead: timedelta = LEAD
    armed: list[tuple[datetime, datetime]] = field(default_factory=list)
    """``(slot, wall time of the arm)``, in order."""
    disarmed: list[tuple[datetime, datetime]] = field(default_factory=list)
    """``(slot, wall time of the disarm)``, in order."""
    aborted: list[datetime] = field(default_factory=list)
    elsewhere: set[datetime] = field(default_factory=set)

    @property
    def warm_lead(self) -> timedelta:
        return self.lead

    async def arm(self, context: records.RunContext) -> None:
        await asyncio.sleep(0.01)
        self.armed.append((context.slot, self.wall()))

    async def disarm(self, context: records.RunContext) -> None:
        await asyncio.sleep(0.01)
        self.disarmed.append((context.slot, self.wall()))

    async def abort(self, context: records.RunContext) -> None:
        self.aborted.append(context.slot)

    def running_slots(self) -> set[datetime]:
        return set(self.elsewhere)

    async def __call__(self, context: records.RunContext) -> records.Outcome:
        outcome = await super().__call__(context)
        mine = context.slot in {slot for slot, _ in self.armed}
        return records.Outcome(
            outcome.succeeded,
            outcome.message,
            start_mode=StartMode.EXEC if mine else StartMode.COLD,
        )


def arm(
    supervisor: Supervisor,
    target: WarmTarget,
    *,
    resume_after: datetime = BASE_TIME,
    policy: ConcurrencyPolicy = ConcurrencyPolicy.FORBID,
) -> None:
    supervisor.arm(JOB, every(PERIOD, concurrency=policy), target, resume_after=resume_after)


def test_a_target_with_arm_disarm_and_a_lead_arms_ahead(wall: FakeWall) -> None:
    assert isinstance(WarmTarget(wall), protocols.ArmsAhead)
    assert not isinstance(Target(wall), protocols.ArmsAhead)


class TestArmingAhead:
    async def test_the_slot_is_claimed_once_and_armed_its_lead_before_it(
        self, supervisor: Supervisor, wall: FakeWall, lock: ClaimsOnce, store: MemoryStore
    ) -> None:
        target = WarmTarget(wall)
        arm(supervisor, target)
        await wall.sleep_until(at(59))

        assert [
            (claim.slot, asked) for claim, (_, asked) in zip(lock.claims, lock.asked, strict=True)
        ] == [(SLOT, at(30))]
        assert [(slot, armed.replace(microsecond=0)) for slot, armed in target.armed] == [
            (SLOT, at(30))
        ]
        [armed] = store.jobs[JOB].armed
        assert (armed.slot, armed.started_at, armed.job_name) == (SLOT, at(30), None)
        assert target.slots == []  # nothing runs before its time

    async def test_the_run_starts_at_the_slot_and_says_how_it_started(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = WarmTarget(wall, duration=SECOND)
        arm(supervisor, target)
        await wall.sleep_until(at(62))

        assert target.started == [SLOT]
        [started] = store.jobs[JOB].started
        assert started.started_at == SLOT
        [record] = store.jobs[JOB].finished
        assert (record.slot, record.result, record.lateness) == (
            SLOT,
            RunResult.SUCCEEDED,
            0 * SECOND,
        )
        assert record.start_mode == StartMode.EXEC

    async def test_each_slot_is_armed_in_turn(self, supervisor: Supervisor, wall: FakeWall) -> None:
        target = WarmTarget(wall, duration=SECOND)
        arm(supervisor, target)
        await wall.sleep_until(at(181))

        assert [slot for slot, _ in target.armed] == [at(60), at(120), at(180)]
        assert target.started == [at(60), at(120), at(180)]

    async def test_a_jittered_slot_is_armed_and_released_at_its_scheduled_time(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = WarmTarget(wall)
        plan = every(PERIOD, offset=7 * SECOND)
        supervisor.arm(JOB, plan, target, resume_after=at(5))
        await wall.sleep_until(at(68))

        assert [armed.replace(microsecond=0) for _, armed in target.armed] == [at(37)]
        assert target.contexts[0].scheduled_time == target.started[0] == at(67)

    async def test_an_arm_that_fails_still_runs_the_slot_at_its_time(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = WarmTarget(wall)

        async def broken(context: records.RunContext) -> None:
            raise RuntimeError("the API server refused the Job")

        target.arm = broken  # type: ignore[method-assign]
        arm(supervisor, target)
        await wall.sleep_until(at(61))

        assert target.started == [SLOT]
        [record] = store.jobs[JOB].finished
        assert record.start_mode == StartMode.COLD


class TestWhenTheSlotIsFirstSeenLate:
    @pytest.fixture
    def base(self) -> datetime:
        return at(45)

    async def test_within_its_lead_it_is_armed_at_once(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = WarmTarget(wall)
        arm(supervisor, target, resume_after=at(45))
        await wall.sleep_until(at(61))

        assert [(slot, armed.replace(microsecond=0)) for slot, armed in target.armed] == [
            (SLOT, at(45))
        ]
        assert target.started == [SLOT]

    async def test_past_it_it_runs_cold_and_the_record_says_so(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        wall.jump(20 * SECOND)  # 00:01:05: the slot of 00:01:00 is due, missed by 5 s
        target = WarmTarget(wall)
        arm(supervisor, target, resume_after=at(45))
        await wall.sleep_until(at(66))

        assert target.armed == []
        assert target.slots == [SLOT]
        [record] = store.jobs[JOB].finished
        assert record.start_mode == StartMode.COLD


class TestThePolicyAtTheSlot:
    async def test_forbid_with_a_run_still_going_disarms_before_the_release_and_skips(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = WarmTarget(wall, elsewhere={at(0)})
        arm(supervisor, target)
        await wall.sleep_until(at(61))

        assert target.slots == []
        [(slot, disarmed)] = target.disarmed
        assert slot == SLOT
        assert disarmed < SLOT
        [record] = store.jobs[JOB].finished
        assert (record.slot, record.result) == (SLOT, RunResult.SKIPPED_OVERLAP)
        assert record.message == "1 run(s) active, concurrencyPolicy Forbid"
        assert store.jobs[JOB].missed == 0

    async def test_forbid_runs_the_slot_when_the_run_before_ended_during_the_lead(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = WarmTarget(wall, elsewhere={at(0)})
        arm(supervisor, target)
        await wall.sleep_until(at(40))  # armed already, the run before still going
        target.elsewhere.clear()
        await wall.sleep_until(at(61))

        assert target.disarmed == []
        assert target.started == [SLOT]

    async def test_replace_aborts_the_run_before_at_the_slot_and_the_armed_one_goes_on(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = WarmTarget(wall, elsewhere={at(0)})
        arm(supervisor, target, policy=ConcurrencyPolicy.REPLACE)
        await wall.sleep_until(at(59))
        assert target.aborted == []

        await wall.sleep_until(at(61))

        assert target.aborted == [at(0)]
        assert target.disarmed == []
        assert target.started == [SLOT]


class TestGivingUpDuringTheLead:
    """Whatever gives the armed slot up, it is disarmed and counted, missed (Disarmed) or, for
    a suspension, passed while suspended (Suspended, no slot missed): it never runs, and
    nothing is recorded Failed."""

    async def assert_disarmed_and_counted(
        self,
        target: WarmTarget,
        wall: FakeWall,
        store: MemoryStore,
        reason: MissedReason = MissedReason.DISARMED,
    ) -> None:
        await wall.sleep_until(at(70))
        assert [slot for slot, _ in target.disarmed] == [SLOT]
        assert SLOT not in target.slots
        history = store.jobs[JOB]
        assert history.missed_by_reason == {reason: 1}
        assert history.missed == (1 if reason.missed else 0)
        assert history.newest_missed == SLOT
        assert [r for r in history.finished if r.slot == SLOT] == []

    async def test_a_suspension(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = WarmTarget(wall)
        arm(supervisor, target)
        await wall.sleep_until(at(45))

        supervisor.suspend(JOB)

        await self.assert_disarmed_and_counted(target, wall, store, MissedReason.SUSPENDED)

    async def test_a_spec_change_and_the_new_spec_arms_the_slots_after(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = WarmTarget(wall)
        arm(supervisor, target)
        await wall.sleep_until(at(45))

        changed = WarmTarget(wall)
        arm(supervisor, changed, resume_after=at(45))

        await self.assert_disarmed_and_counted(target, wall, store)
        assert changed.slots == []  # the slot was claimed under the old spec: not run again
        await wall.sleep_until(at(121))
        assert changed.slots == [at(120)]

    async def test_the_jobs_deletion(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = WarmTarget(wall)
        arm(supervisor, target)
        await wall.sleep_until(at(45))

        await supervisor.disarm(JOB)

        await self.assert_disarmed_and_counted(target, wall, store)

    async def test_a_suspension_in_the_last_moment_before_the_release(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = WarmTarget(wall)
        arm(supervisor, target)
        await wall.sleep_until(SLOT - ahead.DECIDED_AHEAD / 2)

        supervisor.suspend(JOB)

        await self.assert_disarmed_and_counted(target, wall, store, MissedReason.SUSPENDED)


class TestWhatIsLeftAlone:
    async def test_the_operator_stopping_leaves_the_armed_slot_to_release_itself(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = WarmTarget(wall)
        arm(supervisor, target)
        await wall.sleep_until(at(45))

        await supervisor.shutdown()

        assert target.disarmed == []
        assert store.jobs[JOB].finished == []
        assert store.jobs[JOB].missed == 0

    async def test_a_membership_change_keeps_the_slot_claimed_here(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = WarmTarget(wall)
        arm(supervisor, target)
        await wall.sleep_until(at(45))

        supervisor._loop(JOB).stop_scheduling()  # what moving the job elsewhere does here

        await wall.sleep_until(at(61))
        assert target.disarmed == []
        assert target.started == [SLOT]


class TestAReplicaThatDiedDuringTheLead:
    """This replica takes over the lease the dead one held from its arm."""

    def lease(self) -> records.Lease:
        return records.Lease(job=JOB, slot=SLOT, slot_id=SLOT_ID, replica="replica-b")

    async def test_before_the_slot_its_slot_is_armed_again_and_run_here_not_lost(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, lock: ClaimsOnce
    ) -> None:
        lock.holders[SLOT_ID] = "replica-b:1"  # the dead owner's claim
        target = WarmTarget(wall)
        arm(supervisor, target)
        await wall.sleep_until(at(50))
        assert target.armed == []  # its claim lost: another replica armed the slot

        await supervisor.lost(self.lease())
        await wall.sleep_until(at(61))

        assert [slot for slot, _ in target.armed] == [SLOT]  # adopts what is there
        assert target.started == [SLOT]
        assert [r.result for r in store.jobs[JOB].finished] == [RunResult.SUCCEEDED]

    async def test_after_the_slot_it_is_a_lost_run_as_any(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, lock: ClaimsOnce
    ) -> None:
        lock.holders[SLOT_ID] = "replica-b:1"
        target = WarmTarget(wall)
        arm(supervisor, target)
        await wall.sleep_until(at(70))

        await supervisor.lost(self.lease())

        assert target.armed == []
        [record] = store.jobs[JOB].finished
        assert record.result == RunResult.LOST


def test_missed_policy_is_untouched_by_the_lead() -> None:
    # A slot ahead of now is within any starting deadline: arming early gives nothing up.
    rules = missed.MissedRuns(starting_deadline=SECOND)
    assert missed.within_deadline(SLOT, now=SLOT - LEAD, rules=rules)
