"""From a ScheduledJob's ``spec`` to the plan the scheduler obeys: the operator's one check.

The API server enforces what the CRD can express (types, enums, limits, the CEL rules of
``punctual.api.models``). What it cannot (cron syntax, time-zone names, jitter against a cron
schedule's shortest period) is checked here, for every object, before anything is armed.

Every failure is an ``InvalidSpecError`` whose ``field`` is the path users wrote
(``spec.missedRuns.maxCatchUp``), ready for the Ready condition and a Warning Event: a bad
object never crashes the operator and never affects the other objects.
"""

import json
import re
from collections.abc import Mapping
from datetime import timedelta

import pydantic
import pydantic_core

from punctual.api import models
from punctual.scheduling import dst, durations, missed, plans, schedules, slots, timeline
from punctual.scheduling.errors import InvalidSpecError

SPEC = "spec"
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,128}")

JOB_TIMEOUT_MARGIN = timedelta(seconds=30)
"""For the job target, the loop's own timeout is ``spec.timeout`` plus this margin.

``spec.timeout`` becomes the Job's ``activeDeadlineSeconds``, which the Job controller counts
from the Job's ``status.startTime`` (its first sync, a little after creation): the Job is
failed with ``DeadlineExceeded`` there, that reaches the run through the Job watch, and the run
is recorded ``TimedOut`` with the controller's own words. The margin covers the controller's
start-up lag and the watch; only when the verdict does not come within it (the Job controller
is down, the watch is broken) does the loop give up, record ``TimedOut`` itself and delete the
Job.
"""
JOB_MINIMUM_PERIOD = timedelta(seconds=1)
"""Jobs are named after the second of their slot: the job target needs slots this far apart."""


def parse_spec(raw: Mapping[str, object]) -> models.ScheduledJobSpec:
    """Read an object's ``spec`` by its wire (camelCase) names.

    Raises ``InvalidSpecError`` naming the first offending field in camelCase, with a count of
    any further problems; never a pydantic error.
    """
    try:
        return models.ScheduledJobSpec.model_validate(raw, by_alias=True, by_name=False)
    except pydantic.ValidationError as error:
        raise _first_problem(error) from None


def plan_for(spec: models.ScheduledJobSpec, *, uid: str) -> plans.JobPlan:
    """The plan for the object with ``uid``; its jitter offset derives from the uid.

    Raises ``InvalidSpecError`` for a cron expression or time zone that does not parse, for
    a jitter that is not shorter than the schedule's shortest period (a jittered slot must
    still fire before the next nominal one).
    """
    schedule = schedules.build(
        schedule=spec.schedule,
        every=spec.every,
        time_zone=spec.time_zone,
        rules=dst.DstRules(nonexistent=spec.dst.nonexistent, ambiguous=spec.dst.ambiguous),
        field_prefix=f"{SPEC}.",
    )
    timeout = durations.parse(spec.timeout, field=f"{SPEC}.timeout")
    if spec.target.job is not None:
        if schedule.shortest_period < JOB_MINIMUM_PERIOD:
            field = "every" if spec.every is not None else "schedule"
            raise InvalidSpecError(
                f"{SPEC}.{field}",
                "the job target needs slots at least 1s apart (its Jobs are named after the "
                "second of their slot)",
            )
        timeout += JOB_TIMEOUT_MARGIN
    return plans.JobPlan(
        schedule=schedule,
        offset=_jitter_offset(spec.jitter, schedule=schedule, uid=uid),
        missed_runs=_missed_runs(spec.missed_runs),
        concurrency=spec.concurrency_policy,
        max_queued=spec.max_queued,
        timeout=timeout,
        retry_lost_runs=spec.retry_lost_runs,
    )


def _jitter_offset(text: str | None, *, schedule: timeline.Schedule, uid: str) -> timedelta:
    if text is None:
        return timedelta()
    jitter = durations.parse(text, field=f"{SPEC}.jitter")
    period = schedule.shortest_period
    if jitter >= period:
        raise InvalidSpecError(
            f"{SPEC}.jitter",
            f"{text} must be shorter than the shortest time between two slots of the "
            f"schedule ({durations.format(period)})",
        )
    return slots.jitter_offset(uid, jitter=jitter, period=period)


def _missed_runs(spec: models.MissedRunsSpec) -> missed.MissedRuns:
    deadline = spec.starting_deadline
    return missed.MissedRuns(
        policy=spec.policy,
        max_catch_up=spec.max_catch_up,
        starting_deadline=(
            None
            if deadline is None
            else durations.parse(deadline, field=f"{SPEC}.missedRuns.startingDeadline")
        ),
    )


def _first_problem(error: pydantic.ValidationError) -> InvalidSpecError:
    details = error.errors(include_url=False)
    field, problem = _describe(details[0])
    if len(details) > 1:
        more = len(details) - 1
        problem += f" (and {more} more problem{'s' if more > 1 else ''})"
    return InvalidSpecError(field, problem)


def _describe(detail: pydantic_core.ErrorDetails) -> tuple[str, str]:
    """The camelCase path and a sentence for one pydantic error."""
    path = _path(detail["loc"])
    cause = detail.get("ctx", {}).get("error")
    if isinstance(cause, InvalidSpecError):
        # Raised by the models' own validators, with a field relative to the model.
        return (f"{path}.{cause.field}" if cause.field else path), cause.problem
    match detail["type"]:
        case "missing":
            return path, "required"
        case "extra_forbidden":
            return path, "unknown field"
    given = detail.get("input")
    if isinstance(given, str | int | float | bool):
        return path, f"{detail['msg']} (got {given!r})"
    return path, detail["msg"]


def _path(loc: tuple[int | str, ...]) -> str:
    """``('missedRuns', 'maxCatchUp')`` → ``spec.missedRuns.maxCatchUp``; list items as ``[0]``.

    A key users made up (an unknown field) is quoted as JSON, ``spec.dst["\\u001b[2J"]``: the
    path lands in the Ready condition, an Event and the logs, where a raw newline or terminal
    escape sequence from the object could forge lines or rewrite a terminal.
    """
    path = SPEC
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            path += f".{part}"
        else:
            path += f"[{json.dumps(part)}]"
    return path
