"""The heartbeat holds a lease for each run the loop starts, renews it, releases it when the run
is recorded, and keeps what the backend could not take; whatever runs together goes out
together, and a run that ends before its hold went out costs nothing. The detector looks at the
expired leases of all jobs at once, takes over those of the jobs it schedules, hands each to
``on_lost`` once, and goes on past a backend that does not answer."""

import asyncio
import collections
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import protocols
from punctual.contracts.records import Lease
from punctual.runtime.leases import Heartbeat, LeaseRules, LossDetector
from punctual.scheduling import slots

JOB = slots.JobRef(namespace="ns", name="job", uid="uid-1")
OTHER = slots.JobRef(namespace="ns", name="other", uid="uid-2")
SLOT = datetime(2026, 1, 1, tzinfo=UTC)
FAST = LeaseRules(
    heartbeat=timedelta(milliseconds=20),
    ttl=timedelta(milliseconds=60),
    scan=timedelta(milliseconds=20),
)


class MemoryLeases:
    """``RunLeases`` in a dict, with a switch to make it unavailable. ``expired_ids`` is what
    the listing shows (newest first), set by the test: it may still list a lease another
    replica took first, as a real listing may."""

    def __init__(self) -> None:
        self.leases: dict[str, Lease] = {}
        self.expired_ids: list[str] = []
        self.calls: collections.Counter[str] = collections.Counter()
        """Calls made, answered or not."""
        self.renewals = 0
        """Renewals answered."""
        self.written: list[list[str]] = []
        """The slot ids of each hold, in order."""
        self.down = False
        self.on_the_wire: asyncio.Event | None = None
        """When set by a test, a hold waits for it (its round trip takes that long)."""

    def _check(self, call: str) -> None:
        self.calls[call] += 1
        if self.down:
            raise protocols.LockUnavailableError("redis://***@127.0.0.1:1/0: refused")

    async def hold(self, leases: Sequence[Lease], *, ttl: timedelta) -> None:
        self._check("hold")
        if self.on_the_wire is not None:
            await self.on_the_wire.wait()
        self.written.append([lease.slot_id for lease in leases])
        self.leases.update((lease.slot_id, lease) for lease in leases)

    async def renew(self, leases: Sequence[Lease], *, ttl: timedelta) -> list[str]:
        self._check("renew")
        self.renewals += 1
        return [lease.slot_id for lease in leases if lease.slot_id not in self.leases]

    async def release(self, leases: Sequence[Lease]) -> None:
        self._check("release")
        for lease in leases:
            self.leases.pop(lease.slot_id, None)

    async def expired(self, *, limit: int, skip: int = 0) -> list[str]:
        self._check("expired")
        return self.expired_ids[skip : skip + limit]

    async def take_over(self, slot_ids: Sequence[str]) -> list[Lease]:
        self._check("take_over")
        taken = []
        for slot_id in slot_ids:
            if slot_id in self.expired_ids:
                self.expired_ids.remove(slot_id)
                if slot_id in self.leases:
                    taken.append(self.leases.pop(slot_id))
        return taken

    def expire(self, *leases: Lease) -> None:
        """``leases`` past their deadline, newest first."""
        for lease in leases:
            self.leases[lease.slot_id] = lease
        self.expired_ids = [lease.slot_id for lease in leases] + self.expired_ids


def started(slot: datetime = SLOT, *, attempt: int = 1) -> Lease:
    """The lease of a run started here (or armed ahead) at ``slot``."""
    return Lease(
        job=JOB,
        slot=slot,
        slot_id=slots.slot_id(JOB, slot),
        replica="r1",
        attempt=attempt,
        started_at=slot,
    )


def finished(slot: datetime = SLOT) -> str:
    """The slot id of a run recorded (or given up): its lease to release."""
    return slots.slot_id(JOB, slot)


def a_lease(job: slots.JobRef = JOB, slot: datetime = SLOT, replica: str = "r2") -> Lease:
    return Lease(job=job, slot=slot, slot_id=slots.slot_id(job, slot), replica=replica)


async def beating(heartbeat: Heartbeat, seconds: float) -> None:
    task = asyncio.create_task(heartbeat.run())
    await asyncio.sleep(seconds)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def until(condition: Callable[[], bool], seconds: float = 2.0) -> None:
    for _ in range(int(seconds / 0.001)):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("not within the time allowed")


class Recorder:
    """An ``on_lost`` that keeps what it is handed; ``failing`` jobs make it raise."""

    def __init__(self, *failing: slots.JobRef) -> None:
        self.lost: list[Lease] = []
        self.failing = failing

    async def __call__(self, lease: Lease) -> None:
        if lease.job in self.failing:
            raise RuntimeError("a bug in one job's loop")
        self.lost.append(lease)


class TestTheHeartbeat:
    async def test_holds_a_lease_for_a_run_as_soon_as_it_starts(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)

        heartbeat.hold(started())
        await beating(heartbeat, 0.005)

        assert list(backend.leases) == [slots.slot_id(JOB, SLOT)]
        assert backend.leases[slots.slot_id(JOB, SLOT)].replica == "r1"

    async def test_holds_the_runs_started_together_in_one_call(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)

        for second in range(3):
            heartbeat.hold(started(SLOT + timedelta(seconds=second)))
        await beating(heartbeat, 0.005)

        assert backend.calls["hold"] == 1
        assert len(backend.written[0]) == 3

    async def test_runs_started_while_a_hold_is_on_the_wire_ride_in_the_next_one(self) -> None:
        backend = MemoryLeases()
        backend.on_the_wire = asyncio.Event()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        task = asyncio.create_task(heartbeat.run())
        try:
            heartbeat.hold(started())
            await until(lambda: backend.calls["hold"] == 1)  # its hold is on the wire
            for second in range(1, 4):
                heartbeat.hold(started(SLOT + timedelta(seconds=second)))
            backend.on_the_wire.set()
            await until(lambda: len(backend.written) == 2)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

        assert [len(ids) for ids in backend.written] == [1, 3]

    async def test_renews_the_leases_it_holds_every_heartbeat(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.hold(started())

        await beating(heartbeat, 0.11)

        assert backend.renewals >= 3

    async def test_releases_the_lease_once_the_run_is_recorded(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.hold(started())
        await beating(heartbeat, 0.005)

        heartbeat.release(finished())
        await beating(heartbeat, 0.005)

        assert backend.leases == {}
        assert not heartbeat.held

    async def test_holds_a_slot_armed_ahead_from_its_arm_and_once_more_as_its_run_starts(
        self,
    ) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)

        heartbeat.hold(started())
        await beating(heartbeat, 0.005)
        assert list(backend.leases) == [slots.slot_id(JOB, SLOT)]

        heartbeat.hold(started())
        heartbeat.release(finished())
        await beating(heartbeat, 0.005)
        assert backend.leases == {}

    async def test_releases_a_slot_armed_ahead_and_given_up_before_its_run(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.hold(started())
        await beating(heartbeat, 0.005)

        heartbeat.release(finished())
        await beating(heartbeat, 0.005)

        assert backend.leases == {}
        assert not heartbeat.held

    async def test_releasing_a_run_it_does_not_hold_changes_nothing(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.hold(started())

        heartbeat.release(finished(SLOT + timedelta(minutes=1)))

        assert list(heartbeat.held) == [slots.slot_id(JOB, SLOT)]

    async def test_a_run_that_ends_before_its_hold_went_out_costs_no_call(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)

        heartbeat.hold(started())
        heartbeat.release(finished())
        await beating(heartbeat, 0.005)

        assert backend.leases == {}
        assert sum(backend.calls.values()) == 0

    async def test_a_run_that_ends_while_its_hold_is_on_the_wire_is_released(self) -> None:
        backend = MemoryLeases()
        backend.on_the_wire = asyncio.Event()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        task = asyncio.create_task(heartbeat.run())
        try:
            heartbeat.hold(started())
            await until(lambda: backend.calls["hold"] == 1)  # its hold is on the wire
            heartbeat.release(finished())
            backend.on_the_wire.set()
            await until(lambda: backend.calls["release"] == 1)

            assert backend.leases == {}  # else it expires and is recorded Lost after success
            assert not heartbeat.held
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def test_holds_again_what_an_unavailable_backend_could_not_take(self) -> None:
        backend = MemoryLeases()
        backend.down = True
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.hold(started())
        await beating(heartbeat, 0.03)
        assert backend.leases == {}

        backend.down = False
        await beating(heartbeat, 0.03)

        assert list(backend.leases) == [slots.slot_id(JOB, SLOT)]

    async def test_releases_again_what_an_unavailable_backend_could_not_take(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.hold(started())
        await beating(heartbeat, 0.005)
        backend.down = True
        heartbeat.release(finished())
        await beating(heartbeat, 0.03)
        assert list(backend.leases) == [slots.slot_id(JOB, SLOT)]

        backend.down = False
        await beating(heartbeat, 0.03)

        assert backend.leases == {}

    async def test_forgets_a_lease_another_replica_took_over(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.hold(started())
        await beating(heartbeat, 0.005)

        backend.leases.clear()  # presumed dead: taken over
        await beating(heartbeat, 0.05)
        heartbeat.release(finished())  # the run went on, and ends
        renewals = backend.renewals
        await beating(heartbeat, 0.05)

        assert not heartbeat.held
        assert backend.renewals == renewals  # nothing left to renew
        assert backend.calls["release"] == 0  # the lease is the taker's business now

    async def test_renews_again_soon_after_the_backend_did_not_answer(self) -> None:
        backend = MemoryLeases()
        rules = LeaseRules(
            heartbeat=timedelta(milliseconds=100),
            ttl=timedelta(milliseconds=300),
            retry=timedelta(milliseconds=10),
        )
        heartbeat = Heartbeat(backend, replica="r1", rules=rules)
        heartbeat.hold(started())
        task = asyncio.create_task(heartbeat.run())
        try:
            await asyncio.sleep(0.01)
            backend.down = True  # the renewal due at 100 ms fails
            await asyncio.sleep(0.14)
            backend.down = False
            await asyncio.sleep(0.03)

            # Renewed by 180 ms: a heartbeat later (200 ms) could be after a detector's scan.
            assert backend.renewals >= 1
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def test_stops_when_cancelled_as_a_run_wakes_it(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        task = asyncio.create_task(heartbeat.run())
        await asyncio.sleep(0.001)  # waiting for a run to hold, or the next renewal

        heartbeat.hold(started())  # the wake-up and the stop in one loop iteration
        task.cancel()
        await asyncio.wait([task], timeout=1.0)

        assert task.cancelled()

    async def test_ends_at_once_when_stopped(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        task = asyncio.create_task(heartbeat.run())
        await asyncio.sleep(0.001)

        heartbeat.hold(started())
        heartbeat.stop()
        await asyncio.wait([task], timeout=1.0)

        assert task.done()
        assert not task.cancelled()

    async def test_tells_the_attempt_of_a_retried_run(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)

        heartbeat.hold(started(attempt=2))
        await beating(heartbeat, 0.005)

        assert backend.leases[slots.slot_id(JOB, SLOT)].attempt == 2


class TestTheLossDetector:
    async def test_hands_each_expired_lease_it_takes_over_to_on_lost_once(self) -> None:
        backend = MemoryLeases()
        lease = a_lease()
        backend.expire(lease)
        on_lost = Recorder()
        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost, rules=FAST)

        assert [await detector.scan(), await detector.scan()] == [1, 0]
        assert on_lost.lost == [lease]

    async def test_looks_once_per_scan_however_many_jobs_it_schedules(self) -> None:
        backend = MemoryLeases()
        many = [slots.JobRef(namespace="ns", name=f"job-{i}", uid=f"u{i}") for i in range(1000)]
        detector = LossDetector(backend, jobs=lambda: many, on_lost=Recorder(), rules=FAST)

        await detector.scan()

        assert backend.calls == {"expired": 1}

    async def test_takes_over_the_expired_leases_of_its_jobs_in_one_call(self) -> None:
        backend = MemoryLeases()
        found = [a_lease(slot=SLOT + timedelta(minutes=m)) for m in range(5)]
        backend.expire(*found)
        on_lost = Recorder()
        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost, rules=FAST)

        assert await detector.scan() == 5
        assert on_lost.lost == found
        assert backend.calls == {"expired": 1, "take_over": 1}

    async def test_leaves_the_leases_of_jobs_it_does_not_schedule_to_those_that_do(self) -> None:
        backend = MemoryLeases()
        mine, theirs = a_lease(JOB), a_lease(OTHER)
        backend.expire(mine, theirs)
        on_lost = Recorder()
        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost, rules=FAST)

        assert await detector.scan() == 1
        assert on_lost.lost == [mine]
        assert list(backend.leases) == [theirs.slot_id]

    async def test_a_namesake_recreated_under_a_new_uid_does_not_take_the_old_ones_leases(
        self,
    ) -> None:
        backend = MemoryLeases()
        backend.expire(a_lease(JOB))
        recreated = slots.JobRef(namespace=JOB.namespace, name=JOB.name, uid="uid-new")
        detector = LossDetector(backend, jobs=lambda: [recreated], on_lost=Recorder(), rules=FAST)

        assert await detector.scan() == 0

    async def test_pages_past_a_page_full_of_other_jobs_leases(self) -> None:
        backend = MemoryLeases()
        mine = a_lease(JOB)
        theirs = [a_lease(OTHER, slot=SLOT + timedelta(minutes=m)) for m in range(1, 3)]
        backend.expire(*theirs, mine)  # theirs expired after mine: listed first
        on_lost = Recorder()
        rules = LeaseRules(page=2, pages=3)
        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost, rules=rules)

        assert await detector.scan() == 1
        assert on_lost.lost == [mine]
        assert backend.calls["expired"] == 2

    async def test_lists_at_most_its_pages_in_one_scan(self) -> None:
        backend = MemoryLeases()
        backend.expire(*(a_lease(OTHER, slot=SLOT + timedelta(minutes=m)) for m in range(10)))
        rules = LeaseRules(page=2, pages=3)
        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=Recorder(), rules=rules)

        await detector.scan()

        assert backend.calls["expired"] == 3

    async def test_a_lease_another_replica_took_first_is_not_handed_on(self) -> None:
        backend = MemoryLeases()
        backend.expired_ids = [slots.slot_id(JOB, SLOT)]  # listed, but already taken
        on_lost = Recorder()
        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost, rules=FAST)

        assert await detector.scan() == 0
        assert on_lost.lost == []

    async def test_one_lost_runs_failure_does_not_stop_the_others(self) -> None:
        backend = MemoryLeases()
        other = a_lease(OTHER)
        backend.expire(a_lease(JOB), other)
        on_lost = Recorder(JOB)
        detector = LossDetector(backend, jobs=lambda: [JOB, OTHER], on_lost=on_lost, rules=FAST)

        assert await detector.scan() == 2
        assert on_lost.lost == [other]

    async def test_a_scan_that_fails_unexpectedly_does_not_stop_the_next_ones(self) -> None:
        backend = MemoryLeases()
        lease = a_lease()
        backend.expire(lease)
        listed = backend.expired
        failures = [RuntimeError("a reply nobody foresaw")]

        async def expired_failing_once(*, limit: int, skip: int = 0) -> list[str]:
            if failures:
                raise failures.pop()
            return await listed(limit=limit, skip=skip)

        backend.expired = expired_failing_once  # type: ignore[method-assign]
        on_lost = Recorder()
        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost, rules=FAST)
        task = asyncio.create_task(detector.run())
        try:
            await until(lambda: on_lost.lost == [lease])
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        assert not failures

    async def test_leaves_alone_a_lease_whose_slot_id_it_cannot_read(self) -> None:
        backend = MemoryLeases()
        lease = a_lease()
        backend.expire(lease)
        backend.expired_ids.insert(0, "not/a/slot/id")
        on_lost = Recorder()
        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost, rules=FAST)

        assert await detector.scan() == 1
        assert on_lost.lost == [lease]

    async def test_never_takes_over_a_lease_this_replica_holds(self) -> None:
        backend = MemoryLeases()
        lease = a_lease(replica="r1")
        backend.expire(lease)  # a stalled loop let it expire
        on_lost = Recorder()
        detector = LossDetector(
            backend,
            jobs=lambda: [JOB],
            on_lost=on_lost,
            rules=FAST,
            held=lambda: {lease.slot_id},
        )

        assert await detector.scan() == 0
        assert on_lost.lost == []
        assert list(backend.leases) == [lease.slot_id]

    async def test_never_takes_over_a_run_of_its_own_heartbeat(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.hold(started())
        await beating(heartbeat, 0.005)
        backend.expired_ids = [slots.slot_id(JOB, SLOT)]  # a stalled loop let it expire
        detector = LossDetector(
            backend, jobs=lambda: [JOB], on_lost=Recorder(), rules=FAST, held=lambda: heartbeat.held
        )

        assert await detector.scan() == 0

    async def test_after_an_outage_lets_the_live_replicas_renew_first(self) -> None:
        backend = MemoryLeases()
        lease = a_lease()
        backend.leases[lease.slot_id] = lease
        on_lost = Recorder()
        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost, rules=FAST)
        backend.down = True
        assert await detector.scan() == 0
        backend.down = False
        backend.expire(lease)  # every lease expired during the outage

        taken = [await detector.scan()]  # back: r2's heartbeat may renew its lease any moment
        await asyncio.sleep(FAST.heartbeat.total_seconds())
        taken.append(await detector.scan())  # r2 did not: it is dead

        assert taken == [0, 1]
        assert on_lost.lost == [lease]


def test_a_lease_must_outlive_two_heartbeats() -> None:
    with pytest.raises(ValueError, match="two heartbeats"):
        LeaseRules(heartbeat=timedelta(seconds=5), ttl=timedelta(seconds=9))


def test_the_default_bound_is_twenty_seconds() -> None:
    assert LeaseRules().bound == timedelta(seconds=20)
