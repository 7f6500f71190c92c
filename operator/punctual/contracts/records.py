"""The records that cross the contracts: what a run is told, what it returns, what becomes of
each slot, and what a lease backend keeps. Frozen: a record is a fact, passed on as it is."""

import enum
import typing
from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual.scheduling import slots


class RunResult(enum.StrEnum):
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIMED_OUT = "TimedOut"
    SKIPPED_OVERLAP = "SkippedOverlap"
    SKIPPED_IN_FLIGHT_LIMIT = "SkippedInFlightLimit"
    """Not started: the job had as many runs in flight as the operator allows one job."""
    SKIPPED_QUEUE_LIMIT = "SkippedQueueLimit"
    """Not queued: the job's namespace had as many runs queued on the replica as the operator
    allows one namespace."""
    MISSED = "Missed"
    LOST = "Lost"
    """The replica running it died (its lease expired); recorded by the replica that noticed."""
    CANCELLED = "Cancelled"
    """Ended by the operator, not by its target: replaced by a newer slot (``Replace``), its
    job deleted or no longer schedulable, or the operator stopping. No verdict on the run."""

    @property
    def ran(self) -> bool:
        """The run started at its target (the others never did: skipped, missed)."""
        return self in _RAN

    @property
    def final(self) -> bool:
        """The run came to its own end, a verdict on it: it becomes ``lastRun`` and
        ``LastRunSucceeded``, and counts toward ``suspendAfterFailures`` (reset by a success)."""
        return self in _FINAL

    @property
    def failed(self) -> bool:
        """A final verdict other than success: a Warning Event (``RunFailed``, ``RunTimedOut``,
        ``RunLost``) and one more failure in a row."""
        return self.final and self is not RunResult.SUCCEEDED

    @property
    def warns(self) -> bool:
        """Something went wrong, said at Warning level: a failure, or slots given up."""
        return self.failed or self is RunResult.MISSED

    @property
    def recorded(self) -> bool:
        """A run record carries it (a line, a ``recentRuns`` entry, a run counted by result);
        missed slots are reported as counts instead, however many they are."""
        return self is not RunResult.MISSED

    @property
    def has_duration(self) -> bool:
        """The run went from its start to its own end on the replica that records it, so its
        duration is the target's (a lost run's record comes from another replica; a cancelled
        run's end was the operator's)."""
        return self.final and self is not RunResult.LOST


_FINAL = frozenset({RunResult.SUCCEEDED, RunResult.FAILED, RunResult.TIMED_OUT, RunResult.LOST})
_RAN = _FINAL | {RunResult.CANCELLED}


class MissedReason(enum.StrEnum):
    """Why slots were given up: the reason of their Event, and said in status."""

    SLOTS_MISSED = "SlotsMissed"
    """The missed-run policy, a starting deadline or a suspension gave them up."""
    LOCK_FORGOT = "LockForgot"
    """The lock cannot prove nobody claimed them: its Redis restarted without its data after
    they were due (``LockForgotError``). They may have run before; they do not run again."""
    LOCK_UNAVAILABLE = "LockUnavailable"
    """The lock could not answer for them when they were due (``LockUnavailableError``): they
    did not run, and are counted once a claim gets an answer again."""
    DISARMED = "Disarmed"
    """Armed ahead of its time at the target (a warm start, ``protocols.ArmsAhead``), then given
    up before it: its spec changed, or it was deleted. What was armed is removed; the slot
    never runs. A count like any slot given up, not a failure: nothing ran."""
    SUSPENDED = "Suspended"
    """Due while the job was suspended (``spec.suspend``, or pause on failure), armed ahead or
    not: what was asked for, so no slot missed. Counted apart (``counts.suspended``), with no
    Warning Event and no missed metric, and never run, on resume either."""
    EXCLUDED = "Excluded"
    """Left out by the job's exclusions (``spec.exclude``, an occurrence skipped with
    ``punctual skip``): what was asked for, counted apart (``counts.excluded``) as suspended
    slots are."""

    @property
    def missed(self) -> bool:
        """The slots were missed: counted ``missed`` (and in the missed metric), with a Warning
        Event of this reason. Slots a suspension passed, or exclusions left out, are not."""
        return self not in (MissedReason.SUSPENDED, MissedReason.EXCLUDED)


class StartMode(enum.StrEnum):
    """How a run's work was started at a target that arms slots ahead (``protocols.ArmsAhead``):
    armed and released at its time by the gate's ``exec`` or by its last init container, or
    created at its time as any run (the slot was first seen too late to arm)."""

    EXEC = "Exec"
    INIT = "Init"
    COLD = "Cold"


class Trigger(enum.StrEnum):
    """Why a run happened: its schedule, or a request (``punctual.dev/run-now``)."""

    SCHEDULED = "Scheduled"
    MANUAL = "Manual"
    BACKFILL = "Backfill"


@dataclass(frozen=True, slots=True)
class ScheduledSlot:
    """A slot of the schedule, to run: its claim moves the job's high-water mark."""


@dataclass(frozen=True, slots=True)
class CountedMissed:
    """A slot claimed only to count it missed, once across replicas: nothing runs, and a lock
    that acts on the target as it claims (the queue target) must not."""


@dataclass(frozen=True, slots=True)
class RunNow:
    """The run asked for by hand with ``token`` (``punctual.dev/run-now``; the claim's
    ``slot_id`` carries it too): no slot of the schedule, it moves no high-water mark."""

    token: str


@dataclass(frozen=True, slots=True)
class BackfilledSlot:
    """One past slot of the window of the backfill ``token``: a slot that ran already, or runs
    now, is refused."""

    token: str


@dataclass(frozen=True, slots=True)
class WholeBackfill:
    """The backfill ``token`` as a whole (the claim's ``slot_id`` names it): the replica that
    wins it carries the backfill out. Nothing runs for this claim itself."""

    token: str


ClaimPurpose = ScheduledSlot | CountedMissed | RunNow | BackfilledSlot | WholeBackfill
"""What a claim is for: a lock that treats them apart matches on it, exhaustively."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A request to own one slot, exactly once across replicas."""

    job: slots.JobRef
    slot: datetime
    slot_id: str
    holder: str
    """``<replica>:<run-id>``: who holds the slot, for humans reading the lock."""
    ttl: timedelta
    scheduled_time: datetime | None = None
    """The slot plus the job's jitter (``None``: the slot itself), for locks that tell a target."""
    purpose: ClaimPurpose = ScheduledSlot()
    """What it is for: a slot of the schedule to run (the default), one to count missed, a run
    asked for by hand, a backfill's slot or a whole backfill."""
    backup: str | None = None
    """The member to tell once this claim is won, so that it does not claim the slot too: the
    job's backup, on its owner's claims of scheduled slots (sharding). A lock that tells
    backups (``protocols.TellsBackups``) does so; the others ignore it."""

    @property
    def run(self) -> bool:
        """Something runs once this claim is won (a lock acting on the target acts)."""
        match self.purpose:
            case ScheduledSlot() | RunNow() | BackfilledSlot():
                return True
            case CountedMissed() | WholeBackfill():
                return False
            case _:
                typing.assert_never(self.purpose)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimNotice:
    """What a job's owner tells its backup: it won the claim of ``slot``. A hint only."""

    uid: str
    """The job's uid."""
    slot: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """What an executor is told about the run it performs."""

    job: slots.JobRef
    slot: datetime
    slot_id: str
    """Also the idempotency key the target receives."""
    scheduled_time: datetime
    """The slot plus the job's jitter: when the run was due to start."""
    timeout: timedelta
    token: str | None = None
    """For a run asked for by hand, its ``punctual.dev/run-now`` token."""
    schedules: tuple[str, ...] = ()
    """For a job with several schedules (``spec.schedules``), the names of those that fired
    this slot (one slot, one run, however many of them land on it)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    succeeded: bool
    message: str = ""
    timed_out: bool = False
    """The target itself stopped the run at its timeout (a Job's activeDeadlineSeconds)."""
    cancelled: bool = False
    """The run's work was ended from outside it, not by itself: its Job was deleted before it
    finished (another replica's ``Replace``, the ScheduledJob's deletion, a user). Recorded
    ``RunResult.CANCELLED``, as a run the operator ended here."""
    start_mode: StartMode | None = None
    """For a target that arms slots ahead: how this run's work was started (None: no such
    target)."""


def describe_error(error: BaseException) -> str:
    """``Type: message`` of ``error`` (its type alone when it has no message): how an error is
    told in a run's message, a condition or a log line."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


@dataclass(frozen=True, slots=True, kw_only=True)
class ActiveRun:
    """A run in flight."""

    slot: datetime
    scheduled_time: datetime
    started_at: datetime
    replica: str
    job_name: str | None = None
    """For the job target: the Job the run created."""
    attempt: int = 1
    """2 for the one retry of a run recorded Lost (``spec.retryLostRuns``)."""
    token: str | None = None
    """For a run asked for by hand, its ``punctual.dev/run-now`` token."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """One slot's fate, as status and metrics report it."""

    slot: datetime
    scheduled_time: datetime
    result: RunResult
    started_at: datetime | None = None
    finished_at: datetime | None = None
    message: str = ""
    replica: str = ""
    attempt: int = 1
    """2 for the one retry of a run recorded Lost (``spec.retryLostRuns``)."""
    token: str | None = None
    """For a run asked for by hand, its ``punctual.dev/run-now`` token (its trigger Manual)."""
    backfill: str | None = None
    """For a slot run by a backfill, the backfill's token (its trigger Backfill)."""
    start_mode: StartMode | None = None
    """For a target that arms slots ahead: how the run's work was started (``Outcome``)."""
    schedules: tuple[str, ...] = ()
    """For a job with several schedules, the names of those that fired the slot
    (``RunContext.schedules``)."""

    @property
    def trigger(self) -> Trigger:
        if self.token is not None:
            return Trigger.MANUAL
        return Trigger.SCHEDULED if self.backfill is None else Trigger.BACKFILL

    @property
    def lateness(self) -> timedelta | None:
        return None if self.started_at is None else self.started_at - self.scheduled_time

    @property
    def duration(self) -> timedelta | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return self.finished_at - self.started_at


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    """One run in flight, as the lease backend keeps it."""

    job: slots.JobRef
    slot: datetime
    slot_id: str
    replica: str
    attempt: int = 1
    started_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BackfillRequest:
    """Run the slots in ``[start, end]`` once each, oldest first (``punctual.dev/backfill``)."""

    token: str
    start: datetime
    end: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class BackfillProgress:
    """How far the replica that took a backfill has come."""

    request: BackfillRequest
    replica: str
    total: int
    done: int = 0
    succeeded: int = 0
    failed: int = 0
    """Runs that started and did not succeed (Failed, TimedOut, Lost)."""
    skipped: int = 0
    """Slots not run to their end: they ran already, ran elsewhere, were skipped by the
    concurrency policy, or were cancelled (``RunResult.CANCELLED``)."""
    waiting: str | None = None
    """Why no slot of it runs yet (None: nothing holds it back): its namespace has as many
    backfills going on the replica as the operator allows one namespace."""
    finished: bool = False
