"""Durable runs: a lease per run in flight, a heartbeat that keeps it, and a detector that finds
the runs whose replica died, so that each is recorded ``Lost`` (and, with
``spec.retryLostRuns``, run once more under the same Idempotency-Key) instead of vanishing.

Why: a replica SIGKILLed mid-run (a node dies, the OOM killer) leaves its claimed slot with no
record at all. Its lock key stops every other replica from running the slot, so the run is
neither done nor counted: ``bench/chaos.py`` shows one such slot per kill, on average.

How (see ``RunLeases`` for the storage contract):

- When a run starts, its replica holds a *lease* on it: who runs it, which attempt, since when,
  and a deadline ``ttl`` ahead (15 s by default).
- Every ``heartbeat`` (5 s) the replica renews the deadlines of all the runs it holds in one
  round trip; a finished run's lease is released.
- Every ``scan`` (5 s) each replica looks, for the jobs it schedules, for leases past their
  deadline, and takes each over atomically: exactly one replica gets it. That replica records
  the run ``Lost`` (the dead replica's name on it) and, when the job's plan says so and it was
  the first attempt, runs the slot again (attempt 2) under the same slot id. A second loss is
  recorded and not retried: a run that kills its replica must not kill them all in turn.

The bound: a run whose replica died is recorded within ``ttl + scan`` (20 s by default) of the
replica's last heartbeat, plus the status write interval to show in status. ``ttl`` is three
heartbeats so that one slow heartbeat (a loaded event loop, a Redis blip) does not declare a
live run lost; should that happen anyway, the live replica's next renewal finds its lease
gone, and the duplicate is bounded to that slot (the target sees the same Idempotency-Key).

An outage of the lease backend longer than ``ttl`` lets every lease expire, the live ones too:
no replica could renew. So the heartbeat tries again every ``retry`` (1 s) while the backend
does not answer, and a detector that found the backend unavailable takes nothing over until it
has answered again for one ``heartbeat``: the live replicas renew first, and only the runs of
replicas that died stay expired (recorded up to ``heartbeat + scan`` after the backend is back).
A replica never takes over a lease it holds itself (a stalled event loop let it expire): its
heartbeat renews it.

The heartbeat is a ``RunStore``: the loop already tells the store of every run that starts and
finishes, so holding and releasing leases needs no change to the loop. The deadlines live in
the lease backend's clock (Redis ``TIME``), never in the replicas' wall clocks, which may
disagree.
"""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from punctual.runtime import seams
from punctual.scheduling import overlap, slots

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LeaseRules:
    heartbeat: timedelta = timedelta(seconds=5)
    ttl: timedelta = timedelta(seconds=15)
    scan: timedelta = timedelta(seconds=5)
    retry: timedelta = timedelta(seconds=1)
    """How soon the heartbeat writes again what the backend did not take (unavailable)."""

    def __post_init__(self) -> None:
        if self.ttl < 2 * self.heartbeat:
            raise ValueError("a lease must outlive at least two heartbeats")

    @property
    def bound(self) -> timedelta:
        """The longest a dead replica's run stays undetected after its last heartbeat."""
        return self.ttl + self.scan


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    """One run in flight, as the lease backend keeps it."""

    job: slots.JobRef
    slot: datetime
    slot_id: str
    replica: str
    attempt: int = 1
    started_at: datetime | None = None


class RunLeases(Protocol):
    """Where leases live. Every method raises ``seams.LockUnavailableError`` when the backend
    does not answer; the heartbeat and the detector then try again at their next tick."""

    async def hold(self, leases: Sequence[Lease], *, ttl: timedelta) -> None:
        """Create (or refresh) ``leases``, each due ``ttl`` from now on the backend's clock."""
        ...

    async def renew(self, leases: Sequence[Lease], *, ttl: timedelta) -> list[str]:
        """Push the deadlines of ``leases`` ``ttl`` ahead; the slot ids no longer held by their
        replica (taken over: this replica was presumed dead) come back."""
        ...

    async def release(self, leases: Sequence[Lease]) -> None:
        """Drop ``leases`` (their runs finished and are recorded)."""
        ...

    async def expired(self, job: slots.JobRef) -> list[str]:
        """Slot ids of ``job``'s leases past their deadline."""
        ...

    async def take_over(self, job: slots.JobRef, slot_id: str) -> Lease | None:
        """Atomically remove the expired lease ``slot_id``; the lease for exactly one caller,
        ``None`` for every other (or when it was renewed or released meanwhile)."""
        ...


class Heartbeat:
    """``seams.RunStore`` that holds a lease for every run this replica starts, renews them,
    and releases each when its run is recorded. ``run()`` does the I/O; calls never block."""

    def __init__(
        self, leases: RunLeases, *, replica: str, rules: LeaseRules = LeaseRules()
    ) -> None:
        self._leases = leases
        self._replica = replica
        self._rules = rules
        self._held: dict[str, Lease] = {}
        self._to_hold: dict[str, Lease] = {}
        self._to_release: dict[str, Lease] = {}
        self._wake = asyncio.Event()

    @property
    def held(self) -> Collection[str]:
        return frozenset(self._held) | frozenset(self._to_hold)

    # -- the RunStore seam -----------------------------------------------------------------

    def slot_upcoming(self, job: slots.JobRef, *, scheduled_time: datetime) -> None:
        pass

    def run_started(self, job: slots.JobRef, run: seams.ActiveRun) -> None:
        lease = Lease(
            job=job,
            slot=run.slot,
            slot_id=slots.slot_id(job, run.slot),
            replica=self._replica,
            # ``ActiveRun.attempt`` comes with the durable-runs patch of runtime/seams.py.
            attempt=getattr(run, "attempt", 1),
            started_at=run.started_at,
        )
        self._to_release.pop(lease.slot_id, None)
        self._to_hold[lease.slot_id] = lease
        self._wake.set()  # hold it at once: the run is unprotected until then

    def run_finished(self, job: slots.JobRef, record: seams.RunRecord) -> None:
        slot_id = slots.slot_id(job, record.slot)
        lease = self._to_hold.pop(slot_id, None) or self._held.pop(slot_id, None)
        if lease is not None:
            self._to_release[slot_id] = lease
            self._wake.set()

    def slots_missed(self, job: slots.JobRef, *, count: int, newest: datetime) -> None:
        pass

    def slot_overlapped(
        self, job: slots.JobRef, *, slot: datetime, policy: overlap.ConcurrencyPolicy
    ) -> None:
        pass

    # -- the I/O ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Until cancelled: hold new leases at once, renew all every heartbeat."""
        loop = asyncio.get_running_loop()
        heartbeat, retry = self._rules.heartbeat.total_seconds(), self._rules.retry.total_seconds()
        next_renewal = loop.time() + heartbeat
        while True:
            timeout = max(0.0, next_renewal - loop.time())
            if self._to_hold or self._to_release:  # the backend did not take them: soon again
                timeout = min(timeout, retry)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=timeout)
            self._wake.clear()
            await self._flush()
            if loop.time() >= next_renewal:
                # Not renewed (backend unavailable): again soon, so that the leases are renewed
                # as soon as it answers, before a detector takes them for a dead replica's.
                renewed = await self._renew()
                next_renewal = loop.time() + (heartbeat if renewed else retry)

    async def close(self) -> None:
        """Write what is pending once more (the releases of runs the shutdown cancelled and
        recorded), after ``run()`` was cancelled. Raises ``LockUnavailableError``."""
        await self._flush()
        if self._to_release:
            await self._leases.release(list(self._to_release.values()))
            self._to_release.clear()

    async def _flush(self) -> None:
        holding, self._to_hold = self._to_hold, {}
        releasing, self._to_release = self._to_release, {}
        try:
            if holding:
                await self._leases.hold(list(holding.values()), ttl=self._rules.ttl)
            self._held.update(holding)
            if releasing:
                await self._leases.release(list(releasing.values()))
        except seams.LockUnavailableError as error:
            logger.warning("run leases not written, trying again: %s", error)
            for slot_id, lease in holding.items():
                if slot_id not in self._held:
                    self._to_hold.setdefault(slot_id, lease)
            for slot_id, lease in releasing.items():
                self._to_release.setdefault(slot_id, lease)

    async def _renew(self) -> bool:
        """Renew every lease held; False when the backend did not answer."""
        if not self._held:
            return True
        try:
            gone = await self._leases.renew(list(self._held.values()), ttl=self._rules.ttl)
        except seams.LockUnavailableError as error:
            logger.warning("run leases not renewed: %s", error)
            return False
        for slot_id in gone:
            # Another replica presumed this one dead and took the run over (recorded it Lost,
            # maybe runs it again). This run goes on; its own record will say how it ended.
            logger.warning(
                "the lease of %s was taken over: this replica was presumed dead", slot_id
            )
            self._held.pop(slot_id, None)
        return True


LostHandler = Callable[[Lease], Awaitable[None]]


class LossDetector:
    """Every ``scan``, takes over the expired leases of the jobs this replica schedules and
    hands each to ``on_lost`` (which records the run Lost and maybe retries it).

    ``held`` tells the slot ids of the leases this replica holds itself (``Heartbeat.held``):
    those are never taken over. After the backend did not answer, nothing is taken over until
    it has answered again for one ``heartbeat`` (see the module's docstring)."""

    def __init__(
        self,
        leases: RunLeases,
        *,
        jobs: Callable[[], Collection[slots.JobRef]],
        on_lost: LostHandler,
        rules: LeaseRules = LeaseRules(),
        held: Callable[[], Collection[str]] = frozenset,
    ) -> None:
        self._leases = leases
        self._jobs = jobs
        self._on_lost = on_lost
        self._rules = rules
        self._held = held
        self._unavailable = False
        self._answering_since: float | None = None
        """Loop time of the first answer after the backend was unavailable (None: no outage)."""

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self._rules.scan.total_seconds())
            await self.scan()

    async def scan(self) -> int:
        """One pass over every job; how many lost runs this replica took over."""
        taken = 0
        loop = asyncio.get_running_loop()
        settle = self._rules.heartbeat.total_seconds()
        for job in list(self._jobs()):
            try:
                expired = await self._leases.expired(job)
                if self._unavailable:
                    self._unavailable, self._answering_since = False, loop.time()
                if self._answering_since is not None:
                    if loop.time() - self._answering_since < settle:
                        continue  # live replicas renew their leases first
                    self._answering_since = None
                held = self._held()
                for slot_id in expired:
                    if slot_id in held:
                        continue  # alive here: the heartbeat renews it
                    lease = await self._leases.take_over(job, slot_id)
                    if lease is None:
                        continue  # another replica was first, or the run is alive after all
                    taken += 1
                    await self._on_lost(lease)
            except seams.LockUnavailableError as error:
                self._unavailable, self._answering_since = True, None
                logger.warning("lost runs of %s/%s not checked: %s", job.namespace, job.name, error)
            except Exception:  # one job's trouble must not stop the detection for the others
                logger.exception("checking the lost runs of %s/%s failed", job.namespace, job.name)
        return taken
