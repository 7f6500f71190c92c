"""The heartbeat holds a lease for each run the loop starts, renews it, releases it when the run
is recorded, and keeps what the backend could not take; the detector hands each expired lease
it takes over to ``on_lost`` once, and goes on past a backend that does not answer."""

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from punctual.runtime import seams
from punctual.runtime.leases import Heartbeat, Lease, LeaseRules, LossDetector
from punctual.scheduling import slots

JOB = slots.JobRef(namespace="ns", name="job", uid="uid-1")
OTHER = slots.JobRef(namespace="ns", name="other", uid="uid-2")
SLOT = datetime(2026, 1, 1, tzinfo=UTC)
BROKEN = "ns/job/uid-1/broken"
FAST = LeaseRules(
    heartbeat=timedelta(milliseconds=20),
    ttl=timedelta(milliseconds=60),
    scan=timedelta(milliseconds=20),
)


class MemoryLeases:
    """``RunLeases`` in a dict, with a switch to make it unavailable."""

    def __init__(self) -> None:
        self.leases: dict[str, Lease] = {}
        self.renewals = 0
        self.expired_ids: dict[slots.JobRef, list[str]] = {}
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise seams.LockUnavailableError("redis://***@127.0.0.1:1/0: refused")

    async def hold(self, leases: Sequence[Lease], *, ttl: timedelta) -> None:
        self._check()
        self.leases.update((lease.slot_id, lease) for lease in leases)

    async def renew(self, leases: Sequence[Lease], *, ttl: timedelta) -> list[str]:
        self._check()
        self.renewals += 1
        return [lease.slot_id for lease in leases if lease.slot_id not in self.leases]

    async def release(self, leases: Sequence[Lease]) -> None:
        self._check()
        for lease in leases:
            self.leases.pop(lease.slot_id, None)

    async def expired(self, job: slots.JobRef) -> list[str]:
        self._check()
        return list(self.expired_ids.get(job, []))

    async def take_over(self, job: slots.JobRef, slot_id: str) -> Lease | None:
        self._check()
        if slot_id == BROKEN:
            raise RuntimeError("a bug in one job's leases")
        self.expired_ids[job].remove(slot_id)
        return self.leases.pop(slot_id, None)


def started(slot: datetime = SLOT) -> seams.ActiveRun:
    return seams.ActiveRun(slot=slot, scheduled_time=slot, started_at=slot, replica="r1")


def finished(slot: datetime = SLOT) -> seams.RunRecord:
    return seams.RunRecord(slot=slot, scheduled_time=slot, result=seams.RunResult.SUCCEEDED)


async def beating(heartbeat: Heartbeat, seconds: float) -> None:
    task = asyncio.create_task(heartbeat.run())
    await asyncio.sleep(seconds)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


class TestTheHeartbeat:
    async def test_holds_a_lease_for_a_run_as_soon_as_it_starts(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)

        heartbeat.run_started(JOB, started())
        await beating(heartbeat, 0.005)

        assert list(backend.leases) == [slots.slot_id(JOB, SLOT)]
        assert backend.leases[slots.slot_id(JOB, SLOT)].replica == "r1"

    async def test_renews_the_leases_it_holds_every_heartbeat(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.run_started(JOB, started())

        await beating(heartbeat, 0.11)

        assert backend.renewals >= 3

    async def test_releases_the_lease_once_the_run_is_recorded(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.run_started(JOB, started())
        await beating(heartbeat, 0.005)

        heartbeat.run_finished(JOB, finished())
        await beating(heartbeat, 0.005)

        assert backend.leases == {}
        assert heartbeat.held == frozenset()

    async def test_a_run_skipped_before_its_lease_was_written_leaves_no_lease(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)

        heartbeat.run_started(JOB, started())
        heartbeat.run_finished(JOB, finished())
        await beating(heartbeat, 0.005)

        assert backend.leases == {}

    async def test_holds_again_what_an_unavailable_backend_could_not_take(self) -> None:
        backend = MemoryLeases()
        backend.down = True
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.run_started(JOB, started())
        await beating(heartbeat, 0.03)
        assert backend.leases == {}

        backend.down = False
        await beating(heartbeat, 0.03)

        assert list(backend.leases) == [slots.slot_id(JOB, SLOT)]

    async def test_forgets_a_lease_another_replica_took_over(self) -> None:
        backend = MemoryLeases()
        heartbeat = Heartbeat(backend, replica="r1", rules=FAST)
        heartbeat.run_started(JOB, started())
        await beating(heartbeat, 0.005)

        backend.leases.clear()  # presumed dead: taken over
        await beating(heartbeat, 0.05)

        assert heartbeat.held == frozenset()

    async def test_renews_again_soon_after_the_backend_did_not_answer(self) -> None:
        backend = MemoryLeases()
        rules = LeaseRules(
            heartbeat=timedelta(milliseconds=100),
            ttl=timedelta(milliseconds=300),
            retry=timedelta(milliseconds=10),
        )
        heartbeat = Heartbeat(backend, replica="r1", rules=rules)
        heartbeat.run_started(JOB, started())
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


class TestTheLossDetector:
    async def test_hands_each_expired_lease_it_takes_over_to_on_lost_once(self) -> None:
        backend = MemoryLeases()
        lease = Lease(job=JOB, slot=SLOT, slot_id=slots.slot_id(JOB, SLOT), replica="r2")
        backend.leases[lease.slot_id] = lease
        backend.expired_ids[JOB] = [lease.slot_id]
        lost: list[Lease] = []

        async def on_lost(found: Lease) -> None:
            lost.append(found)

        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost, rules=FAST)

        assert [await detector.scan(), await detector.scan()] == [1, 0]
        assert lost == [lease]

    async def test_a_lease_another_replica_took_first_is_not_handed_on(self) -> None:
        backend = MemoryLeases()
        backend.expired_ids[JOB] = [slots.slot_id(JOB, SLOT)]  # listed, but already taken
        lost: list[Lease] = []

        async def on_lost(found: Lease) -> None:
            lost.append(found)

        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost, rules=FAST)

        assert await detector.scan() == 0
        assert lost == []

    async def test_one_jobs_failure_does_not_stop_the_others(self) -> None:
        backend = MemoryLeases()
        lease = Lease(job=OTHER, slot=SLOT, slot_id=slots.slot_id(OTHER, SLOT), replica="r2")
        backend.leases[lease.slot_id] = lease
        backend.expired_ids[OTHER] = [lease.slot_id]
        backend.expired_ids[JOB] = [BROKEN]
        lost: list[Lease] = []

        async def on_lost(found: Lease) -> None:
            lost.append(found)

        detector = LossDetector(backend, jobs=lambda: [JOB, OTHER], on_lost=on_lost, rules=FAST)

        assert await detector.scan() == 1
        assert lost == [lease]

    async def test_never_takes_over_a_lease_this_replica_holds(self) -> None:
        backend = MemoryLeases()
        lease = Lease(job=JOB, slot=SLOT, slot_id=slots.slot_id(JOB, SLOT), replica="r1")
        backend.leases[lease.slot_id] = lease
        backend.expired_ids[JOB] = [lease.slot_id]  # a stalled loop let it expire
        lost: list[Lease] = []

        async def on_lost(found: Lease) -> None:
            lost.append(found)

        detector = LossDetector(
            backend,
            jobs=lambda: [JOB],
            on_lost=on_lost,
            rules=FAST,
            held=lambda: {lease.slot_id},
        )

        assert await detector.scan() == 0
        assert lost == []
        assert list(backend.leases) == [lease.slot_id]

    async def test_after_an_outage_lets_the_live_replicas_renew_first(self) -> None:
        backend = MemoryLeases()
        lease = Lease(job=JOB, slot=SLOT, slot_id=slots.slot_id(JOB, SLOT), replica="r2")
        backend.leases[lease.slot_id] = lease
        lost: list[Lease] = []

        async def on_lost(found: Lease) -> None:
            lost.append(found)

        detector = LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost, rules=FAST)
        backend.down = True
        assert await detector.scan() == 0
        backend.down = False
        backend.expired_ids[JOB] = [lease.slot_id]  # every lease expired during the outage

        taken = [await detector.scan()]  # back: r2's heartbeat may renew its lease any moment
        await asyncio.sleep(FAST.heartbeat.total_seconds())
        taken.append(await detector.scan())  # r2 did not: it is dead

        assert taken == [0, 1]
        assert lost == [lease]


def test_a_lease_must_outlive_two_heartbeats() -> None:
    with pytest.raises(ValueError, match="two heartbeats"):
        LeaseRules(heartbeat=timedelta(seconds=5), ttl=timedelta(seconds=9))


def test_the_default_bound_is_twenty_seconds() -> None:
    assert LeaseRules().bound == timedelta(seconds=20)
