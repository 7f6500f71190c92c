"""The ScheduledJob resource as pydantic models: the one source of truth for its CRD.

``punctual crd`` derives the CRD's schema (types, enums, defaults, limits, descriptions and the
CEL rules in ``x-kubernetes-validations``) from these models, and the operator reads objects
through them, so what the API server accepts and what the operator understands cannot drift.

Python names are snake_case, wire names camelCase (``max_catch_up`` is ``maxCatchUp``). Every
model is frozen and forbids unknown fields. There are no floats: durations are Go-style strings
(``10s``, ``1h30m``), measurements whole milliseconds.

Rules that span several fields are written twice on purpose: as CEL, which the API server
evaluates on every write, and as a pydantic validator raising ``InvalidSpecError`` (whose
``field`` is relative to the model that raised it), so that an object which escaped the API
server's checks (an older CRD, a test fixture) is refused the same way by the operator.
What the API server cannot check at all (cron syntax, time-zone names, jitter against a cron
schedule's period) is left to ``punctual.api.plans``.
"""

import enum
from datetime import timedelta
from typing import Annotated

import pydantic
from pydantic import alias_generators

from punctual.contracts import records
from punctual.scheduling import dst, durations, missed, overlap, timeline
from punctual.scheduling.errors import InvalidSpecError

GROUP = "punctual.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ScheduledJob"
PLURAL = "scheduledjobs"
SINGULAR = "scheduledjob"
SHORT_NAMES = ("sj",)
CATEGORIES = ("punctual",)

DURATION_PATTERN = r"^([0-9]+(ms|h|m|s))+$"
"""Whole numbers with units h, m, s or ms: the grammar of ``punctual.scheduling.durations``.

Written with ``[0-9]`` rather than ``\\d``: the API server's regular expressions (Go RE2) and
Python's disagree on what ``\\d`` matches.
"""
_SIGNED_DURATION_PATTERN = r"^-?([0-9]+(ms|h|m|s))+$"
MAX_DURATION_LENGTH = 32
"""Bounds the cost the API server estimates for the CEL rules that parse durations."""
_LONGEST_GO_DURATION = timedelta(microseconds=(2**63 - 1) // 1000)
"""CEL parses durations with Go's ``time.ParseDuration``, which stops at 2^63 - 1 ns."""

_DURATION_EXAMPLES = "such as 250ms, 10s, 5m or 1h30m"


def _positive_duration(text: str) -> str:
    """Accept exactly what the CRD accepts: the pattern, and a positive value CEL can parse."""
    value = durations.parse(text, field="")
    if value > _LONGEST_GO_DURATION:
        longest = durations.format(_LONGEST_GO_DURATION)
        raise InvalidSpecError("", f"{text!r} is too large (at most {longest})")
    return text


Duration = Annotated[
    str,
    pydantic.Field(
        max_length=MAX_DURATION_LENGTH,
        json_schema_extra={
            "pattern": DURATION_PATTERN,
            "x-kubernetes-validations": [
                {
                    # Only what Go can parse reaches duration(): the pattern reports the rest,
                    # without a "type conversion error" beside it. The optional sign lets "-5s"
                    # through to say what is wrong with it.
                    "rule": f"!self.matches('{_SIGNED_DURATION_PATTERN}') || "
                    "duration(self) > duration('0s')",
                    "message": f"must be a positive duration, {_DURATION_EXAMPLES}",
                }
            ],
        },
    ),
    pydantic.AfterValidator(_positive_duration),
]
"""A positive Go-style duration string (``250ms``, ``10s``, ``1h30m``).

The pattern travels in the JSON schema only; in Python ``durations.parse`` checks the same
grammar and explains what is wrong, where a pattern mismatch could only say "does not match".
"""

FreeFormObject = Annotated[
    dict[str, pydantic.JsonValue],
    pydantic.WithJsonSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
]
"""An object the API server stores as given (the shape belongs to someone else)."""

WholeNumber = Annotated[int, pydantic.Strict()]
"""An integer that refuses ``1.0``, ``"1"`` and ``True``: the API has no floats."""


Timestamp = Annotated[
    pydantic.AwareDatetime,
    pydantic.PlainSerializer(timeline.rfc3339, return_type=str, when_used="json"),
]
"""An RFC 3339 instant (``format: date-time``), written in UTC with a ``Z``."""


class _ApiModel(pydantic.BaseModel):
    """Frozen, strict about unknown fields, camelCase on the wire.

    Python names are accepted too, so code and tests can build models by them; objects read
    from the API server go through ``plans.parse_spec``, which accepts wire names only.
    """

    model_config = pydantic.ConfigDict(
        alias_generator=alias_generators.to_camel,
        validate_by_alias=True,
        validate_by_name=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=True,
    )


def _exactly_one_set(*values: object) -> bool:
    return sum(value is not None for value in values) == 1


# -- spec ------------------------------------------------------------------------------------


class DstSpec(_ApiModel):
    """How a fixed-hour cron schedule treats local times that a DST transition skips or repeats."""

    nonexistent: dst.Nonexistent = pydantic.Field(
        default=dst.Nonexistent.SHIFT_FORWARD,
        description="What a slot does when its local time does not exist because clocks spring "
        "forward. ShiftForward (default): run once at the first instant after the gap (slots "
        "inside one gap coalesce into that run). Skip: do not run that day. Applies to "
        "schedules with a fixed hour field; wildcard-hour schedules follow real elapsed time.",
    )
    ambiguous: dst.Ambiguous = pydantic.Field(
        default=dst.Ambiguous.FIRST,
        description="Which occurrence of a local time that happens twice because clocks fall "
        "back runs: First (default), Second, or Both. Applies to schedules with a fixed hour "
        "field; wildcard-hour schedules run in both copies of the repeated hour.",
    )


class MissedRunsSpec(_ApiModel):
    """What happens to slots that came due while no replica could run them."""

    policy: missed.MissedRunPolicy = pydantic.Field(
        default=missed.MissedRunPolicy.RUN_ONCE,
        description="What to do with slots missed during downtime or a long stall. Skip: run "
        "none, resume at the next future slot and count them as missed. RunOnce (default): run "
        "the newest missed slot once, now. CatchUp: run the missed slots one after another, "
        "oldest first, at most maxCatchUp of them (the newest); older ones count as missed.",
    )
    max_catch_up: WholeNumber = pydantic.Field(
        default=10,
        ge=1,
        le=1000,
        description="With policy CatchUp, the most missed slots run after an outage (the newest "
        "ones); the older ones are counted as missed. Between 1 and 1000; default 10.",
    )
    starting_deadline: Duration | None = pydantic.Field(
        default=None,
        description="A slot that cannot start within this long of its scheduled time is counted "
        "as missed instead of running late, whatever the policy. A positive Go-style duration "
        "(e.g. 30s, 5m, 1h30m). Unset: no deadline.",
    )


class HistorySpec(_ApiModel):
    """How many finished runs are remembered."""

    succeeded: WholeNumber = pydantic.Field(
        default=3,
        ge=0,
        le=100,
        description="How many successful runs status.recentRuns keeps, and how many finished "
        "Jobs of the job target are kept. Between 0 and 100; default 3.",
    )
    failed: WholeNumber = pydantic.Field(
        default=3,
        ge=0,
        le=100,
        description="How many runs that did not succeed status.recentRuns keeps, and how many "
        "failed Jobs of the job target are kept. Between 0 and 100; default 3.",
    )


class HttpMethod(enum.StrEnum):
    GET = "GET"
    HEAD = "HEAD"
    POST = "POST"
    PUT = "PUT"
    PATCH = "PATCH"
    DELETE = "DELETE"
    OPTIONS = "OPTIONS"


class SecretReference(_ApiModel):
    """A Secret in the ScheduledJob's own namespace."""

    name: str = pydantic.Field(
        min_length=1,
        max_length=253,
        description="Name of a Secret in the same namespace as the ScheduledJob.",
    )


class HeadersSource(_ApiModel):
    """Where to read extra request headers from."""

    secret_ref: SecretReference = pydantic.Field(
        description="A Secret whose keys are header names and whose values are the header "
        "values. Keeps credentials such as an Authorization header out of the ScheduledJob.",
    )


class HttpTarget(_ApiModel):
    """An HTTP request the operator makes itself, once per slot."""

    url: str = pydantic.Field(
        min_length=1,
        max_length=2048,
        pattern=r"^https?://\S+$",
        description="The http:// or https:// URL to call, e.g. "
        "http://report-svc.reports.svc:8080/run.",
    )
    method: HttpMethod = pydantic.Field(
        default=HttpMethod.POST,
        description="The HTTP method: GET, HEAD, POST (default), PUT, PATCH, DELETE or OPTIONS.",
    )
    headers: dict[str, Annotated[str, pydantic.Field(max_length=8192)]] = pydantic.Field(
        default_factory=dict,
        max_length=64,
        description="Extra request headers, name to value (at most 64). Every request also "
        "carries Idempotency-Key (the slot id) and X-Punctual-Scheduled-Time.",
    )
    headers_from: tuple[HeadersSource, ...] = pydantic.Field(
        default_factory=tuple,
        max_length=16,
        description="Secrets to read extra request headers from, applied after headers (at most "
        "16). Use these for credentials such as an Authorization header.",
    )
    body: str | None = pydantic.Field(
        default=None,
        max_length=65536,
        description="The request body, sent as given (at most 64 KiB). Unset: no body.",
    )
    success_codes: tuple[Annotated[WholeNumber, pydantic.Field(ge=100, le=599)], ...] | None = (
        pydantic.Field(
            default=None,
            min_length=1,
            max_length=64,
            json_schema_extra={"x-kubernetes-list-type": "set"},
            description="The HTTP status codes that count as success, e.g. [200, 204]. Unset: "
            "any 2xx status. Any other status, a connection error or the timeout fails the run.",
        )
    )


class QueueTarget(_ApiModel):
    """A message appended to a Redis stream, atomically with claiming the slot."""

    stream: str = pydantic.Field(
        min_length=1,
        max_length=256,
        description="The Redis stream (key) to XADD to, on the Redis the operator uses "
        "(--redis-url). Entries carry the fields job, namespace, slot, scheduledTime, "
        "idempotencyKey and payload.",
    )
    payload: FreeFormObject | None = pydantic.Field(
        default=None,
        description="Any object, sent JSON-encoded as the entry's payload field. Unset: an "
        "empty object.",
    )
    max_len: WholeNumber | None = pydantic.Field(
        default=None,
        ge=1,
        description="Trim the stream to about this many entries on every append (XADD MAXLEN "
        "~). Unset: never trim.",
    )


class JobTarget(_ApiModel):
    """A batch/v1 Job created for each slot, as a CronJob would."""

    template: FreeFormObject = pydantic.Field(
        description="The Job to create, shaped like a CronJob's spec.jobTemplate: {metadata, "
        "spec} where spec is a batch/v1 JobSpec. The Job is named <name>-<unix seconds of the "
        "slot>, labelled punctual.dev/scheduled-job, annotated punctual.dev/scheduled-time and "
        "owned by the ScheduledJob; spec.timeout becomes its activeDeadlineSeconds.",
    )


class Target(_ApiModel):
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

    http: HttpTarget | None = pydantic.Field(
        default=None,
        description="Make an HTTP request from the operator. It carries the headers "
        "Idempotency-Key (the slot id) and X-Punctual-Scheduled-Time.",
    )
    queue: QueueTarget | None = pydantic.Field(
        default=None,
        description="Append an entry to a Redis stream (XADD) on the operator's Redis, "
        "atomically with claiming the slot; consumers do the work.",
    )
    job: JobTarget | None = pydantic.Field(
        default=None,
        description="Create a batch/v1 Job per slot, like a CronJob. Creating the same slot's "
        "Job twice fails with AlreadyExists, so a slot never runs twice.",
    )

    @pydantic.model_validator(mode="after")
    def _exactly_one_target(self) -> "Target":
        if not _exactly_one_set(self.http, self.queue, self.job):
            raise InvalidSpecError("", "set exactly one of http, queue or job")
        return self


_SPEC_RULES: list[pydantic.JsonValue] = [
    {
        "rule": "has(self.schedule) != has(self.every)",
        "message": "set exactly one of schedule (a cron expression) or every (an interval)",
    },
    {
        # Malformed durations are reported on their own fields; compare only well-formed ones.
        "rule": "!has(self.jitter) || !has(self.every) || "
        f"!self.jitter.matches('{DURATION_PATTERN}') || !self.every.matches('{DURATION_PATTERN}') "
        "|| duration(self.jitter) < duration(self.every)",
        "message": "jitter must be shorter than every",
        "fieldPath": ".jitter",
    },
]


class ScheduledJobSpec(_ApiModel):
    """When a ScheduledJob runs, what each run does, and what happens when runs are late."""

    model_config = pydantic.ConfigDict(json_schema_extra={"x-kubernetes-validations": _SPEC_RULES})

    schedule: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=128,
        description="A cron expression evaluated in timeZone: 5 fields (minute hour "
        "day-of-month month day-of-week), or 6 with leading seconds, or one of @hourly, "
        "@daily, @weekly, @monthly, @yearly. Exactly one of schedule or every. Checked by the "
        "operator, which reports a bad expression on the Ready condition (reason InvalidSpec).",
    )
    every: Duration | None = pydantic.Field(
        default=None,
        description="A fixed interval instead of a cron schedule, as a positive Go-style "
        "duration (250ms, 10s, 5m, 1h30m). Slots are the multiples of it since the Unix epoch "
        "(UTC), so every replica computes the same slots. Exactly one of schedule or every.",
    )
    time_zone: str = pydantic.Field(
        default="UTC",
        min_length=1,
        max_length=64,
        description="The IANA time zone the cron schedule is evaluated in, e.g. "
        "Europe/Copenhagen. Default UTC. Does not affect every.",
    )
    dst: DstSpec = pydantic.Field(
        default_factory=DstSpec,
        json_schema_extra={"default": {}},
        description="What a fixed-hour cron schedule does on the nights clocks change: "
        "slots whose local time does not exist or happens twice. The defaults run a daily job "
        "exactly once every local day.",
    )
    jitter: Duration | None = pydantic.Field(
        default=None,
        description="Spread load: every slot of this ScheduledJob fires a fixed offset late, "
        "between 0 and jitter, derived from the object's uid (the same on every replica, never "
        "drawn per run). Must be shorter than the schedule's shortest period. A positive "
        "Go-style duration, e.g. 30s.",
    )
    missed_runs: MissedRunsSpec = pydantic.Field(
        default_factory=MissedRunsSpec,
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
    max_queued: WholeNumber = pydantic.Field(
        default=1,
        ge=1,
        le=100,
        description="With concurrencyPolicy Queue, how many slots may wait for the running one. "
        "Between 1 and 100; default 1.",
    )
    timeout: Duration = pydantic.Field(
        default="10m",
        description="How long one run may take before it is cancelled and recorded as TimedOut "
        "(for the job target: the Job's activeDeadlineSeconds). A positive Go-style duration; "
        "default 10m.",
    )
    suspend: pydantic.StrictBool = pydantic.Field(
        default=False,
        description="True stops new runs from starting; it does not affect runs already in "
        "progress. Default false.",
    )
    retry_lost_runs: pydantic.StrictBool = pydantic.Field(
        default=False,
        description="When the operator replica running a slot dies mid-run (the run is then "
        "recorded Lost, within about 20 seconds), run that slot once more on another replica, "
        "with the same Idempotency-Key so the target can tell. A retry that is lost too is "
        "not retried. Default false. Needs the redis lock backend.",
    )
    history: HistorySpec = pydantic.Field(
        default_factory=HistorySpec,
        json_schema_extra={"default": {}},
        description="How many finished runs status.recentRuns keeps, by outcome (and how many "
        "finished Jobs of the job target are kept).",
    )
    target: Target = pydantic.Field(
        description="What each run does: exactly one of http, queue or job.",
    )

    @pydantic.model_validator(mode="after")
    def _exactly_one_schedule(self) -> "ScheduledJobSpec":
        if not _exactly_one_set(self.schedule, self.every):
            raise InvalidSpecError(
                "schedule", "set exactly one of schedule (a cron expression) or every (an interval)"
            )
        return self

    @pydantic.model_validator(mode="after")
    def _jitter_below_every(self) -> "ScheduledJobSpec":
        if self.jitter is None or self.every is None:
            return self
        jitter = durations.parse(self.jitter, field="jitter")
        if jitter >= durations.parse(self.every, field="every"):
            raise InvalidSpecError("jitter", "jitter must be shorter than every")
        return self


# -- status ----------------------------------------------------------------------------------


class ConditionStatus(enum.StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(_ApiModel):
    """One aspect of the object's state, following the Kubernetes API conventions."""

    type: str = pydantic.Field(
        min_length=1,
        max_length=316,
        description="The aspect: Ready (the schedule is valid and armed) or Suspended.",
    )
    status: ConditionStatus = pydantic.Field(description='"True", "False" or "Unknown".')
    reason: str = pydantic.Field(
        min_length=1,
        max_length=1024,
        pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        description="Why, in one CamelCase word: Scheduled; InvalidSpec, "
        "LockBackendUnavailable, ... when Ready is False.",
    )
    message: str = pydantic.Field(
        default="",
        max_length=32768,
        description="Details for humans; for InvalidSpec it names the offending field, e.g. "
        "spec.schedule.",
    )
    last_transition_time: Timestamp = pydantic.Field(
        description="When status last changed (RFC 3339).",
    )
    observed_generation: WholeNumber | None = pydantic.Field(
        default=None,
        ge=0,
        description="The metadata.generation of the spec this condition was computed from.",
    )


class RunRecord(_ApiModel):
    """One slot's fate."""

    slot: Timestamp = pydantic.Field(
        description="The slot: the nominal fire time (RFC 3339, UTC) the run belongs to, before "
        "jitter. The idempotency key sent to targets is <namespace>/<name>/<uid>/<unix "
        "milliseconds of the slot>.",
    )
    scheduled_time: Timestamp = pydantic.Field(
        description="When the run was due to start: the slot plus this ScheduledJob's jitter.",
    )
    started_at: Timestamp | None = pydantic.Field(
        default=None,
        description="When the run started; unset for slots that never ran (SkippedOverlap, "
        "Missed).",
    )
    finished_at: Timestamp | None = pydantic.Field(
        default=None, description="When the run finished; unset for slots that never ran."
    )
    lateness_millis: WholeNumber | None = pydantic.Field(
        default=None,
        description="startedAt minus scheduledTime, in whole milliseconds.",
    )
    # No minimum: a wall-clock step back during a run must not make the status unwritable.
    duration_millis: WholeNumber | None = pydantic.Field(
        default=None,
        description="finishedAt minus startedAt, in whole milliseconds.",
    )
    result: records.RunResult = pydantic.Field(
        description="Succeeded, Failed, TimedOut (cancelled at spec.timeout), SkippedOverlap "
        "(an earlier run was still going, see spec.concurrencyPolicy), Missed (see "
        "spec.missedRuns) or Lost (the operator replica running it died; see "
        "spec.retryLostRuns).",
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


class ActiveRun(_ApiModel):
    """A run in progress."""

    slot: Timestamp = pydantic.Field(description="The slot the run belongs to (RFC 3339, UTC).")
    started_at: Timestamp = pydantic.Field(description="When the run started.")
    replica: str = pydantic.Field(description="The operator replica running it.")
    heartbeat_time: Timestamp | None = pydantic.Field(
        default=None,
        description="When that replica last stated the run in progress: at least every 30 "
        "seconds while it runs, so an older heartbeat means the replica stopped (with the redis "
        "lock backend, the run is then recorded Lost within about 20 seconds).",
    )
    job_name: str | None = pydantic.Field(
        default=None,
        description="For the job target: the name of the Job created for the slot.",
    )
    attempt: WholeNumber | None = pydantic.Field(
        default=None,
        ge=1,
        description="2 for the retry of a run recorded Lost (spec.retryLostRuns); unset for a "
        "first run.",
    )


class RunCounts(_ApiModel):
    """Totals since the ScheduledJob was created: no slot's fate goes uncounted."""

    succeeded: WholeNumber = pydantic.Field(default=0, ge=0, description="Runs that succeeded.")
    failed: WholeNumber = pydantic.Field(default=0, ge=0, description="Runs that failed.")
    timed_out: WholeNumber = pydantic.Field(
        default=0, ge=0, description="Runs cancelled at spec.timeout."
    )
    skipped_overlap: WholeNumber = pydantic.Field(
        default=0,
        ge=0,
        description="Slots not run because an earlier run was still going (spec."
        "concurrencyPolicy).",
    )
    missed: WholeNumber = pydantic.Field(
        default=0,
        ge=0,
        description="Slots not run because no replica could run them in time (spec.missedRuns).",
    )
    lost: WholeNumber = pydantic.Field(
        default=0,
        ge=0,
        description="Runs whose operator replica died while they ran (spec.retryLostRuns).",
    )


class ScheduledJobStatus(_ApiModel):
    """What the operator observed: readiness, the next and last slots, and recent runs."""

    observed_generation: WholeNumber | None = pydantic.Field(
        default=None,
        ge=0,
        description="The metadata.generation of the spec this status describes.",
    )
    conditions: tuple[Condition, ...] = pydantic.Field(
        default_factory=tuple,
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
        },
        description="Ready: True (reason Scheduled) when the schedule is armed; False with "
        "reason InvalidSpec (the message names the field), LockBackendUnavailable, ... "
        "Suspended: True while spec.suspend is true.",
    )
    next_run_time: Timestamp | None = pydantic.Field(
        default=None,
        description="When the next run is due: the next slot plus this ScheduledJob's jitter.",
    )
    last_schedule_time: Timestamp | None = pydantic.Field(
        default=None,
        description="The last slot claimed by any replica. Persisted across operator restarts: "
        "a slot at or before it never runs again.",
    )
    last_successful_time: Timestamp | None = pydantic.Field(
        default=None,
        description="When the last successful run finished.",
    )
    last_run: RunRecord | None = pydantic.Field(
        default=None, description="The most recent finished run (or skipped or missed slot)."
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
