"""Many job loops on one event loop, sharing one wall-clock timer, with bounded shutdown.

With ``sharding.Sharding``, only the jobs this replica owns or backs up among the live members
(``sharding.Roles``) are scheduled here: the owner claims each slot when due, the backup
``backup_delay`` later (it wins only a slot the owner left free), the others not at all. A
membership change re-arms only the jobs whose role here changed.

The owner's claims name the job's backup (``Claim.backup``), for a lock that tells it
(``protocols.TellsBackups``); the supervisor hears what this replica is told as a backup
(``protocols.ClaimNotices``) and hands each notice to the job's loop, which then leaves that
slot to its owner.

What one namespace's jobs hold of this replica is capped, summed over its jobs
(``namespace_runs.NamespaceShares``): its runs in flight (``max_runs_in_flight_per_namespace``),
counted as runs start and end, its runs queued (``max_queued_runs_per_namespace``) and its
backfills going (``max_backfills_per_namespace``): one tenant's many jobs hold at most that many
of the replica's. The caps are per replica: with sharding, a namespace's jobs are spread over
the replicas, and each holds up to that many.
"""

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual.contracts import protocols, records
from punctual.runtime import job_loop, namespace_runs, tasks, timers
from punctual.runtime import sharding as sharding_
from punctual.scheduling import backfill, overlap, ownership, plans, slots


@dataclass(frozen=True, slots=True, kw_only=True)
class _Request:
    """What a job was armed with, kept to arm it again when its role here changes."""

    plan: plans.JobPlan
    executor: protocols.Executor
    resume_after: datetime
    suspended_through: datetime | None
    lock: protocols.SlotLock | None


@dataclass(slots=True)
class _Job:
    """What this replica keeps of one job: its loop (once made), and with sharding what it was
    armed with and its role here. Forgotten in one step (``_forget``)."""

    loop: job_loop.JobLoop | None = None
    request: _Request | None = None
    role: ownership.Role | None = None
    """None: no role decided here (without sharding, or suspended)."""


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
        sharding: sharding_.Sharding | None = None,
        max_runs_in_flight_per_namespace: int = overlap.MAX_RUNS_IN_FLIGHT_PER_NAMESPACE,
        max_queued_runs_per_namespace: int = overlap.MAX_QUEUED_RUNS_PER_NAMESPACE,
        max_backfills_per_namespace: int = backfill.MAX_BACKFILLS_PER_NAMESPACE,
        leases: protocols.HoldsRuns | None = None,
    ) -> None:
        """``leases``: where each run's lease is held (durable runs; None: none)."""
        self._wall = wall
        self._namespaces = namespace_runs.capped(
            max_runs_in_flight=max_runs_in_flight_per_namespace,
            max_queued_runs=max_queued_runs_per_namespace,
            max_backfills=max_backfills_per_namespace,
        )
        self._leases = leases
        self._timer = timers.WallTimer(wall=wall)
        self._lock = lock
        self._store = store
        self._replica = replica
        self._stagger = stagger
        self._grace = grace
        self._jobs: dict[slots.JobRef, _Job] = {}
        self._roles = sharding_.Roles(sharding) if sharding is not None else None
        """With sharding, the role here of each job kept (an index of ``_jobs``)."""
        self._stopped_listeners: list[job_loop.Stopped] = []

    def when_stopped(self, listener: job_loop.Stopped) -> None:
        """Tell ``listener`` of each job whose loop stops by itself (see ``JobLoop``)."""
        self._stopped_listeners.append(listener)

    def _stopped(self, job: slots.JobRef, reason: str, message: str) -> None:
        for listener in self._stopped_listeners:
            listener(job, reason, message)

    @property
    def armed(self) -> frozenset[slots.JobRef]:
        """The jobs scheduled here (with sharding: those this replica owns or backs up)."""
        if self._roles is None:
            return frozenset(self._jobs)
        return self._roles.held

    def leads(self, job: slots.JobRef) -> bool:
        """Whether this replica writes what every replica would say of ``job`` (its conditions,
        its Events): its owner, or every replica without sharding."""
        if self._roles is None:
            return True
        return self._role(job) == ownership.Role.OWNER

    def members_changed(self, members: frozenset[str]) -> list[slots.JobRef]:
        """The live members are now ``members``: re-arm only the jobs whose role changed.
        Returns the jobs this replica owns now and did not before."""
        roles = self._roles
        if roles is None:
            return []
        roles.members_changed(members)
        led = []
        for job, known in list(self._jobs.items()):
            if known.request is None:
                continue
            before = known.role or ownership.Role.NONE
            shares = roles.shares(job)
            if roles.role(job, shares) != before:
                self._apply(job, known.request, roles, before=before)
                if known.role == ownership.Role.OWNER:
                    led.append(job)
            elif before == ownership.Role.OWNER and known.loop is not None:  # a new backup?
                known.loop.tell(shares.backup)
        return led

    def claimed(self, notice: records.ClaimNotice) -> bool:
        """``protocols.ClaimNotices``: the owner of a job backed up here claimed a slot."""
        job = self._roles.backed_up(notice.uid) if self._roles is not None else None
        loop = self._loop_of(job) if job is not None else None
        return loop is not None and loop.notice(notice.slot)

    def malformed(self) -> None:
        """``protocols.ClaimNotices``: nothing to do here (counted by the metrics' wrapper)."""

    def active_slots(self, job: slots.JobRef) -> list[datetime]:
        loop = self._loop_of(job)
        return [] if loop is None else loop.active_slots

    def arm(
        self,
        job: slots.JobRef,
        plan: plans.JobPlan,
        executor: protocols.Executor,
        *,
        resume_after: datetime,
        suspended_through: datetime | None = None,
        lock: protocols.SlotLock | None = None,
    ) -> None:
        """Schedule ``job`` (again) with ``plan``; see ``JobLoop.arm``. With sharding, only
        if this replica owns or backs it up now; kept to arm it when that changes.

        ``lock`` claims this job's slots instead of the supervisor's own lock (default).
        Slots armed ahead under the spec before are disarmed: they must not run as it said.
        """
        known = self._loop_of(job)
        if known is not None:
            known.disarm_ahead()
        request = _Request(
            plan=plan,
            executor=executor,
            resume_after=resume_after,
            suspended_through=suspended_through,
            lock=lock,
        )
        roles = self._roles
        if roles is None:
            self._loop(job).arm(
                plan,
                executor,
                resume_after=resume_after,
                suspended_through=suspended_through,
                lock=lock,
            )
            return
        self._jobs.setdefault(job, _Job()).request = request
        role = self._assign(job, roles)
        if role == ownership.Role.NONE:
            loop = self._loop_of(job)
            if loop is not None:
                loop.stop_scheduling()
            return
        self._loop(job).arm(
            plan,
            executor,
            resume_after=resume_after,
            suspended_through=suspended_through,
            lock=lock,
            delay=roles.delay(role),
        )

    def _elsewhere(self, job: slots.JobRef) -> bool:
        """Whether ``job`` is scheduled, by other replicas only (sharding)."""
        known = self._jobs.get(job)
        return (
            known is not None
            and known.request is not None
            and self._roles is not None
            and not self._roles.holds(job)
        )

    def _role(self, job: slots.JobRef) -> ownership.Role:
        return ownership.Role.OWNER if self._roles is None else self._roles.role(job)

    def _assign(self, job: slots.JobRef, roles: sharding_.Roles) -> ownership.Role:
        """Record ``job``'s role here now; its loop (made if need be) told whom to tell."""
        shares = roles.shares(job)
        role = self._jobs.setdefault(job, _Job()).role = roles.role(job, shares)
        roles.record(job, role)
        loop = self._loop(job) if role != ownership.Role.NONE else self._loop_of(job)
        if loop is not None:
            loop.tell(shares.backup if role == ownership.Role.OWNER else None)
        return role

    def _apply(
        self,
        job: slots.JobRef,
        request: _Request,
        roles: sharding_.Roles,
        *,
        before: ownership.Role,
    ) -> None:
        """Arm or stop ``job`` for its new role. Owner and backup swap on from the slot the
        loop dealt with last (no slot between them is dropped); a job new here starts from
        now (the slots before were its former owner's and backup's, who are still armed,
        unless both are gone at once)."""
        role = self._assign(job, roles)
        loop = self._loop_of(job)
        if role == ownership.Role.NONE:
            if loop is not None:
                loop.stop_scheduling()  # runs in flight go on
            return
        handled = loop.handled_through if loop is not None else None
        if before != ownership.Role.NONE and handled is not None:
            resume_after, suspended_through = handled, None
        else:
            resume_after = max(request.resume_after, request.plan.nominal(self._wall()))
            suspended_through = None
        self._loop(job).arm(
            request.plan,
            request.executor,
            resume_after=resume_after,
            suspended_through=suspended_through,
            lock=request.lock,
            delay=roles.delay(role),
        )

    def _loop_of(self, job: slots.JobRef) -> job_loop.JobLoop | None:
        known = self._jobs.get(job)
        return None if known is None else known.loop

    def _loop(self, job: slots.JobRef) -> job_loop.JobLoop:
        """``job``'s loop, made if need be."""
        known = self._jobs.setdefault(job, _Job())
        loop = known.loop
        if loop is None:
            loop = known.loop = job_loop.JobLoop(
                job=job,
                timer=self._timer,
                wall=self._wall,
                lock=self._lock,
                store=self._store,
                replica=self._replica,
                namespaces=self._namespaces,
                leases=self._leases,
                stagger=self._stagger,
                on_stopped=self._stopped,
            )
        return loop

    async def lost(self, lease: records.Lease) -> None:
        """A run of an armed job whose replica died, taken over by this replica (the
        ``LossDetector``'s ``on_lost``): see ``JobLoop.lost``."""
        loop = self._loop_of(lease.job)
        if loop is not None:
            loop.lost(lease)

    def run_now(self, job: slots.JobRef, token: str) -> bool:
        """Run ``job`` once more, now, keyed by ``token``: see ``JobLoop.run_now``. False when
        ``job`` is not scheduled (an invalid spec); True, running nothing, when it is another
        replica's share (its owner and backup race for the token's claim)."""
        if self._elsewhere(job):
            return True
        loop = self._loop_of(job)
        return loop is not None and loop.run_now(token)

    def backfill(self, job: slots.JobRef, request: records.BackfillRequest) -> str | None:
        """Backfill ``job``: see ``JobLoop.backfill``. Nothing to do here when it is another
        replica's share: its owner and backup race for the request's claim."""
        if self._elsewhere(job):
            return None
        loop = self._loop_of(job)
        if loop is None:
            return "the job is not scheduled (see its Ready condition)"
        return loop.backfill(request)

    def suspend(self, job: slots.JobRef) -> datetime | None:
        """Stop new slots of ``job``; its runs in flight go on.

        Returns the newest slot dealt with, if ``job`` was being scheduled here: the slots
        after it are the ones the suspension missed.
        """
        known = self._jobs.get(job)
        if self._roles is not None:
            self._roles.drop(job)
        if known is None or known.loop is None:
            return None
        role = known.role or ownership.Role.OWNER
        known.request = known.role = None
        loop = known.loop
        loop.stop_scheduling()
        loop.disarm_ahead(reason=records.MissedReason.SUSPENDED)
        # A loop stopped since the job moved away knows nothing of the slots after.
        return loop.handled_through if role != ownership.Role.NONE else None

    async def disarm(self, job: slots.JobRef) -> None:
        """Forget ``job``: no more slots, slots armed ahead disarmed and runs cancelled, within
        the grace period each."""
        loop = self._forget(job)
        if loop is not None:
            await tasks.wait_for(set(loop.disarm_ahead()), grace=self._grace)
            await loop.close(grace=self._grace, reason="job disarmed")

    def _forget(self, job: slots.JobRef) -> job_loop.JobLoop | None:
        """Forget all that is kept of ``job``; its loop, if it had one, to close."""
        known = self._jobs.pop(job, None)
        if self._roles is not None:
            self._roles.drop(job)
        return None if known is None else known.loop

    async def shutdown(self, *, hand_over: bool = False) -> None:
        """Disarm every job at once, waiting at most the grace period. ``hand_over`` (the run
        leases outlive this replica): runs whose work goes on at their target are left
        unrecorded, for the replica that takes their lease over (``JobRuns.stop``)."""
        loops = [loop for job in list(self._jobs) if (loop := self._forget(job)) is not None]
        # One wait for every job's tasks: a wait per job cost a second at 10,000 jobs.
        cancelled: set[asyncio.Task[object]] = set()
        for loop in loops:
            cancelled |= loop.cancel(hand_over=hand_over)
        await tasks.wait_for(cancelled, grace=self._grace)
