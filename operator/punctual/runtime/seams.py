"""The small protocols the scheduler is wired through, and the records that cross them."""

import enum
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from punctual.scheduling import overlap, slots

WallClock = Callable[[], datetime]
"""Returns the current wall-clock time as an aware UTC datetime."""


class RunResult(enum.StrEnum):
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIMED_OUT = "TimedOut"
    SKIPPED_OVERLAP = "SkippedOverlap"
    MISSED = "Missed"
    LOST = "Lost"
    """The replica running it died (its lease expired); recorded by the replica that noticed."""


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
    run: bool = True
    """False when the slot is claimed only to count it missed, once across replicas: nothing
    runs, and a lock that acts on the target as it claims (the queue target) must not."""


class LockUnavailableError(Exception):
    """The lock backend could not answer; the slot is not claimed (fail closed)."""


class SlotLock(Protocol):
    async def claim(self, claim: Claim) -> bool:
        """True when this replica now owns the slot; False when another one does.

        Raises ``LockUnavailableError`` when the backend cannot tell.
        """
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


@dataclass(frozen=True, slots=True)
class Outcome:
    succeeded: bool
    message: str = ""
    timed_out: bool = False
    """The target itself stopped the run at its timeout (a Job's activeDeadlineSeconds)."""


class Executor(Protocol):
    async def __call__(self, context: RunContext) -> Outcome: ...


@runtime_checkable
class Abortable(Protocol):
    """An executor whose runs go on at the target after the call is cancelled (a Job).

    The loop calls ``abort`` when it gives up on a run itself (``Replace``, or the run's
    timeout), never when the operator stops or forgets the job: a Job outlives its operator.
    """

    async def abort(self, context: RunContext) -> None: ...


@runtime_checkable
class SeesRuns(Protocol):
    """An executor that can tell which runs of its job are still going at the target, whoever
    started them (another replica, an earlier operator process): the concurrency policy counts
    them as well as the runs of this loop. Best effort: what the executor has seen so far."""

    def running_slots(self) -> Collection[datetime]: ...


@runtime_checkable
class NamesJobs(Protocol):
    """An executor that creates a named object per run (a Job), shown in ``status.active``."""

    def job_name(self, context: RunContext) -> str: ...


@runtime_checkable
class PreparesRuns(Protocol):
    """An executor with work it can do for a run before the slot is due (build and serialise the
    request it will send): the loop hands it each upcoming slot as it starts waiting for it, so
    that work is off the firing path. Best effort: a run whose slot was not prepared (a missed
    or caught-up slot) does that work itself."""

    def prepare(self, context: RunContext) -> None: ...


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

    @property
    def lateness(self) -> timedelta | None:
        return None if self.started_at is None else self.started_at - self.scheduled_time

    @property
    def duration(self) -> timedelta | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return self.finished_at - self.started_at


class RunStore(Protocol):
    """Where the scheduler reports what happened. Calls must not block: buffer and flush."""

    def slot_upcoming(self, job: slots.JobRef, *, scheduled_time: datetime) -> None:
        """The loop now waits for a slot due at ``scheduled_time`` (slot plus jitter)."""
        ...

    def run_started(self, job: slots.JobRef, run: ActiveRun) -> None: ...

    def run_finished(self, job: slots.JobRef, record: RunRecord) -> None: ...

    def slots_missed(self, job: slots.JobRef, *, count: int, newest: datetime) -> None: ...

    def slot_overlapped(
        self, job: slots.JobRef, *, slot: datetime, policy: overlap.ConcurrencyPolicy
    ) -> None:
        """``slot`` came due while runs of the job were active or queued; ``policy`` decided."""
        ...
