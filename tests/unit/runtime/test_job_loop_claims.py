"""Claims: a replica runs a slot only after claiming it, and fails closed when it cannot tell.

An ``every: 10s`` job is armed at 00:00:05: its slots are 00:00:10, 00:00:20, ...
"""

import asyncio
import gc
from collections import Counter
from datetime import datetime, timedelta

import pytest
from runtime_doubles import (
    JOB,
    LOOPTIME,
    SECOND,
    TOLERANCE,
    FakeWall,
    ForgetfulLock,
    GrantingLock,
    LosingLock,
    OutageLock,
    Target,
    UnavailableLock,
    at,
    ats,
    every,
)

from punctual.contracts import records
from punctual.locks.memory import MemoryLock
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import missed, slots
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME

PERIOD = 10 * SECOND


@pytest.fixture
def base() -> datetime:
    return at(5)


class TestAClaim:
    @pytest.fixture
    def lock(self, wall: FakeWall) -> GrantingLock:
        return GrantingLock(wall)

    async def test_is_asked_at_the_slot_for_that_slot(
        self, supervisor: Supervisor, wall: FakeWall, lock: GrantingLock
    ) -> None:
        supervisor.arm(JOB, every(PERIOD), Target(wall), resume_after=at(5))
        await wall.sleep_until(at(25))

        assert [slot for slot, _ in lock.asked] == ats(10, 20)
        for slot, asked in lock.asked:
            assert abs(asked - slot) <= TOLERANCE

    async def test_names_the_slot_the_replica_and_a_ttl(self, wall: FakeWall) -> None:
        claims: list[records.Claim] = []

        class Spy:
            async def claim(self, claim: records.Claim) -> bool:
                claims.append(claim)
                return True

        spying = Supervisor(wall=wall, lock=Spy(), store=MemoryStore(), replica="replica-a")
        try:
            spying.arm(JOB, every(PERIOD, timeout=5 * SECOND), Target(wall), resume_after=at(5))
            await wall.sleep_until(at(25))
        finally:
            await spying.shutdown()

        first, second = claims
        assert (first.job, first.slot) == (JOB, at(10))
        assert first.slot_id == slots.slot_id(JOB, at(10))
        assert first.holder.startswith("replica-a:")
        assert first.holder != second.holder  # one run id per claim
        assert first.ttl == timedelta(seconds=65)  # max(2 × 10s, 5s + 60s)


class TestALandedClaim:
    async def test_and_its_run_are_not_kept_until_the_next_slot(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(15))  # the 00:00:10 slot ran; 00:00:20 is next
        gc.collect()

        kept = [
            task.get_name()
            for task in gc.get_objects()
            if isinstance(task, asyncio.Task) and task.done() and JOB.name in task.get_name()
        ]
        assert target.finished == ats(10)
        assert kept == []


class TestALostClaim:
    @pytest.fixture
    def lock(self, wall: FakeWall) -> LosingLock:
        return LosingLock(wall, lost=ats(0, 20, 30))

    async def test_means_no_run_and_no_record(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(45))

        assert target.slots == ats(10, 40)
        assert [record.slot for record in store.jobs[JOB].finished] == ats(10, 40)
        assert store.jobs[JOB].missed == 0

    async def test_of_the_catch_up_slot_means_no_older_slot_runs_instead(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(-25))  # 3 overdue: RunOnce
        await wall.sleep_until(at(15))

        assert target.slots == ats(10)  # 00:00:00 was another replica's; 23:59:50 stays missed
        assert store.jobs[JOB].missed == 2


class TestAnUnavailableLock:
    @pytest.fixture
    def lock(self, wall: FakeWall) -> UnavailableLock:
        return UnavailableLock(wall, down_for=ats(20))

    async def test_means_no_run_for_that_slot(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(25))

        assert target.slots == ats(10)
        assert [record.slot for record in store.jobs[JOB].finished] == ats(10)

    async def test_leaves_the_loop_running(self, supervisor: Supervisor, wall: FakeWall) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(45))

        assert target.slots == ats(10, 30, 40)
        assert JOB in supervisor.armed


class SlowToAnswerLock(GrantingLock):
    """Grants every claim after ``delay``: a claim held in doubt through a Redis failover."""

    def __init__(self, wall: FakeWall, *, delay: timedelta) -> None:
        super().__init__(wall)
        self.delay = delay

    async def claim(self, claim: records.Claim) -> bool:
        await self.wall.sleep(self.delay)
        return await super().claim(claim)


class TestAClaimAnsweredLate:
    """The claim of each slot is answered 3 s late, as after a failover."""

    @pytest.fixture
    def lock(self, wall: FakeWall) -> SlowToAnswerLock:
        return SlowToAnswerLock(wall, delay=3 * SECOND)

    async def test_runs_late_within_the_starting_deadline(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        plan = every(PERIOD, starting_deadline=5 * SECOND)
        supervisor.arm(JOB, plan, target, resume_after=at(5))
        await wall.sleep_until(at(25))

        assert target.slots == ats(10, 20)
        assert store.jobs[JOB].missed == 0

    async def test_is_missed_past_the_starting_deadline(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        plan = every(PERIOD, starting_deadline=2 * SECOND)
        supervisor.arm(JOB, plan, target, resume_after=at(5))
        await wall.sleep_until(at(25))

        assert target.slots == []
        assert store.jobs[JOB].missed == 2

    async def test_without_a_deadline_runs_late(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(25))

        assert target.slots == ats(10, 20)


class TestAClaimAnsweredAfterTheNextSlotIsDue:
    """The claim of each slot is answered 12 s late: the slot 00:00:10 at 00:00:22, when the
    slot 00:00:20 is due already. It is the oldest slot due, as after a stall."""

    @pytest.fixture
    def lock(self, wall: FakeWall) -> SlowToAnswerLock:
        return SlowToAnswerLock(wall, delay=12 * SECOND)

    async def test_is_missed_when_the_policy_runs_the_newest_slot_instead(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(25))

        assert target.slots == []
        assert store.jobs[JOB].missed == 1

    async def test_runs_late_when_the_policy_catches_up(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        plan = every(PERIOD, policy=missed.MissedRunPolicy.CATCH_UP)
        supervisor.arm(JOB, plan, target, resume_after=at(5))
        await wall.sleep_until(at(25))

        assert target.slots == ats(10)
        assert target.started == [at(22)]  # its lateness honest
        assert store.jobs[JOB].missed == 0

    async def test_has_run_when_its_claim_was_the_run(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, lock: SlowToAnswerLock
    ) -> None:
        # A job claiming through a lock of its own (the queue target's: the claim enqueues).
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5), lock=lock)
        await wall.sleep_until(at(25))

        assert target.slots == ats(10)
        assert store.jobs[JOB].missed == 0


class TestSlotsDueWhileTheLockCannotAnswer:
    """The lock cannot answer from 00:00:15 to 00:00:45: the slots 20, 30 and 40 get no claim.
    Two replicas schedule the job on the same lock."""

    @pytest.fixture
    def lock(self, wall: FakeWall) -> OutageLock:
        return OutageLock(wall, down=(at(15), at(45)))

    async def test_are_counted_missed_once_it_answers_again_by_one_replica(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, lock: OutageLock
    ) -> None:
        other_store = MemoryStore()
        other = Supervisor(wall=wall, lock=lock, store=other_store, replica="replica-b")
        target = Target(wall)
        try:
            supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
            other.arm(JOB, every(PERIOD), target, resume_after=at(5))
            await wall.sleep_until(at(55))
        finally:
            await other.shutdown()

        assert target.slots == ats(10, 50)
        counted = [
            history.missed_by_reason
            for history in (store.jobs[JOB], other_store.jobs[JOB])
            if history.missed
        ]
        assert sum(counted, Counter()) == {records.MissedReason.LOCK_UNAVAILABLE: 3}

    async def test_are_counted_with_their_newest(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        supervisor.arm(JOB, every(PERIOD), Target(wall), resume_after=at(5))
        await wall.sleep_until(at(55))

        assert store.jobs[JOB].newest_missed == at(40)

    async def test_a_long_one_is_counted_whole_within_a_bounded_memory(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, lock: OutageLock
    ) -> None:
        lock.down = (at(15), at(15 + 3600))  # an hour of a job every second
        supervisor.arm(JOB, every(SECOND), Target(wall), resume_after=at(5))
        await wall.sleep_until(at(20 + 3600))

        assert store.jobs[JOB].missed_by_reason == {records.MissedReason.LOCK_UNAVAILABLE: 3600}

    async def test_a_run_asked_for_by_hand_is_not_counted(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(100 * SECOND), target, resume_after=at(5))
        await wall.sleep_until(at(16))
        assert supervisor.run_now(JOB, "token-1")  # its claim gets no answer
        await wall.sleep_until(at(105))  # the slot 00:01:40 is claimed, and runs

        assert target.slots == ats(100)
        assert store.jobs[JOB].missed == 0


class TestALockThatForgot:
    """Its Redis restarted without its data at 00:00:35: it cannot prove slots before unclaimed.
    The replica is back at 00:01:05 and resumes after 00:00:05 (a stale high-water mark)."""

    @pytest.fixture
    def base(self) -> datetime:
        return at(65)

    @pytest.fixture
    def lock(self, wall: FakeWall) -> ForgetfulLock:
        return ForgetfulLock(wall, started=at(35))

    @pytest.mark.parametrize(
        "case",
        [
            # CatchUp: each slot of the missed-run policy is claimed to run; those before the
            # start are counted missed as the lock forgot them, the others run.
            (missed.MissedRunPolicy.CATCH_UP, ats(40, 50, 60), 3, 0),
            # RunOnce: the newest runs; the older ones are given up by the policy, and counted
            # once as such (a claim only to count is won, forgotten or not).
            (missed.MissedRunPolicy.RUN_ONCE, ats(60), 0, 5),
            # Skip: all given up by the policy.
            (missed.MissedRunPolicy.SKIP, [], 0, 6),
        ],
    )
    async def test_slots_before_the_start_never_run_and_are_counted_once(
        self,
        supervisor: Supervisor,
        wall: FakeWall,
        store: MemoryStore,
        case: tuple[missed.MissedRunPolicy, list[datetime], int, int],
    ) -> None:
        policy, run, forgot, given_up = case
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD, policy=policy), target, resume_after=at(5))
        await wall.sleep_until(at(66))

        assert target.slots == run
        assert store.jobs[JOB].missed_by_reason == {
            reason: count
            for reason, count in [
                (records.MissedReason.LOCK_FORGOT, forgot),
                (records.MissedReason.SLOTS_MISSED, given_up),
            ]
            if count
        }

    async def test_a_run_asked_for_by_hand_is_refused_not_counted(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, lock: ForgetfulLock
    ) -> None:
        target = Target(wall)
        supervisor.arm(
            JOB, every(PERIOD, policy=missed.MissedRunPolicy.SKIP), target, resume_after=at(65)
        )
        lock.started = at(100)  # the server's clock says it started later than this replica's now
        assert supervisor.run_now(JOB, "token-1")
        await wall.sleep_until(at(66))

        assert target.slots == []
        assert store.jobs[JOB].missed == 0


class TestAnUnexpectedLockError:
    """A backend error the lock did not translate into ``LockUnavailableError``."""

    @pytest.fixture
    def lock(self, wall: FakeWall) -> GrantingLock:
        class BrokenOnce(GrantingLock):
            def answer(self, claim: records.Claim) -> bool:
                if claim.slot == at(20):
                    raise ConnectionError("redis: connection reset by peer")
                return True

        return BrokenOnce(wall)

    async def test_does_not_stop_the_schedule(self, supervisor: Supervisor, wall: FakeWall) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(45))

        assert target.slots == ats(10, 30, 40), "the job's loop died; the job is still armed"


class SlowAnsweringLock(GrantingLock):
    """Like ``SET NX`` over a network: the claim lands at once, the answer comes 200 ms later."""

    def __init__(self, wall: FakeWall) -> None:
        super().__init__(wall)
        self.holders: dict[str, str] = {}

    async def claim(self, claim: records.Claim) -> bool:
        won = self.holders.setdefault(claim.slot_id, claim.holder) == claim.holder
        await asyncio.sleep(0.2)
        return won


class TestAClaimInFlight:
    @pytest.fixture
    def lock(self, wall: FakeWall) -> SlowAnsweringLock:
        return SlowAnsweringLock(wall)

    async def test_is_not_lost_when_the_job_is_re_armed(
        self,
        supervisor: Supervisor,
        wall: FakeWall,
        store: MemoryStore,
        lock: SlowAnsweringLock,
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(20.1))  # this replica's claim of 00:00:20 has landed
        assert slots.slot_id(JOB, at(20)) in lock.holders

        # A spec change: the reconciler re-arms from now (or the high-water mark if later).
        supervisor.arm(JOB, every(PERIOD), target, resume_after=wall())
        await wall.sleep_until(at(35))

        accounted = target.slots + [record.slot for record in store.jobs[JOB].finished]
        assert at(20) in accounted or store.jobs[JOB].missed, (
            "00:00:20 is claimed by this replica, yet never ran and was never recorded"
        )


class StalledLock(GrantingLock):
    """Grants the claim of 00:00:10, but its answer reaches the replica only ``stall`` later,
    as for a replica paused (SIGSTOP, a long GC pause) while its claim was out."""

    def __init__(self, wall: FakeWall, *, stall: timedelta) -> None:
        super().__init__(wall)
        self.stall = stall

    async def claim(self, claim: records.Claim) -> bool:
        if claim.slot == at(10):
            await asyncio.sleep(self.stall.total_seconds())
        return True


class TestAClaimAnsweredAfterItLapsed:
    """The claim is checked right before the effect: once it may have expired, another replica
    may have claimed and run the slot, so this one gives it up."""

    @pytest.mark.parametrize(
        ("stall", "ran"),
        [
            pytest.param(timedelta(seconds=1), True, id="within-its-ttl-runs"),
            pytest.param(timedelta(minutes=12), False, id="past-its-ttl-counted-missed"),
        ],
    )  # fmt: skip
    async def test_runs_only_within_the_claims_ttl(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore, stall: timedelta, *,
        ran: bool, lock: GrantingLock,
    ) -> None:  # fmt: skip
        assert isinstance(lock, StalledLock)
        lock.stall = stall
        target = Target(wall)
        plan = every(PERIOD, timeout=timedelta(minutes=10))  # its claims last 11 minutes
        supervisor.arm(JOB, plan, target, resume_after=at(5))
        await wall.sleep_until(at(10) + stall + SECOND)

        assert (at(10) in target.slots) is ran
        # Given up, it is counted missed (with the slots due while the loop waited on it).
        assert (store.jobs[JOB].missed > 0) is not ran

    @pytest.fixture
    def lock(self, wall: FakeWall) -> GrantingLock:
        return StalledLock(wall, stall=timedelta())


class TestTheMemoryLock:
    async def test_never_lets_a_slot_run_twice_when_re_armed_from_a_stale_mark(
        self, supervisor: Supervisor, wall: FakeWall, lock: MemoryLock
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(12))

        # The high-water mark has not caught up with 00:00:10 yet: the loop sees it overdue.
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(0))
        await wall.sleep_until(at(25))

        assert target.slots == ats(10, 20)
        assert lock.claimed == {slots.slot_id(JOB, slot) for slot in ats(10, 20)}


class TestReplicaStagger:
    @pytest.fixture
    def lock(self, wall: FakeWall) -> GrantingLock:
        return GrantingLock(wall)

    @pytest.fixture
    def stagger(self) -> timedelta:
        return 2.5 * SECOND

    async def test_delays_each_claim_by_the_stagger(
        self, supervisor: Supervisor, wall: FakeWall, lock: GrantingLock
    ) -> None:
        supervisor.arm(JOB, every(PERIOD), Target(wall), resume_after=at(5))
        await wall.sleep_until(at(35))

        assert [slot for slot, _ in lock.asked] == ats(10, 20, 30)
        for slot, asked in lock.asked:
            assert abs(asked - (slot + 2.5 * SECOND)) <= TOLERANCE

    async def test_keeps_the_slot_and_its_scheduled_time(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(15))

        [context] = target.contexts
        assert (context.slot, context.scheduled_time) == (at(10), at(10))
        assert context.slot_id == slots.slot_id(JOB, at(10))
        [record] = store.jobs[JOB].finished
        assert abs(record.lateness - 2.5 * SECOND) <= TOLERANCE  # type: ignore[operator]

    async def test_does_not_count_the_slot_as_missed(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        supervisor.arm(JOB, every(PERIOD), Target(wall), resume_after=at(5))
        await wall.sleep_until(at(45))

        assert store.jobs[JOB].missed == 0
