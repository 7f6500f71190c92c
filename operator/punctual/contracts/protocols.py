"""The small protocols the scheduler is wired through: the slot lock, the executor and the
abilities it may have, the sink of run events, the lease backend. Locks, stores and targets
implement them; the scheduler (``punctual.runtime``) calls them; neither knows the other."""

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from punctual.contracts import records
from punctual.scheduling import overlap, slots

WallClock = Callable[[], datetime]
"""Returns the current wall-clock time as an aware UTC datetime."""


class LockUnavailableError(Exception):
    """The lock backend could not answer; the slot is not claimed (fail closed)."""


class LockForgotError(Exception):
    """The lock won the slot but cannot prove nobody claimed it before: its backend lost what
    it held (a Redis restarted without its data) after the slot was due. The slot is this
    replica's to count missed (reason ``LockForgot``), once across replicas; it never runs."""


class SlotLock(Protocol):
    async def claim(self, claim: records.Claim) -> bool:
        """True when this replica now owns the slot; False when another one does.

        Raises ``LockUnavailableError`` when the backend cannot tell, and ``LockForgotError``
        when it won a slot it cannot prove unclaimed.
        """
        ...


class ClaimNotices(Protocol):
    """Where a replica hears what owners tell it as a backup (``TellsBackups.hear``)."""

    def claimed(self, notice: records.ClaimNotice) -> bool:
        """The owner of the job ``notice.uid`` won the claim of ``notice.slot``: the backup
        need not claim it. True when it was taken (a job backed up here, a slot still ahead);
        False when it was ignored. Never blocks."""
        ...

    def malformed(self) -> None:
        """A message came that is no notice: it was ignored (counted; outside input)."""
        ...


@runtime_checkable
class TellsBackups(Protocol):
    """A slot lock that tells a job's backup member when a claim naming it (``Claim.backup``)
    is won, in the same step as the claim, and lets a replica hear what it is told.

    A hint, never a guarantee: a backup that heard nothing by its delay claims the slot as
    it would without it (the claim alone makes a slot run once); a notice lost or late only
    costs that claim."""

    async def hear(self, member: str, notices: ClaimNotices) -> None:
        """Until cancelled: hand ``notices`` each notice owners send ``member`` (this
        replica). Never raises for what comes in or for the backend failing: it listens
        again once the backend answers."""
        ...


class StatusCarrier(Protocol):
    """Status this replica has yet to write, handed to a write of the job's status that is made
    anyway (the kubernetes lock's claim): it rides along instead of costing a write of its own."""

    def carry(
        self, job: slots.JobRef, current: Mapping[str, Any]
    ) -> AbstractContextManager[dict[str, Any]]:
        """The job's pending status merged onto ``current``, as the fields of a status merge
        patch; ``{}`` when there is nothing to say. ``current`` is the status of the very
        version the write names as its resourceVersion precondition.

        Within the block it is the writer's alone, and no other write carries it. A block that
        ends normally delivered it; one that raises gave it back, to be written once later
        (when the write may have landed all the same, the next write first looks whether the
        object shows it).
        """
        ...


class Executor(Protocol):
    async def __call__(self, context: records.RunContext) -> records.Outcome: ...


@runtime_checkable
class Abortable(Protocol):
    """An executor whose runs go on at the target after the call is cancelled (a Job).

    The loop calls ``abort`` when it gives up on a run itself (``Replace``, or the run's
    timeout), never when the operator stops or forgets the job: a Job outlives its operator.
    """

    async def abort(self, context: records.RunContext) -> None: ...


@runtime_checkable
class SeesRuns(Protocol):
    """An executor that can tell which runs of its job are still going at the target, whoever
    started them (another replica, an earlier operator process): the concurrency policy counts
    them as well as the runs of this loop. Best effort: what the executor has seen so far."""

    def running_slots(self) -> Collection[datetime]: ...


@runtime_checkable
class NamesJobs(Protocol):
    """An executor that creates a named object per run (a Job), shown in ``status.active``."""

    def job_name(self, context: records.RunContext) -> str: ...


@runtime_checkable
class PreparesRuns(Protocol):
    """An executor with work it can do for a run before the slot is due (build and serialise the
    request it will send): the loop hands it each upcoming slot as it starts waiting for it, so
    that work is off the firing path. Best effort: a run whose slot was not prepared (a missed
    or caught-up slot) does that work itself."""

    def prepare(self, context: records.RunContext) -> None: ...


@runtime_checkable
class ArmsAhead(Protocol):
    """An executor that can set a slot's work up ahead of its time, held back at the target
    until the run's scheduled time (a Job whose pod waits at a gate): what is slow (scheduling,
    image pulls, the sandbox) happens before the slot instead of after it.

    The loop claims such a slot ``warm_lead`` ahead (the same claim and slot id as at the slot:
    exactly once is decided there) and calls ``arm``; it applies the concurrency policy at the
    slot, against what still runs then, and calls the executor as for any run, which follows
    what was armed (its creation is adopted). ``disarm`` removes what was armed when it must not
    run: the job suspended, its spec changed or deleted during the lead, or the policy at the
    slot skipping it. A slot first seen past its time is not armed: the call does it all, cold.
    """

    @property
    def warm_lead(self) -> timedelta: ...

    async def arm(self, context: records.RunContext) -> None:
        """Set up the slot's work, released at ``context.scheduled_time``; adopt what is
        there already for the same slot (another replica, or this one, armed it before)."""
        ...

    async def disarm(self, context: records.RunContext) -> None:
        """Remove what was armed for the slot, if it is there and is the slot's."""
        ...


class RunStore(Protocol):
    """Where the scheduler reports what happened. Calls must not block: buffer and flush.

    Each report does nothing here: a sink that cares for a few of them subclasses this
    protocol and overrides only those. The bodies are an explicit ``return``, not ``...``: a
    type checker reads ``...`` as abstract and would refuse a subclass that does not override
    every report.
    """

    def slot_upcoming(self, job: slots.JobRef, *, scheduled_time: datetime) -> None:
        """The loop now waits for a slot due at ``scheduled_time`` (slot plus jitter)."""
        return

    def slot_armed(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        """A slot claimed here was armed ahead at its target (``ArmsAhead``), ``run`` its run to
        be, started when armed. What follows is a ``run_started`` at its time, a
        ``run_finished`` (skipped at its time) or a ``slots_missed`` of reason ``Disarmed``."""
        return

    def run_started(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        """A run of ``job`` started (this replica claimed its slot)."""
        return

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        """A slot's fate: a run that ended, or a slot skipped or lost."""
        return

    def slots_missed(
        self,
        job: slots.JobRef,
        *,
        count: int,
        newest: datetime,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        """``count`` slots up to ``newest`` were given up (``missedRuns``), counted once, for
        ``reason``."""
        return

    def slot_overlapped(
        self, job: slots.JobRef, *, slot: datetime, policy: overlap.ConcurrencyPolicy
    ) -> None:
        """``slot`` came due while runs of the job were active or queued; ``policy`` decided."""
        return

    def backfill_progressed(self, job: slots.JobRef, progress: records.BackfillProgress) -> None:
        """A backfill of ``job`` taken by this replica came as far as ``progress``."""
        return

    def claim_skipped(self, job: slots.JobRef, *, slot: datetime) -> None:
        """This replica, ``job``'s backup, did not claim ``slot``: its owner said it had."""
        return

    def warm_start_checked(
        self, job: slots.JobRef, *, scheduled_time: datetime, not_ready: str | None
    ) -> None:
        """``WarmStartReports``: what a target armed ahead was at its gate at the run's
        ``scheduled_time`` (``not_ready`` None), or why not."""
        return


class WarmStartReports(Protocol):
    """Where a target that arms ahead (``ArmsAhead``) tells, at a run's scheduled time, whether
    what it armed was ready there: users must see why a warm run starts late (an image that
    cannot be pulled, a pod not scheduled), and that it no longer does. Never blocks. Every
    ``RunStore`` is one."""

    def warm_start_checked(
        self, job: slots.JobRef, *, scheduled_time: datetime, not_ready: str | None
    ) -> None:
        """``not_ready``: why the work armed for the run due at ``scheduled_time`` was not at
        its gate then (the pod's own reason); None: it was."""
        ...


class Warnings(Protocol):
    """Tells users, as a Warning Event on the ScheduledJob, what went wrong (aggregated per job
    and reason by the implementation; never blocks)."""

    def warn(self, job: slots.JobRef, *, reason: str, message: str) -> None: ...


class HoldsRuns(Protocol):
    """Where a run's lease is held, as a step of the run (durable runs): held as it starts, or
    from its arm ahead, released once it is recorded. Never blocks: the holder writes to the
    lease backend (``RunLeases``) on its own, and keeps trying while the backend does not
    answer. A hold that raises is a run that does not start (recorded Failed): a run is not
    left going unprotected without a word."""

    def hold(self, lease: records.Lease) -> None: ...

    def release(self, slot_id: str) -> None:
        """The run of ``slot_id`` is over and recorded (or given up): its lease goes; nothing
        happens when it is not held here."""
        ...


class RunLeases(Protocol):
    """Where leases live: all jobs' leases in one place, so that one look finds the expired
    ones of every job. Every method is one round trip (whatever the number of leases) and
    raises ``LockUnavailableError`` when the backend does not answer; the heartbeat and
    the detector then try again at their next tick."""

    async def hold(self, leases: Sequence[records.Lease], *, ttl: timedelta) -> None:
        """Create (or refresh) ``leases``, each due ``ttl`` from now on the backend's clock."""
        ...

    async def renew(self, leases: Sequence[records.Lease], *, ttl: timedelta) -> list[str]:
        """Push the deadlines of ``leases`` ``ttl`` ahead; the slot ids no longer held by their
        replica (taken over: this replica was presumed dead) come back."""
        ...

    async def release(self, leases: Sequence[records.Lease]) -> None:
        """Drop ``leases`` (their runs finished and are recorded)."""
        ...

    async def expired(self, *, limit: int, skip: int = 0) -> list[str]:
        """Slot ids of leases past their deadline, of any job, the most recently expired
        first: at most ``limit`` of them, after the first ``skip``. Leases that expired long
        ago (a day: their job is gone, nobody schedules it) are dropped on the way."""
        ...

    async def take_over(self, slot_ids: Sequence[str]) -> list[records.Lease]:
        """Atomically remove each expired lease of ``slot_ids``; the leases this caller got.
        Each goes to exactly one caller; none when it was renewed or released meanwhile."""
        ...
