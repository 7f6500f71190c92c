"""What the status writer has yet to say about each job, and what every write restates.

Holds ``Pending`` (one job's news since its last write: counts, the run records a status can
show, the newest slot claimed, conditions, and the earlier writes that are in doubt), ``Ledger``
(the pending of every job, beside the runs in progress, the next slot and the history setting
that each write restates), the trimming of run records to what a status shows
(``History.shown``), and what the controller hands in (``Condition``, ``History``).

Recording here is on the scheduler's path (every run, every slot), so it costs a few dict and
list operations and never builds a pydantic model: the wire shape is ``patch``'s business, when
a write is composed. When writes go out is ``writer``'s.
"""

import collections
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from punctual.aio import pacing
from punctual.contracts import records
from punctual.scheduling import plans, slots, timeline


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    type: str
    status: bool | None
    """True, False, or None for Unknown."""
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Shown:
    """What ``kubectl get``'s columns read from status because no one field of the spec says
    it: the schedule (``status.schedule``, ``planning.shown_schedule``) and what a run does
    (``status.target``, ``planning.shown_target``). The empty text removes a field (the spec
    is invalid)."""

    schedule: str = ""
    target: str = ""


NOTHING_SHOWN = Shown()
"""What an invalid spec shows: neither field."""


@dataclass
class Pending:
    """What this replica has to say about one job since its last write."""

    counts: collections.Counter[records.RunResult] = field(default_factory=collections.Counter)
    run_records: list[records.RunRecord] = field(default_factory=list)
    claimed: datetime | None = None
    conditions: dict[str, Condition] = field(default_factory=dict)
    observed_generation: int | None = None
    since: float = 0.0
    urgent: bool = False
    heartbeat: bool = False
    """The runs in progress are due to be stated again (with a fresh ``heartbeatTime``)."""
    run_now_token: str | None = None
    """The token of the newest run asked for by hand that started or was skipped here
    (``lastRunNowToken``)."""
    backfill: records.BackfillProgress | None = None
    """The newest progress of a backfill this replica carries out."""
    shown: Shown | None = None
    """What ``status.schedule`` and ``status.target`` are to show; None says nothing of
    them."""
    set_aside: collections.Counter[records.MissedReason] = field(
        default_factory=collections.Counter
    )
    """Slots neither run nor missed, by why (``counts.suspended``, ``counts.excluded``): no
    record of their own."""
    failures_reset: bool = False
    """The job was resumed: ``consecutiveFailures`` starts again from 0 (then counts the runs
    recorded here)."""
    in_doubt: list["Pending"] = field(default_factory=list)
    """Earlier writes that failed but may have landed, each on its own (none of them in doubt
    itself): delivered again only if the object does not show them (``settled``)."""

    def absorb(self, older: "Pending") -> None:
        """Take back what a failed write could not deliver."""
        self.counts.update(older.counts)
        self.set_aside.update(older.set_aside)
        self.run_records[:0] = older.run_records
        self.claimed = _latest(self.claimed, older.claimed)
        self.conditions = {**older.conditions, **self.conditions}
        if self.observed_generation is None:
            self.observed_generation = older.observed_generation
        self.since = min(self.since, older.since)
        self.urgent = self.urgent or older.urgent
        self.heartbeat = self.heartbeat or older.heartbeat
        self.failures_reset = self.failures_reset or older.failures_reset
        self.shown = older.shown if self.shown is None else self.shown
        self.run_now_token = self.run_now_token or older.run_now_token
        self.backfill = self.backfill or older.backfill
        self.in_doubt[:0] = older.in_doubt

    @property
    def empty(self) -> bool:
        return not (
            self.counts
            or self.set_aside
            or self.run_records
            or self.claimed
            or self.conditions
            or self.observed_generation is not None
            or self.heartbeat
            or self.failures_reset
            or self.shown is not None
            or self.run_now_token is not None
            or self.backfill is not None
        )

    def settled(self, *, landed: Callable[["Pending"], bool]) -> "Pending":
        """What to write now: this, and the writes in doubt that did not land (a copy: the
        write built on it may fail in turn). Those that did (``landed``: the object shows
        them) are forgotten."""
        self.in_doubt = [doubtful for doubtful in self.in_doubt if not landed(doubtful)]
        settled = Pending(
            counts=collections.Counter(self.counts),
            set_aside=collections.Counter(self.set_aside),
            run_records=list(self.run_records),
            claimed=self.claimed,
            conditions=dict(self.conditions),
            observed_generation=self.observed_generation,
            since=self.since,
            urgent=self.urgent,
            heartbeat=self.heartbeat,
            failures_reset=self.failures_reset,
            shown=self.shown,
            run_now_token=self.run_now_token,
            backfill=self.backfill,
        )
        for doubtful in self.in_doubt:
            settled.absorb(doubtful)
        return settled

    def doubted(self) -> "Pending":
        """This after a write of it failed in a way that may have landed."""
        fresh = dataclasses.replace(self, in_doubt=[])
        return Pending(
            since=self.since,
            urgent=self.urgent,
            in_doubt=[*([] if fresh.empty else [fresh]), *self.in_doubt],
        )


class Ledger:
    """Every job's ``Pending``, and what each write of a job restates whether or not it is new:
    its runs in progress, its next slot, its history setting."""

    def __init__(self, *, replica: str, clock: Callable[[], float]) -> None:
        self._replica = replica
        self._clock = clock
        self.pending: dict[slots.JobRef, Pending] = {}
        """In insertion order, which is the order of ``since``."""
        self.waiting: pacing.Waiting[slots.JobRef] = pacing.Waiting(group=_namespace)
        """The jobs of ``pending`` by namespace, each namespace's in the same order."""
        self.urgent: pacing.Waiting[slots.JobRef] = pacing.Waiting(group=_namespace)
        """The jobs of ``pending`` with a change to write at the next tick, by namespace."""
        self.active: collections.defaultdict[slots.JobRef, dict[datetime, records.ActiveRun]] = (
            collections.defaultdict(dict)
        )
        self.upcoming: dict[slots.JobRef, datetime] = {}
        self.history: dict[slots.JobRef, plans.History] = {}

    def note(self, job: slots.JobRef) -> Pending:
        """The job's pending, started now if there was none."""
        pending = self.pending.get(job)
        if pending is None:
            pending = self.pending[job] = Pending(since=self._clock())
            self.waiting.add(job)
        return pending

    def started(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        self.active[job][run.slot] = run
        pending = self.note(job)
        if run.token is not None:  # asked for by hand: no slot of the schedule
            pending.run_now_token = run.token
        else:
            pending.claimed = _latest(pending.claimed, run.slot)

    def finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        runs = self.active.get(job)
        if runs is not None:
            runs.pop(record.slot, None)
            if not runs:
                del self.active[job]
        pending = self.note(job)
        pending.counts[record.result] += 1
        pending.run_records.append(record)
        _trim(pending.run_records, self.history.get(job, plans.History()))
        if record.token is None:
            pending.claimed = _latest(pending.claimed, record.slot)
        elif record.started_at is None:
            # Asked for by hand and skipped (the concurrency policy, the limit of runs in
            # flight): decided as surely as one that started, so never run after a restart.
            pending.run_now_token = record.token

    def missed(
        self,
        job: slots.JobRef,
        *,
        count: int,
        newest: datetime,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        pending = self.note(job)
        pending.claimed = _latest(pending.claimed, newest)
        if not reason.missed:  # suspended or excluded: counted apart, no record in history
            pending.set_aside[reason] += count
            return
        pending.counts[records.RunResult.MISSED] += count
        pending.run_records.append(
            records.RunRecord(
                slot=newest,
                scheduled_time=newest,
                result=records.RunResult.MISSED,
                message=missed_message(count=count, newest=newest, reason=reason),
                replica=self._replica,
            )
        )

    def condition(self, job: slots.JobRef, condition: Condition, *, generation: int) -> None:
        """``condition`` is to be written at the next tick, before anything not urgent."""
        pending = self.note(job)
        pending.conditions[condition.type] = condition
        pending.observed_generation = generation
        pending.urgent = True
        self.urgent.add(job)

    def reported(self, job: slots.JobRef, condition: Condition) -> None:
        """``condition``, of what the runs reported rather than of a spec (so of no generation
        of its own), is to be written at the next tick, as the controller's are."""
        pending = self.note(job)
        pending.conditions[condition.type] = condition
        pending.urgent = True
        self.urgent.add(job)

    def show(self, job: slots.JobRef, shown: Shown) -> None:
        """``status.schedule`` and ``status.target`` are to show ``shown``, at the next tick
        with the conditions the controller sets beside them."""
        pending = self.note(job)
        pending.shown = shown
        pending.urgent = True
        self.urgent.add(job)

    def reset_failures(self, job: slots.JobRef) -> None:
        """``consecutiveFailures`` is to be 0 again (the job was resumed), at the next tick."""
        pending = self.note(job)
        pending.failures_reset = True
        pending.urgent = True
        self.urgent.add(job)

    def backfill(self, job: slots.JobRef, progress: records.BackfillProgress) -> None:
        """``progress`` is to be written; its start and its end go at the next tick."""
        pending = self.note(job)
        pending.backfill = progress
        if progress.done == 0 or progress.finished:
            pending.urgent = True
            self.urgent.add(job)

    def take(self, job: slots.JobRef) -> Pending | None:
        """The job's pending, for a write: the ledger no longer has it."""
        self.urgent.discard(job)
        self.waiting.discard(job)
        return self.pending.pop(job, None)

    def keep(self, job: slots.JobRef, undelivered: Pending) -> None:
        """Keep what a write could not deliver for the next tick, under anything newer."""
        newer = self.pending.pop(job, None)
        if newer is not None:
            newer.absorb(undelivered)
            undelivered = newer
        self.pending[job] = undelivered
        self.waiting.discard(job)
        self.waiting.add(job)
        if undelivered.urgent:
            self.urgent.add(job)

    def forget(self, job: slots.JobRef) -> None:
        for table in (self.pending, self.active, self.upcoming, self.history):
            table.pop(job, None)
        self.urgent.discard(job)
        self.waiting.discard(job)


def missed_message(
    *,
    count: int,
    newest: datetime,
    reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
) -> str:
    """What a status's Missed record, and the Warning Event beside it, say about missed slots."""
    said = f"{count} slot(s) missed, the newest {timeline.rfc3339(newest)}"
    if reason is records.MissedReason.LOCK_FORGOT:
        return (
            f"{said}: the lock's Redis started after they were due, so it cannot prove they did "
            "not run before it lost its data; not run (LockForgot)"
        )
    if reason is records.MissedReason.DISARMED:
        return (
            f"{said}: armed ahead of its time (spec.target.job.warmStart), then the job was "
            "suspended, changed or deleted before it; what was armed was removed, not run "
            "(Disarmed)"
        )
    if reason is records.MissedReason.LOCK_UNAVAILABLE:
        return (
            f"{said}: the lock could not be reached when they were due; not run (LockUnavailable)"
        )
    return said


def _namespace(job: slots.JobRef) -> str:
    return job.namespace


def _latest(first: datetime | None, second: datetime | None) -> datetime | None:
    candidates = [instant for instant in (first, second) if instant is not None]
    return max(candidates) if candidates else None


def _trim(run_records: list[records.RunRecord], history: plans.History) -> None:
    """Drop the records ``run_records`` has beyond what a status shows: the newest
    ``history.succeeded`` successes and ``history.failed`` others (a job whose status is
    written rarely would otherwise pile up a record per run). Records come oldest first."""
    if len(run_records) <= history.succeeded + history.failed:
        return
    shown = history.shown(
        reversed(run_records), succeeded=lambda record: record.result == records.RunResult.SUCCEEDED
    )
    run_records[:] = reversed(shown)
