"""The firing: one run as decided, the record that travels from that decision to its record.

A run is decided in one of five ways: a slot of the schedule comes due, slots are given up
(missed), a user asks for a run by hand (``punctual.dev/run-now``), a backfill runs a past slot,
or a lost run is tried once more. Each makes one ``Firing`` there, and every later step
reads what the run is from it: the claim's key and purpose, the executor's context (its slot id
is the target's Idempotency-Key), the lease, the ``ActiveRun`` and ``RunRecord`` that status,
metrics and Events are written from. Nothing downstream rebuilds it from a bare instant.
"""

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual.contracts import records
from punctual.scheduling import plans, slots


@dataclass(frozen=True, slots=True, kw_only=True)
class Firing:
    """One run of one job, as decided: which, when, why, which attempt."""

    job: slots.JobRef
    slot: datetime
    """The nominal slot; for a run asked for by hand, when it was asked for."""
    slot_id: str
    """The key of its claim and of its lease, and the Idempotency-Key its target receives."""
    scheduled_time: datetime
    """The slot plus the job's jitter: when the run is due to start (a run asked for by hand
    has no jitter)."""
    trigger: records.Trigger = records.Trigger.SCHEDULED
    token: str | None = None
    """The request's token: the ``punctual.dev/run-now`` token of a ``Manual`` run, the
    ``punctual.dev/backfill`` token of a ``Backfill`` one; None for a ``Scheduled`` run."""
    attempt: int = 1
    """2 for the one retry of a run recorded Lost (``spec.retryLostRuns``)."""
    schedules: tuple[str, ...] = ()
    """For a job with several schedules (``spec.schedules``), the names of those that fired
    the slot."""

    @property
    def run_now_token(self) -> str | None:
        return self.token if self.trigger is records.Trigger.MANUAL else None

    @property
    def backfill_token(self) -> str | None:
        return self.token if self.trigger is records.Trigger.BACKFILL else None

    @property
    def purpose(self) -> records.ClaimPurpose:
        """What the claim to run it is for."""
        if self.token is None:
            return records.ScheduledSlot()
        if self.trigger is records.Trigger.MANUAL:
            return records.RunNow(self.token)
        return records.BackfilledSlot(self.token)

    def retried(self) -> "Firing":
        """The same run tried once more (after it was lost): its identity, token and key kept."""
        return dataclasses.replace(self, attempt=self.attempt + 1)

    def claim(
        self, *, holder: str, ttl: timedelta, run: bool = True, backup: str | None = None
    ) -> records.Claim:
        """Its claim: to run it, or (``run`` false) only to count its slot missed."""
        return records.Claim(
            job=self.job,
            slot=self.slot,
            slot_id=self.slot_id,
            holder=holder,
            ttl=ttl,
            scheduled_time=self.scheduled_time,
            purpose=self.purpose if run else records.CountedMissed(),
            backup=backup,
        )

    def context(self, *, timeout: timedelta) -> records.RunContext:
        """What its executor is told."""
        return records.RunContext(
            job=self.job,
            slot=self.slot,
            slot_id=self.slot_id,
            scheduled_time=self.scheduled_time,
            timeout=timeout,
            token=self.run_now_token,
            schedules=self.schedules,
        )

    def active_run(
        self, *, started_at: datetime, replica: str, job_name: str | None
    ) -> records.ActiveRun:
        return records.ActiveRun(
            slot=self.slot,
            scheduled_time=self.scheduled_time,
            started_at=started_at,
            replica=replica,
            job_name=job_name,
            attempt=self.attempt,
            token=self.run_now_token,
        )

    def lease(self, *, replica: str, started_at: datetime) -> records.Lease:
        return records.Lease(
            job=self.job,
            slot=self.slot,
            slot_id=self.slot_id,
            replica=replica,
            attempt=self.attempt,
            started_at=started_at,
        )

    def record(
        self,
        result: records.RunResult,
        *,
        replica: str,
        message: str = "",
        started_at: datetime | None = None,
        finished_at: datetime | None = None,
        start_mode: records.StartMode | None = None,
    ) -> records.RunRecord:
        """Its one record: what became of it."""
        return records.RunRecord(
            slot=self.slot,
            scheduled_time=self.scheduled_time,
            result=result,
            started_at=started_at,
            finished_at=finished_at,
            message=message,
            replica=replica,
            attempt=self.attempt,
            token=self.run_now_token,
            backfill=self.backfill_token,
            start_mode=start_mode,
            schedules=self.schedules,
        )


def scheduled(job: slots.JobRef, slot: datetime, plan: plans.JobPlan) -> Firing:
    """A slot of the job's schedule (due, given up, or armed ahead)."""
    return Firing(
        job=job,
        slot=slot,
        slot_id=slots.slot_id(job, slot),
        scheduled_time=slot + plan.offset,
        schedules=plan.fired_by(slot),
    )


def asked(job: slots.JobRef, token: str, *, at: datetime) -> Firing:
    """The run asked for by hand with ``token`` at ``at`` (this replica's clock, to the
    millisecond as every slot): named by its token, the same on every replica."""
    when = at.replace(microsecond=at.microsecond // 1000 * 1000)
    return Firing(
        job=job,
        slot=when,
        slot_id=slots.run_now_slot_id(job, token),
        scheduled_time=when,
        trigger=records.Trigger.MANUAL,
        token=token,
    )


def backfilled(job: slots.JobRef, slot: datetime, plan: plans.JobPlan, token: str) -> Firing:
    """A past slot of the window of the backfill ``token``: the slot's own id, so that a slot
    that ran already is refused."""
    return dataclasses.replace(
        scheduled(job, slot, plan), trigger=records.Trigger.BACKFILL, token=token
    )


def of_lease(lease: records.Lease, plan: plans.JobPlan | None) -> Firing:
    """The run a lease was held for, as another replica took it over: a run asked for by hand
    keeps its token (its slot id carries it); a slot of the schedule is one again (``plan``,
    the job's plan now, gives its jitter and schedules; None: the job is armed no more)."""
    token = slots.run_now_token(lease.slot_id)
    if token is not None:
        return dataclasses.replace(asked(lease.job, token, at=lease.slot), attempt=lease.attempt)
    if plan is None:
        return Firing(
            job=lease.job,
            slot=lease.slot,
            slot_id=lease.slot_id,
            scheduled_time=lease.slot,
            attempt=lease.attempt,
        )
    return dataclasses.replace(scheduled(lease.job, lease.slot, plan), attempt=lease.attempt)
