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
- Every ``scan`` (5 s) each replica lists the leases past their deadline, across all jobs, in
  one round trip whatever the number of jobs (newest first, ``page`` at a time, at most
  ``pages`` pages a scan), and takes over, in one more round trip, those of the jobs it
  schedules, atomically: exactly one replica gets each. That replica records the run ``Lost``
  (the dead replica's name on it) and, when the job's plan says so and it was the first
  attempt, runs it again (attempt 2) under the same slot id, trigger and token. A second loss
  is recorded and not retried: a run that kills its replica must not kill them all in turn.
  Leases of jobs this replica does not schedule are left to the replicas that do; those of jobs
  nobody schedules any more (deleted while their replica was dead) are dropped by the backend
  after a day.

The cost: a replica with no expired lease pays one round trip per ``scan``, however many jobs
it schedules. The pending holds go out in one round trip and the pending releases in one more,
one write in flight at a time (runs that start or end meanwhile ride in the next); a run that
ends before its hold went out costs nothing. The hold is not put off to the next heartbeat to
save more: a run is protected only from the moment its hold lands.

The bound: a run whose replica died is recorded within ``ttl + scan`` (20 s by default) of the
replica's last heartbeat, plus the status write interval to show in status (as long as fewer
than ``page × pages`` (1,000) expired leases of jobs this replica does not schedule are newer:
a scan lists no further).
``ttl`` is three heartbeats so that one slow heartbeat (a loaded event loop, a Redis blip) does
not declare a live run lost; should that happen anyway, the live replica's next renewal finds
its lease gone, and the duplicate is bounded to that slot (the target sees the same
Idempotency-Key).

An outage of the lease backend longer than ``ttl`` lets every lease expire, the live ones too:
no replica could renew. So the heartbeat tries again every ``retry`` (1 s) while the backend
does not answer, and a detector that found the backend unavailable takes nothing over until it
has answered again for one ``heartbeat``: the live replicas renew first, and only the runs of
replicas that died stay expired (recorded up to ``heartbeat + scan`` after the backend is back).
A replica never takes over a lease it holds itself (a stalled event loop let it expire): its
heartbeat renews it.

The lease is held and released as steps of the run itself (``protocols.HoldsRuns``, called by
``runs.JobRuns``): held as its run starts (or from its arm ahead), released once it is recorded,
under the run's own slot id (a run asked for by hand: its token's), so that a run taken over
is the same run, its Idempotency-Key kept. The deadlines live in the lease backend's clock
(Redis ``TIME``), never in the replicas' wall clocks, which may disagree.
"""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from datetime import timedelta

from punctual.contracts import protocols, records
from punctual.scheduling import slots

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LeaseRules:
    heartbeat: timedelta = timedelta(seconds=5)
    ttl: timedelta = timedelta(seconds=15)
    scan: timedelta = timedelta(seconds=5)
    retry: timedelta = timedelta(seconds=1)
    """How soon the heartbeat writes again what the backend did not take (unavailable)."""
    page: int = 100
    """Expired leases listed per round trip of a scan."""
    pages: int = 10
    """Round trips of listing per scan at most: more pages wait for the next scan."""

    def __post_init__(self) -> None:
        if self.ttl < 2 * self.heartbeat:
            raise ValueError("a lease must outlive at least two heartbeats")
        if self.page < 1 or self.pages < 1:
            raise ValueError("a scan must list at least one lease")

    @property
    def bound(self) -> timedelta:
        """The longest a dead replica's run stays undetected after its last heartbeat."""
        return self.ttl + self.scan


class Heartbeat(protocols.HoldsRuns):
    """``protocols.HoldsRuns``: holds a lease for every run this replica starts (or arms
    ahead), renews them, and releases each when its run is recorded. ``run()`` does the I/O;
    calls never block."""

    def __init__(
        self, leases: protocols.RunLeases, *, replica: str, rules: LeaseRules = LeaseRules()
    ) -> None:
        self._leases = leases
        self._replica = replica
        self._rules = rules
        self._running: dict[str, records.Lease] = {}
        """Runs started here and not finished (nor taken over), by slot id."""
        self._to_hold: set[str] = set()
        """Of ``_running``: not written yet (or the backend did not take them)."""
        self._held: set[str] = set()
        """Of ``_running``: written, renewed every heartbeat."""
        self._to_release: dict[str, records.Lease] = {}
        """Finished runs whose lease was (or may have been) written."""
        self._wake = asyncio.Event()
        self._stopping = False

    @property
    def held(self) -> Collection[str]:
        """Slot ids of every run in flight here, its lease written yet or not."""
        return self._running.keys()

    def hold(self, lease: records.Lease) -> None:
        """Hold ``lease`` from now: written at once, renewed every heartbeat. A slot armed
        ahead is held from its arm, and held again (refreshed) as its run starts."""
        self._to_release.pop(lease.slot_id, None)
        self._running[lease.slot_id] = lease
        self._to_hold.add(lease.slot_id)
        self._wake.set()  # hold it at once: the run is unprotected until then

    def release(self, slot_id: str) -> None:
        lease = self._running.pop(slot_id, None)
        if lease is None:
            return  # not started here, or taken over by another replica
        written = slot_id in self._held
        self._held.discard(slot_id)
        if slot_id in self._to_hold and not written:
            self._to_hold.discard(slot_id)  # never written: nothing to release
        else:
            self._to_hold.discard(slot_id)
            self._to_release[slot_id] = lease  # written, or its hold is on the wire
            self._wake.set()

    # -- the I/O ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Until ``stop`` (or cancelled): hold new leases at once, renew all every heartbeat."""
        loop = asyncio.get_running_loop()
        heartbeat, retry = self._rules.heartbeat.total_seconds(), self._rules.retry.total_seconds()
        next_renewal = loop.time() + heartbeat
        while not self._stopping:
            timeout = max(0.0, next_renewal - loop.time())
            if self._to_hold or self._to_release:  # the backend did not take them: soon again
                timeout = min(timeout, retry)
            # Not ``wait_for``: on Python 3.11 it swallows a cancellation that comes as the
            # event is set (a run starting or ending as the replica stops).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            await self._flush()
            if loop.time() >= next_renewal:
                # Not renewed (backend unavailable): again soon, so that the leases are renewed
                # as soon as it answers, before a detector takes them for a dead replica's.
                renewed = await self._renew()
                next_renewal = loop.time() + (heartbeat if renewed else retry)

    def stop(self) -> None:
        """End ``run`` at its next wake-up (now, unless a round trip is on the wire). A stop
        that cancelled ``run`` instead was seen lost at 10,000 jobs (the heartbeat went on,
        and held the replica's stop up until the process was killed)."""
        self._stopping = True
        self._wake.set()

    async def close(self) -> None:
        """Write what is pending once more (the releases of runs the shutdown cancelled and
        recorded), after ``run()`` was cancelled. Raises ``LockUnavailableError``."""
        await self._flush()
        if self._to_release:
            await self._leases.release(list(self._to_release.values()))
            self._to_release.clear()

    async def _flush(self) -> None:
        """Pending holds, then pending releases: one round trip each, at most."""
        holding = [self._running[slot_id] for slot_id in self._to_hold]
        self._to_hold = set()
        try:
            if holding:
                await self._leases.hold(holding, ttl=self._rules.ttl)
        except protocols.LockUnavailableError as error:
            logger.warning("run leases not written, trying again: %s", error)
            # Those finished meanwhile are in ``_to_release``: their hold may have landed.
            self._to_hold.update(lease.slot_id for lease in holding if self._is_running(lease))
        else:
            self._held.update(lease.slot_id for lease in holding if self._is_running(lease))
        releasing, self._to_release = self._to_release, {}
        try:
            if releasing:
                await self._leases.release(list(releasing.values()))
        except protocols.LockUnavailableError as error:
            logger.warning("run leases not released, trying again: %s", error)
            for slot_id, lease in releasing.items():
                if slot_id not in self._running:  # not started here again meanwhile
                    self._to_release.setdefault(slot_id, lease)

    def _is_running(self, lease: records.Lease) -> bool:
        """``lease`` is still the lease of a run in flight here (same slot, same attempt)."""
        return self._running.get(lease.slot_id) is lease

    async def _renew(self) -> bool:
        """Renew every lease held; False when the backend did not answer."""
        if not self._held:
            return True
        renewing = [self._running[slot_id] for slot_id in self._held]
        try:
            gone = await self._leases.renew(renewing, ttl=self._rules.ttl)
        except protocols.LockUnavailableError as error:
            logger.warning("run leases not renewed: %s", error)
            return False
        for slot_id in gone:
            lease = self._running.get(slot_id)
            if lease is None or slot_id not in self._held:
                continue  # finished meanwhile (its release is a no-op) or held again
            # Another replica presumed this one dead and took the run over (recorded it Lost,
            # maybe runs it again). This run goes on; its own record will say how it ended,
            # and its lease, now another replica's business, is neither renewed nor released.
            logger.warning(
                "the lease of %s was taken over: this replica was presumed dead", slot_id
            )
            del self._running[slot_id]
            self._held.discard(slot_id)
        return True


LostHandler = Callable[[records.Lease], Awaitable[None]]


class LossDetector:
    """Every ``scan``, takes over the expired leases of the jobs this replica schedules and
    hands each to ``on_lost`` (which records the run Lost and maybe retries it).

    ``held`` tells the slot ids of the leases this replica holds itself (``Heartbeat.held``):
    those are never taken over. After the backend did not answer, nothing is taken over until
    it has answered again for one ``heartbeat`` (see the module's docstring)."""

    def __init__(
        self,
        leases: protocols.RunLeases,
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
            try:
                await self.scan()
            except Exception:  # a bug, or a reply nobody foresaw: the next scan looks again
                logger.exception("looking for lost runs failed")

    async def scan(self) -> int:
        """One look at the expired leases of all jobs; how many lost runs this replica took
        over. One round trip when none expired, whatever the number of jobs."""
        page, taken, skip = self._rules.page, 0, 0
        try:
            expired = await self._leases.expired(limit=page)
        except protocols.LockUnavailableError as error:
            self._backend_failed(error)
            return 0
        if not self._settled():
            return 0  # live replicas renew their leases first
        scheduled: Collection[slots.JobRef] | None = None
        for listed in range(1, self._rules.pages + 1):
            if expired and scheduled is None:
                scheduled = self._jobs()
            mine = self._of(scheduled or (), expired)
            try:
                taken += await self._take_over(mine)
                if len(expired) < page or listed == self._rules.pages:
                    break
                # The others stay listed (taken ones are gone): the next page starts after them.
                skip += len(expired) - len(mine)
                expired = await self._leases.expired(limit=page, skip=skip)
            except protocols.LockUnavailableError as error:
                self._backend_failed(error)
                break
        return taken

    def _settled(self) -> bool:
        """The backend answered; False until it has for one heartbeat after an outage."""
        loop = asyncio.get_running_loop()
        if self._unavailable:
            self._unavailable, self._answering_since = False, loop.time()
        if self._answering_since is not None:
            if loop.time() - self._answering_since < self._rules.heartbeat.total_seconds():
                return False
            self._answering_since = None
        return True

    def _backend_failed(self, error: protocols.LockUnavailableError) -> None:
        self._unavailable, self._answering_since = True, None
        logger.warning("lost runs not checked: %s", error)

    def _of(self, scheduled: Collection[slots.JobRef], expired: list[str]) -> list[str]:
        """Of ``expired``, the slot ids of jobs this replica schedules and does not run."""
        held = self._held()
        mine = []
        for slot_id in expired:
            try:
                job = slots.job_of(slot_id)
            except ValueError:
                logger.warning("a run lease with a malformed slot id, left alone: %r", slot_id)
                continue
            if (
                job in scheduled and slot_id not in held
            ):  # held: alive here, the heartbeat renews it
                mine.append(slot_id)
        return mine

    async def _take_over(self, slot_ids: list[str]) -> int:
        """Take ``slot_ids`` over; hand each won to ``on_lost``; how many."""
        if not slot_ids:
            return 0
        # Those another replica took first, or renewed after all, do not come back.
        won = await self._leases.take_over(slot_ids)
        for lease in won:
            try:
                await self._on_lost(lease)
            except Exception:  # one run's trouble must not stop the others'
                logger.exception("recording the lost run of %s failed", lease.slot_id)
        return len(won)
