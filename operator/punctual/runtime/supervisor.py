"""Many job loops on one event loop, sharing one wall-clock timer, with bounded shutdown."""

import asyncio
from datetime import datetime, timedelta

from punctual.contracts import protocols, records
from punctual.runtime import job_loop, timers
from punctual.scheduling import plans, slots


class Supervisor:
    def __init__(
        self,
        *,
        wall: protocols.WallClock,
        lock: protocols.SlotLock,
        store: protocols.RunStore,
        replica: str,
        stagger: timedelta = timedelta(),
        grace: timedelta = timedelta(seconds=10),
    ) -> None:
        self._wall = wall
        self._timer = timers.WallTimer(wall=wall)
        self._lock = lock
        self._store = store
        self._replica = replica
        self._stagger = stagger
        self._grace = grace
        self._loops: dict[slots.JobRef, job_loop.JobLoop] = {}

    @property
    def armed(self) -> frozenset[slots.JobRef]:
        return frozenset(self._loops)

    def active_slots(self, job: slots.JobRef) -> list[datetime]:
        loop = self._loops.get(job)
        return [] if loop is None else loop.active_slots

    def arm(
        self,
        job: slots.JobRef,
        plan: plans.JobPlan,
        executor: protocols.Executor,
        *,
        resume_after: datetime,
        missed_through: datetime | None = None,
        lock: protocols.SlotLock | None = None,
    ) -> None:
        """Schedule ``job`` (again) with ``plan``; see ``JobLoop.arm``.

        ``lock`` claims this job's slots instead of the supervisor's own lock (default).
        """
        loop = self._loops.get(job)
        if loop is None:
            loop = self._loops[job] = job_loop.JobLoop(
                job=job,
                timer=self._timer,
                wall=self._wall,
                lock=self._lock,
                store=self._store,
                replica=self._replica,
                stagger=self._stagger,
            )
        loop.arm(
            plan, executor, resume_after=resume_after, missed_through=missed_through, lock=lock
        )

    async def lost(self, lease: records.Lease) -> None:
        """A run of an armed job whose replica died, taken over by this replica (the
        ``LossDetector``'s ``on_lost``): see ``JobLoop.lost``."""
        loop = self._loops.get(lease.job)
        if loop is not None:
            loop.lost(
                lease.slot,
                replica=lease.replica,
                started_at=lease.started_at,
                attempt=lease.attempt,
            )

    def run_now(self, job: slots.JobRef, token: str) -> bool:
        """Run ``job`` once more, now, keyed by ``token``: see ``JobLoop.run_now``. False when
        ``job`` is not armed here (an invalid spec)."""
        loop = self._loops.get(job)
        return loop is not None and loop.run_now(token)

    def backfill(self, job: slots.JobRef, request: records.BackfillRequest) -> str | None:
        """Backfill ``job``: see ``JobLoop.backfill``."""
        loop = self._loops.get(job)
        if loop is None:
            return "the job is not scheduled (see its Ready condition)"
        return loop.backfill(request)

    def suspend(self, job: slots.JobRef) -> datetime | None:
        """Stop new slots of ``job``; its runs in flight go on.

        Returns the newest slot dealt with, if ``job`` was being scheduled here: the slots
        after it are the ones the suspension missed.
        """
        loop = self._loops.get(job)
        if loop is None:
            return None
        loop.stop_scheduling()
        return loop.handled_through

    async def disarm(self, job: slots.JobRef) -> None:
        """Forget ``job``: no more slots, runs cancelled within the grace period."""
        loop = self._loops.pop(job, None)
        if loop is not None:
            await loop.close(grace=self._grace, reason="job disarmed")

    async def shutdown(self) -> None:
        """Disarm every job at once, waiting at most the grace period."""
        loops, self._loops = list(self._loops.values()), {}
        await asyncio.gather(*(loop.close(grace=self._grace) for loop in loops))
