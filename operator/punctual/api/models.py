"""The ScheduledJob resource as pydantic models: its names, its spec and what each run does
(``Target``), the one source of truth for its CRD together with the modules of its parts
(``schedule_models``, ``day_models``, ``http_models``, ``queue_models``, ``task_models``,
``job_models``).

``punctual crd`` derives the CRD's schema (types, enums, defaults, limits, descriptions and the
CEL rules in ``x-kubernetes-validations``) from these models and those of the status
(``punctual.api.status_models``), and the operator reads objects through them, so what the API
server accepts and what the operator understands cannot drift. What the models are built from
(the base model, durations, whole numbers) is ``punctual.api.fields``.

Rules that span several fields are written twice on purpose: as CEL, which the API server
evaluates on every write, and as a pydantic validator raising ``InvalidSpecError`` (whose
``field`` is relative to the model that raised it), so that an object which escaped the API
server's checks (an older CRD, a test fixture) is refused the same way by the operator.
What the API server cannot check at all (cron syntax, time-zone names, jitter against a cron
schedule's period) is left to ``punctual.api.planning``.
"""

import pydantic

from punctual.api import day_models, fields, http_models, job_models, queue_models, schedule_models
from punctual.scheduling import durations, merged, overlap
from punctual.scheduling.errors import InvalidSpecError

GROUP = "punctual.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ScheduledJob"
PLURAL = "scheduledjobs"
SINGULAR = "scheduledjob"
SHORT_NAMES = ("sj",)
CATEGORIES = ("punctual",)


class Target(fields.ApiModel):
    """What a run does. Exactly one of http, queue or job."""

    model_config = pydantic.ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "[has(self.http), has(self.queue), has(self.job)]"
                    ".filter(set, set).size() == 1",
                    "message": "set exactly one of http, queue or job",
                }
            ]
        }
    )

    http: http_models.HttpTarget | None = pydantic.Field(
        default=None,
        description="Make an HTTP request from the operator. It carries the headers "
        "Idempotency-Key (the slot id) and X-Punctual-Scheduled-Time.",
    )
    queue: queue_models.QueueTarget | None = pydantic.Field(
        default=None,
        description="Append an entry to a Redis stream (XADD) on the operator's Redis, "
        "atomically with claiming the slot, or push a Celery, RQ, arq, Dramatiq, taskiq, Sidekiq "
        "or BullMQ task onto the tenant's own broker, once per slot; consumers do the work.",
    )
    job: job_models.JobTarget | None = pydantic.Field(
        default=None,
        description="Create a batch/v1 Job per slot, like a CronJob. Creating the same slot's "
        "Job twice fails with AlreadyExists, so a slot never runs twice.",
    )

    @pydantic.model_validator(mode="after")
    def _exactly_one_target(self) -> "Target":
        if not fields.exactly_one_set(self.http, self.queue, self.job):
            raise InvalidSpecError("", "set exactly one of http, queue or job")
        return self


_ONE_SCHEDULE = (
    "set exactly one of schedule (a cron expression) or every (an interval) or schedules "
    "(several named ones), or neither with startsAt for a one-off run"
)
_WINDOW_RISES = "endsAt must be after startsAt"
_SPEC_RULES: list[pydantic.JsonValue] = [
    {
        "rule": "has(self.schedules) ? !has(self.schedule) && !has(self.every) : "
        "has(self.schedule) ? !has(self.every) : (has(self.every) || has(self.startsAt))",
        "message": _ONE_SCHEDULE,
    },
    {
        "rule": "!has(self.startsAt) || !has(self.endsAt) || self.endsAt > self.startsAt",
        "message": _WINDOW_RISES,
        "fieldPath": ".endsAt",
    },
    {
        # Malformed durations are reported on their own fields; compare only well-formed ones.
        "rule": "!has(self.jitter) || !has(self.every) || "
        f"!self.jitter.matches('{fields.DURATION_PATTERN}') || "
        f"!self.every.matches('{fields.DURATION_PATTERN}') "
        "|| duration(self.jitter) < duration(self.every)",
        "message": "jitter must be shorter than every",
        "fieldPath": ".jitter",
    },
]


class ScheduledJobSpec(fields.ApiModel):
    """When a ScheduledJob runs, what each run does, and what happens when runs are late."""

    model_config = pydantic.ConfigDict(json_schema_extra={"x-kubernetes-validations": _SPEC_RULES})

    schedule: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=128,
        description="A cron expression evaluated in timeZone: 5 fields (minute hour "
        "day-of-month month day-of-week), or 6 with leading seconds, or one of @hourly, "
        "@daily, @weekly, @monthly, @yearly. Day fields also take L (last day: L, 15-L), nW "
        "(nearest weekday: 15W), nL (last weekday: 5L), n#k (k-th weekday: 1#2) and ?; ranges "
        "may wrap (FRI-MON); H, H(a-b), H/n take a value fixed per job from its namespace and "
        "name (docs/time.md). Not supported: R, L-n, LW, a year field. At most one of "
        "schedule or every. Checked by the operator, which reports a bad expression on the "
        "Ready condition (reason InvalidSpec).",
    )
    every: fields.Duration | None = pydantic.Field(
        default=None,
        description="A fixed interval instead of a cron schedule, as a positive Go-style "
        "duration (250ms, 10s, 5m, 1h30m). Slots are the multiples of it since the Unix epoch "
        "(UTC), so every replica computes the same slots. At most one of schedule or every. The "
        "operator refuses slots closer than its minimum period (punctual run --min-period, "
        "1s by default), whether from every or from a cron seconds field.",
    )
    schedules: tuple[schedule_models.ScheduleEntry, ...] | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=merged.MAX_ENTRIES,
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
        },
        description="Several named schedules instead of one schedule or every (at most "
        f"{merged.MAX_ENTRIES}, names unique). Their slots merge into one timeline: entries "
        "landing on the same instant are one slot and one run, recorded with the names of all "
        "of them; history, concurrencyPolicy, missedRuns, jitter, startsAt and endsAt apply to "
        "the job as a whole. Each entry takes timeZone and dst of its own, spec's by default.",
    )
    starts_at: fields.Instant | None = pydantic.Field(
        default=None,
        description="No slot before this instant (RFC 3339 with an offset, e.g. "
        "2026-12-24T18:00:00+01:00); a slot exactly at it runs. Without schedule and every: "
        "one run, exactly once, at this instant (if the job exists before it).",
    )
    ends_at: fields.Instant | None = pydantic.Field(
        default=None,
        description="No slot at or after this instant (RFC 3339 with an offset); after startsAt. "
        "Past it the job is Ready with reason Ended.",
    )
    time_zone: str = pydantic.Field(
        default="UTC",
        min_length=1,
        max_length=64,
        description="The IANA time zone the cron schedule is evaluated in, e.g. "
        "Europe/Copenhagen. Default UTC; also the zone of the entries of schedules that set "
        "none. Does not affect every.",
    )
    dst: schedule_models.DstSpec = pydantic.Field(
        default_factory=schedule_models.DstSpec,
        json_schema_extra={"default": {}},
        description="What a fixed-hour cron schedule does on the nights clocks change: "
        "slots whose local time does not exist or happens twice. The defaults run a daily job "
        "exactly once every local day.",
    )
    exclude: day_models.ExcludeSpec | None = pydantic.Field(
        default=None,
        description="Days on which no slot runs (public holidays, a freeze): dates, ranges "
        "of dates and recurring days, local days in the job's zone. An excluded slot is "
        "never run and never missed: it is counted in status.counts.excluded. One occurrence "
        "is skipped with punctual skip.",
    )
    jitter: fields.Duration | None = pydantic.Field(
        default=None,
        description="Spread load: every slot of this ScheduledJob fires a fixed offset late, "
        "between 0 and jitter, derived from the object's uid (the same on every replica, never "
        "drawn per run). Must be shorter than the schedule's shortest period. A positive "
        "Go-style duration, e.g. 30s.",
    )
    missed_runs: schedule_models.MissedRunsSpec = pydantic.Field(
        default_factory=schedule_models.MissedRunsSpec,
        json_schema_extra={"default": {}},
        description="What happens to slots that came due while no replica could run them "
        "(operator downtime, a long stall, a clock jump).",
    )
    concurrency_policy: overlap.ConcurrencyPolicy = pydantic.Field(
        default=overlap.ConcurrencyPolicy.FORBID,
        description="What a slot does while an earlier run is still going. Forbid (default): "
        "skip it and count it (SkippedOverlap). Allow: run alongside. Replace: cancel the "
        "running one, then run. Queue: start when the running one finishes, with at most "
        "maxQueued waiting (more are skipped and counted).",
    )
    max_queued: fields.WholeNumber = pydantic.Field(
        default=1,
        ge=1,
        le=100,
        description="With concurrencyPolicy Queue, how many slots may wait for the running one. "
        "Between 1 and 100; default 1.",
    )
    timeout: fields.Duration = pydantic.Field(
        default="10m",
        description="How long one run may take before it is cancelled and recorded as TimedOut "
        "(for the job target: the Job's activeDeadlineSeconds). A positive Go-style duration; "
        "default 10m; at most the operator's maximum (punctual run --max-timeout, 24h by "
        "default).",
    )
    suspend: pydantic.StrictBool = pydantic.Field(
        default=False,
        description="True stops new runs from starting; it does not affect runs already in "
        "progress. Default false.",
    )
    suspend_after_failures: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=1,
        le=1000,
        description="Pause on failure: after this many runs in a row that did not succeed "
        "(Failed, TimedOut or Lost; skipped and missed slots neither count nor reset the "
        "count, a success resets it), the operator sets spec.suspend to true itself, with the "
        "Suspended condition's reason SuspendedAfterFailures and a Warning Event. The count is "
        "status.consecutiveFailures; setting suspend back to false resumes the job and resets "
        "it. Between 1 and 1000. Unset (default): never.",
    )
    retry_lost_runs: pydantic.StrictBool = pydantic.Field(
        default=False,
        description="When the operator replica running a slot dies mid-run (the run is then "
        "recorded Lost, within about 20 seconds), run that slot once more on another replica, "
        "with the same Idempotency-Key so the target can tell. A retry that is lost too is "
        "not retried. Default false. Needs the redis lock backend.",
    )
    history: schedule_models.HistorySpec = pydantic.Field(
        default_factory=schedule_models.HistorySpec,
        json_schema_extra={"default": {}},
        description="How many finished runs status.recentRuns keeps, by outcome (and how many "
        "finished Jobs of the job target are kept).",
    )
    target: Target = pydantic.Field(
        description="What each run does: exactly one of http, queue or job.",
    )

    @pydantic.model_validator(mode="after")
    def _one_schedule(self) -> "ScheduledJobSpec":
        given = [
            name
            for name, value in (
                ("schedule", self.schedule),
                ("every", self.every),
                ("schedules", self.schedules),
            )
            if value is not None
        ]
        if len(given) > 1:
            raise InvalidSpecError(given[0], f"{_ONE_SCHEDULE} (got {' and '.join(given)})")
        if not given and self.starts_at is None:
            raise InvalidSpecError("schedule", _ONE_SCHEDULE)
        return self

    @pydantic.model_validator(mode="after")
    def _entry_names_unique(self) -> "ScheduledJobSpec":
        seen: set[str] = set()
        for index, entry in enumerate(self.schedules or ()):
            if entry.name in seen:
                raise InvalidSpecError(
                    f"schedules[{index}].name", f"{entry.name!r} names an earlier entry too"
                )
            seen.add(entry.name)
        return self

    @pydantic.model_validator(mode="after")
    def _window_rises(self) -> "ScheduledJobSpec":
        starts_at, ends_at = self.starts_at, self.ends_at
        if starts_at is not None and ends_at is not None and ends_at <= starts_at:
            raise InvalidSpecError("endsAt", _WINDOW_RISES)
        return self

    @pydantic.model_validator(mode="after")
    def _jitter_below_every(self) -> "ScheduledJobSpec":
        if self.jitter is None or self.every is None:
            return self
        jitter = durations.parse(self.jitter, field="jitter")
        if jitter >= durations.parse(self.every, field="every"):
            raise InvalidSpecError("jitter", "jitter must be shorter than every")
        return self
