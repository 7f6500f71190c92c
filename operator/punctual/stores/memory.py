"""A run store that keeps everything in memory: for ``punctual next``-style tools and tests."""

import collections
from dataclasses import dataclass, field
from datetime import datetime

from punctual.contracts import records
from punctual.scheduling import overlap, slots


@dataclass
class JobHistory:
    armed: list[records.ActiveRun] = field(default_factory=list)
    """Slots armed ahead at their target (``slot_armed``), in order."""
    started: list[records.ActiveRun] = field(default_factory=list)
    finished: list[records.RunRecord] = field(default_factory=list)
    missed: int = 0
    newest_missed: datetime | None = None
    missed_by_reason: collections.Counter[records.MissedReason] = field(
        default_factory=collections.Counter
    )
    upcoming: datetime | None = None
    overlapped: list[datetime] = field(default_factory=list)
    skipped: list[datetime] = field(default_factory=list)
    """Slots left to the owner on its word (this replica the job's backup)."""
    backfills: list[records.BackfillProgress] = field(default_factory=list)
    """Each step of the backfills taken here, in order."""

    def results(self) -> collections.Counter[records.RunResult]:
        return collections.Counter(record.result for record in self.finished)


class MemoryStore:
    def __init__(self) -> None:
        self.jobs: collections.defaultdict[slots.JobRef, JobHistory] = collections.defaultdict(
            JobHistory
        )

    def slot_upcoming(self, job: slots.JobRef, *, scheduled_time: datetime) -> None:
        self.jobs[job].upcoming = scheduled_time

    def slot_armed(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        self.jobs[job].armed.append(run)

    def run_started(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        self.jobs[job].started.append(run)

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        self.jobs[job].finished.append(record)

    def backfill_progressed(self, job: slots.JobRef, progress: records.BackfillProgress) -> None:
        self.jobs[job].backfills.append(progress)

    def slot_overlapped(
        self, job: slots.JobRef, *, slot: datetime, policy: overlap.ConcurrencyPolicy
    ) -> None:
        self.jobs[job].overlapped.append(slot)

    def claim_skipped(self, job: slots.JobRef, *, slot: datetime) -> None:
        self.jobs[job].skipped.append(slot)

    def slots_missed(
        self,
        job: slots.JobRef,
        *,
        count: int,
        newest: datetime,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        history = self.jobs[job]
        if reason.missed:
            history.missed += count
        history.missed_by_reason[reason] += count
        history.newest_missed = newest
