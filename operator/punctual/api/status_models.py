"""The status of a ScheduledJob as pydantic models: what the operator observed (readiness, the
next and last slots, recent runs, runs in progress, counts per result).

The CRD's ``status`` schema is generated from them (``punctual crd``), and the status writer
(``punctual.stores.status.patch``) dumps what a replica states through them, so what the
operator writes is what the API server checks. Like the spec's (``punctual.api.models``), they
are built on ``punctual.api.fields``; the conditions are ``punctual.api.condition_models``'.
"""

import pydantic

from punctual.api import condition_models, fields
from punctual.contracts import records

SCHEDULE_SHOWN_MAX = 256
"""The longest ``status.schedule``: room for the longest ``spec.schedule`` and a prefix."""
TARGET_SHOWN_MAX = 64
"""The longest ``status.target``: a kind, and for the queue target ``:`` and its format."""


class RunRecord(fields.ApiModel):
    """One slot's fate."""

    slot: fields.Timestamp = pydantic.Field(
        description="The slot: the nominal fire time (RFC 3339, UTC) the run belongs to, before "
        "jitter. The idempotency key sent to targets is <namespace>/<name>/<uid>/<unix "
        "milliseconds of the slot>.",
    )
    scheduled_time: fields.Timestamp = pydantic.Field(
        description="When the run was due to start: the slot plus this ScheduledJob's jitter.",
    )
    started_at: fields.Timestamp | None = pydantic.Field(
        default=None,
        description="When the run started; unset for slots that never ran (SkippedOverlap, "
        "SkippedInFlightLimit, SkippedQueueLimit, Missed).",
    )
    finished_at: fields.Timestamp | None = pydantic.Field(
        default=None, description="When the run finished; unset for slots that never ran."
    )
    lateness_millis: fields.WholeNumber | None = pydantic.Field(
        default=None,
        description="startedAt minus scheduledTime, in whole milliseconds.",
    )
    # No minimum: a wall-clock step back during a run must not make the status unwritable.
    duration_millis: fields.WholeNumber | None = pydantic.Field(
        default=None,
        description="finishedAt minus startedAt, in whole milliseconds.",
    )
    result: records.RunResult = pydantic.Field(
        description="Succeeded, Failed, TimedOut (cancelled at spec.timeout), SkippedOverlap "
        "(an earlier run was still going, see spec.concurrencyPolicy), SkippedInFlightLimit "
        "(the job, or its namespace on the replica, had as many runs in flight as the operator "
        "allows), SkippedQueueLimit (spec.concurrencyPolicy Queue would have queued it, and its "
        "namespace had as many runs queued on the replica as the operator allows), Missed (see "
        "spec.missedRuns), Lost (the operator replica running it died; see "
        "spec.retryLostRuns) or Cancelled (ended by the operator, not by its target: replaced "
        "by a newer slot, its ScheduledJob deleted or no longer schedulable, or the operator "
        "stopping; no verdict on the run: it is not lastRun and no failure).",
    )
    # Status strings carry no length limits: a long error must not make the status unwritable.
    message: str = pydantic.Field(
        default="",
        description='What happened, e.g. "HTTP 204" or the error of a failed run.',
    )
    replica: str = pydantic.Field(
        default="",
        description="The operator replica that claimed the slot.",
    )
    trigger: records.Trigger | None = pydantic.Field(
        default=None,
        description="Manual for a run asked for by hand (the punctual.dev/run-now annotation, "
        "punctual trigger), its slot when it was asked for; Backfill for a past slot run by a "
        "backfill (punctual.dev/backfill, punctual backfill). Unset for a slot of the "
        "schedule.",
    )
    run_now_token: str | None = pydantic.Field(
        default=None,
        description="For a Manual run, the punctual.dev/run-now token that asked for it.",
    )
    warm_start: records.StartMode | None = pydantic.Field(
        default=None,
        description="For a job with spec.target.job.warmStart, how the run's Job started: Exec "
        "or Init (created lead ahead of the slot, its workload released at the slot by the "
        "gate's exec or by its last init container), or Cold (first seen too late to create it "
        "ahead: created at the slot, as without warmStart). Unset for other jobs and for slots "
        "that never ran.",
    )
    schedules: list[str] | None = pydantic.Field(
        default=None,
        description="For a job with spec.schedules, the names of the entries that fired the "
        "slot (several when they land on the same instant: one slot, one run). Unset for a "
        "job with one schedule and for runs asked for by hand.",
    )


class ActiveRun(fields.ApiModel):
    """A run in progress."""

    slot: fields.Timestamp = pydantic.Field(
        description="The slot the run belongs to (RFC 3339, UTC)."
    )
    started_at: fields.Timestamp = pydantic.Field(description="When the run started.")
    replica: str = pydantic.Field(description="The operator replica running it.")
    heartbeat_time: fields.Timestamp | None = pydantic.Field(
        default=None,
        description="When that replica last stated the run in progress: at least every 30 "
        "seconds while it runs, so an older heartbeat means the replica stopped (with the redis "
        "lock backend, the run is then recorded Lost within about 20 seconds).",
    )
    job_name: str | None = pydantic.Field(
        default=None,
        description="For the job target: the name of the Job created for the slot.",
    )
    attempt: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=1,
        description="2 for the retry of a run recorded Lost (spec.retryLostRuns); unset for a "
        "first run.",
    )
    run_now_token: str | None = pydantic.Field(
        default=None,
        description="For a run asked for by hand, the punctual.dev/run-now token.",
    )


class RunCounts(fields.ApiModel):
    """Totals since the ScheduledJob was created: no slot's fate goes uncounted."""

    succeeded: fields.WholeNumber = pydantic.Field(
        default=0, ge=0, description="Runs that succeeded."
    )
    failed: fields.WholeNumber = pydantic.Field(default=0, ge=0, description="Runs that failed.")
    timed_out: fields.WholeNumber = pydantic.Field(
        default=0, ge=0, description="Runs cancelled at spec.timeout."
    )
    skipped_overlap: fields.WholeNumber = pydantic.Field(
        default=0,
        ge=0,
        description="Slots not run because an earlier run was still going (spec."
        "concurrencyPolicy).",
    )
    skipped_in_flight_limit: fields.WholeNumber = pydantic.Field(
        default=0,
        ge=0,
        description="Slots not run because the job had as many runs in flight as the operator "
        "allows one job (punctual run --max-runs-in-flight-per-job), or its namespace as many "
        "on the replica as it allows one namespace (--max-runs-in-flight-per-namespace).",
    )
    skipped_queue_limit: fields.WholeNumber = pydantic.Field(
        default=0,
        ge=0,
        description="Slots not run because spec.concurrencyPolicy Queue would have queued them "
        "while the job's namespace had as many runs queued on the replica as the operator "
        "allows one namespace (punctual run --max-queued-runs-per-namespace).",
    )
    missed: fields.WholeNumber = pydantic.Field(
        default=0,
        ge=0,
        description="Slots not run because no replica could run them in time (spec.missedRuns).",
    )
    lost: fields.WholeNumber = pydantic.Field(
        default=0,
        ge=0,
        description="Runs whose operator replica died while they ran (spec.retryLostRuns).",
    )
    suspended: fields.WholeNumber = pydantic.Field(
        default=0,
        ge=0,
        description="Slots due while the job was suspended (spec.suspend): never run, on resume "
        "either, and not missed.",
    )
    excluded: fields.WholeNumber = pydantic.Field(
        default=0,
        ge=0,
        description="Slots left out by spec.exclude or skipped one by one (punctual skip): "
        "never run, and not missed.",
    )
    cancelled: fields.WholeNumber = pydantic.Field(
        default=0,
        ge=0,
        description="Runs ended by the operator, not by their target: replaced by a newer slot "
        "(spec.concurrencyPolicy Replace), their ScheduledJob deleted or no longer schedulable, "
        "or the operator stopping.",
    )


class BackfillStatus(fields.ApiModel):
    """How far the last backfill (punctual.dev/backfill) has come."""

    token: str = pydantic.Field(description="The token of the backfill request.")
    from_: fields.Timestamp | None = pydantic.Field(
        default=None, alias="from", description="The start of its window (included)."
    )
    to: fields.Timestamp | None = pydantic.Field(
        default=None, description="The end of its window (included)."
    )
    replica: str | None = pydantic.Field(
        default=None, description="The operator replica carrying it out."
    )
    total: fields.WholeNumber | None = pydantic.Field(
        default=None, ge=0, description="The slots of the window (at most 1000)."
    )
    done: fields.WholeNumber | None = pydantic.Field(
        default=None, ge=0, description="The slots dealt with so far, oldest first."
    )
    succeeded: fields.WholeNumber | None = pydantic.Field(
        default=None, ge=0, description="Of those, the runs that succeeded."
    )
    failed: fields.WholeNumber | None = pydantic.Field(
        default=None, ge=0, description="Of those, the runs that did not (Failed, TimedOut, Lost)."
    )
    skipped: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=0,
        description="Of those, the slots not run to their end: they ran already, ran elsewhere, "
        "were skipped by spec.concurrencyPolicy, or were cancelled.",
    )
    waiting: str | None = pydantic.Field(
        default=None,
        description="Why no slot of it runs yet: the ScheduledJob's namespace has as many "
        "backfills going on the replica as the operator allows one namespace (punctual run "
        "--max-backfills-per-namespace); it starts when one of them ends. Unset once it runs.",
    )
    finished: bool | None = pydantic.Field(
        default=None, description="True once every slot of the window was dealt with."
    )


class ScheduledJobStatus(fields.ApiModel):
    """What the operator observed: readiness, the next and last slots, and recent runs."""

    observed_generation: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=0,
        description="The metadata.generation of the spec this status describes.",
    )
    conditions: tuple[condition_models.Condition, ...] = pydantic.Field(
        default_factory=tuple,
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
        },
        description="Ready: True (reason Scheduled) when the schedule is armed; False with "
        "reason InvalidSpec (the message names the field), LockBackendUnavailable, ... "
        "Suspended: True while spec.suspend is true, reason Suspended, or "
        "SuspendedAfterFailures when the operator suspended the job itself "
        "(spec.suspendAfterFailures). LastRunSucceeded: True or False after each run, its "
        "reason the run's result (Succeeded; Failed, TimedOut, Lost) and its message the run's; "
        "Unknown (NoRunYet) before the first run; skipped and missed slots leave it as it is.",
    )
    schedule: str | None = pydantic.Field(
        default=None,
        max_length=SCHEDULE_SHOWN_MAX,
        description="The schedule as people read it (kubectl get's SCHEDULE column): "
        "spec.schedule as written, every <spec.every>, or once at <spec.startsAt>. Absent "
        "while the spec is invalid.",
    )
    target: str | None = pydantic.Field(
        default=None,
        max_length=TARGET_SHOWN_MAX,
        description="What a run does (kubectl get's TARGET column): http, job, or queue with "
        "its format (queue:stream, queue:celery, queue:rq, queue:arq, queue:dramatiq, "
        "queue:taskiq, queue:sidekiq, queue:bullmq). Absent while the spec is invalid.",
    )
    next_run_time: fields.Timestamp | None = pydantic.Field(
        default=None,
        description="When the next run is due: the next slot plus this ScheduledJob's jitter.",
    )
    last_schedule_time: fields.Timestamp | None = pydantic.Field(
        default=None,
        description="The last slot claimed by any replica. Persisted across operator restarts: "
        "a slot at or before it never runs again.",
    )
    last_run_now_token: str | None = pydantic.Field(
        default=None,
        description="The last punctual.dev/run-now token taken (its run claimed by a "
        "replica, then started or skipped under the concurrency policy): setting the "
        "annotation to it again runs nothing, nor does a restart.",
    )
    backfill: BackfillStatus | None = pydantic.Field(
        default=None,
        description="The progress of the last backfill request (punctual.dev/backfill).",
    )
    last_successful_time: fields.Timestamp | None = pydantic.Field(
        default=None,
        description="When the last successful run finished.",
    )
    last_run: RunRecord | None = pydantic.Field(
        default=None,
        description="The most recent run that came to its end: Succeeded, Failed, TimedOut or "
        "Lost (skipped and missed slots never ran, cancelled runs got no verdict; recentRuns "
        "shows them).",
    )
    recent_runs: tuple[RunRecord, ...] = pydantic.Field(
        default_factory=tuple,
        description="Recent runs, newest first, as many as spec.history keeps per outcome.",
    )
    active: tuple[ActiveRun, ...] = pydantic.Field(
        default_factory=tuple, description="The runs in progress."
    )
    counts: RunCounts = pydantic.Field(
        default_factory=RunCounts,
        description="How many slots ended in each result since the ScheduledJob was created.",
    )
    consecutive_failures: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=0,
        description="Runs in a row that did not succeed (Failed, TimedOut, Lost), up to the "
        "last one: a success sets it to 0, skipped and missed slots and cancelled runs leave "
        "it as it is, and "
        "resuming the job (spec.suspend back to false) sets it to 0. Compared with "
        "spec.suspendAfterFailures.",
    )
