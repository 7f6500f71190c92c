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
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import pydantic
import pydantic_core

from punctual.api import models, warm_pods
from punctual.scheduling import (
    dst,
    durations,
    exclusions,
    merged,
    missed,
    overlap,
    plans,
    schedules,
    slots,
    timeline,
    windows,
    zones,
)
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
KIB = 1024
SCHEDULE_HORIZON_YEARS = 10
"""How soon a schedule must fire, at the latest, to be accepted (``punctual run
--schedule-horizon-years``): a schedule that names only times that never come (a local time in
every spring-forward gap, with ``dst.nonexistent: Skip``; the fifth Monday of February) would
never run. Ten years accept every yearly schedule and 29 February, at most eight years from the
next one (2096 to 2104)."""
_YEAR = timedelta(days=366)
"""A year of the horizon: the longest calendar year, so N of them cover N calendar years."""
LONGEST_SCHEDULE_HORIZON_YEARS = timeline.SEARCH_HORIZON // _YEAR
"""The horizon cannot reach past the search for a schedule's next slot."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Bounds:
    """What the platform team allows one job: ``punctual run``'s flags, each named in the
    message of the spec it refuses. The operator is shared by every namespace it watches, so
    one tenant's job must not cost the others what it takes: a schedule faster than the
    platform allows, a run that holds its place for days, a spec the operator keeps in memory
    and sends on every run, or runs that pile up behind a target that never answers.

    Sizes are measured on what the operator keeps and sends (compact JSON, UTF-8 bytes), not on
    the YAML users wrote.
    """

    min_period: timedelta = timedelta(seconds=1)
    """The shortest time allowed between two slots of a schedule (``--min-period``)."""
    max_timeout: timedelta = timedelta(hours=24)
    """The longest ``spec.timeout`` (``--max-timeout``)."""
    max_runs_in_flight: int = overlap.MAX_RUNS_IN_FLIGHT
    """The most runs of one job in flight at once (``--max-runs-in-flight-per-job``): a slot
    due at that many is skipped and counted ``SkippedInFlightLimit``."""
    max_queued: int = 100
    """The largest ``spec.maxQueued`` (``--max-queued-runs-per-job``)."""
    max_job_template_bytes: int = 64 * KIB
    """The largest ``spec.target.job.template``, as JSON (``--max-job-template-bytes``)."""
    max_http_body_bytes: int = 64 * KIB
    """The largest ``spec.target.http.body`` (``--max-http-body-bytes``)."""
    max_http_headers_bytes: int = 16 * KIB
    """The largest ``spec.target.http.headers``, as sent: ``Name: value`` and a line break
    each (``--max-http-headers-bytes``)."""
    max_queue_payload_bytes: int = 64 * KIB
    """The largest ``spec.target.queue.payload``, or a task's arguments (and a taskiq task's
    labels, a BullMQ job's data), as JSON (``--max-queue-payload-bytes``)."""
    schedule_horizon_years: int = SCHEDULE_HORIZON_YEARS
    """A schedule must fire within this many years of now (``--schedule-horizon-years``; see
    ``check_fires``)."""

    def __post_init__(self) -> None:
        if self.min_period < timedelta(milliseconds=1):
            raise InvalidSpecError("--min-period", "must be at least 1ms")
        if self.max_timeout <= timedelta():
            raise InvalidSpecError("--max-timeout", "must be more than 0")
        for flag, value in (
            ("--max-runs-in-flight-per-job", self.max_runs_in_flight),
            ("--max-queued-runs-per-job", self.max_queued),
            ("--max-job-template-bytes", self.max_job_template_bytes),
            ("--max-http-body-bytes", self.max_http_body_bytes),
            ("--max-http-headers-bytes", self.max_http_headers_bytes),
            ("--max-queue-payload-bytes", self.max_queue_payload_bytes),
        ):
            if value < 1:
                raise InvalidSpecError(flag, "must be at least 1")
        if not 1 <= self.schedule_horizon_years <= LONGEST_SCHEDULE_HORIZON_YEARS:
            raise InvalidSpecError(
                "--schedule-horizon-years",
                f"must be 1 to {LONGEST_SCHEDULE_HORIZON_YEARS} (how far the search for a "
                "schedule's next slot looks)",
            )


DEFAULT_BOUNDS = Bounds()
"""The bounds of an operator run with the defaults of its flags."""
UNBOUNDED = Bounds(
    min_period=timedelta(milliseconds=1),
    max_timeout=timedelta.max,
    max_runs_in_flight=sys.maxsize,
    max_queued=sys.maxsize,
    max_job_template_bytes=sys.maxsize,
    max_http_body_bytes=sys.maxsize,
    max_http_headers_bytes=sys.maxsize,
    max_queue_payload_bytes=sys.maxsize,
)
"""Only what the API itself allows: for the commands that check a spec without knowing the
operator's flags (``punctual convert``, ``punctual backfill``). The operator checks its own
bounds when the spec is applied."""


def parse_spec(raw: Mapping[str, object]) -> models.ScheduledJobSpec:
    """Read an object's ``spec`` by its wire (camelCase) names.

    Raises ``InvalidSpecError`` naming the first offending field in camelCase, with a count of
    any further problems; never a pydantic error.
    """
    try:
        return models.ScheduledJobSpec.model_validate(raw, by_alias=True, by_name=False)
    except pydantic.ValidationError as error:
        raise _first_problem(error) from None


def plan_for(
    spec: models.ScheduledJobSpec,
    *,
    uid: str,
    hash_key: str | None = None,
    bounds: Bounds = DEFAULT_BOUNDS,
    skipped: Iterable[datetime] = (),
    calendars: Mapping[str, Mapping[str, object]] | None = None,
) -> plans.JobPlan:
    """The plan for the object with ``uid``; its jitter offset derives from the uid, the
    values of its schedule's ``H`` from ``hash_key`` (``hashed.job_key``: its namespace and
    name, which outlive the uid; None: no job is named, and an ``H`` is refused). The plan's
    cron schedule carries its expression with every ``H`` resolved. Its schedule leaves out
    the days of ``spec.exclude`` and of the Calendars it names (``calendars``: the specs of
    the Calendars of the job's namespace by name, a name missing ``CalendarNotFoundError``;
    None: the Calendars are not looked at)
    and the ``skipped`` slots (``punctual.dev/skip``).

    Raises ``InvalidSpecError`` for a cron expression or time zone that does not parse, for
    a jitter that is not shorter than the schedule's shortest period (a jittered slot must
    still fire before the next nominal one), and for whatever goes past the platform's
    ``bounds``.
    """
    schedule, entries = _schedule(spec, hash_key=hash_key)
    schedule = exclusions.excluding(
        schedule,
        _exclusions(spec, skipped=skipped, calendars=calendars),
        slot_steps=len(entries.entries) if entries is not None else 1,
    )
    schedule_field = (
        f"{SPEC}.every"
        if spec.every is not None
        else f"{SPEC}.schedule"
        if spec.schedule is not None
        else f"{SPEC}.schedules"
        if spec.schedules is not None
        else f"{SPEC}.startsAt"
    )
    if spec.target.job is not None and schedule.shortest_period < JOB_MINIMUM_PERIOD:
        raise InvalidSpecError(
            schedule_field,
            "the job target needs slots at least 1s apart (its Jobs are named after the "
            "second of their slot)",
        )
    if spec.target.job is not None:
        _check_whole_seconds(spec)
    if schedule.shortest_period < bounds.min_period:
        raise InvalidSpecError(
            schedule_field,
            f"slots {durations.format(schedule.shortest_period)} apart: this operator allows "
            f"no less than {durations.format(bounds.min_period)} between two slots "
            "(punctual run --min-period)",
        )
    timeout = durations.parse(spec.timeout, field=f"{SPEC}.timeout")
    if timeout > bounds.max_timeout:
        raise InvalidSpecError(
            f"{SPEC}.timeout",
            f"{spec.timeout} is longer than the {durations.format(bounds.max_timeout)} this "
            "operator allows one run (punctual run --max-timeout)",
        )
    if spec.max_queued > bounds.max_queued:
        raise InvalidSpecError(
            f"{SPEC}.maxQueued",
            f"{spec.max_queued} is more than the {bounds.max_queued} queued runs this operator "
            "allows one job (punctual run --max-queued-runs-per-job)",
        )
    _check_sizes(spec.target, bounds=bounds)
    lead = _warm_lead(spec, schedule=schedule, timeout=timeout)
    if spec.target.job is not None:
        timeout += JOB_TIMEOUT_MARGIN
    return plans.JobPlan(
        schedule=schedule,
        offset=_jitter_offset(spec.jitter, schedule=schedule, uid=uid),
        missed_runs=_missed_runs(spec.missed_runs),
        concurrency=spec.concurrency_policy,
        max_queued=spec.max_queued,
        max_runs_in_flight=bounds.max_runs_in_flight,
        timeout=timeout,
        retry_lost_runs=spec.retry_lost_runs,
        warm_lead=lead,
        entries=entries,
        history=history(spec.history),
    )


def shown_schedule(spec: models.ScheduledJobSpec) -> str:
    """The schedule as ``kubectl get``'s SCHEDULE column shows it (``status.schedule``): the
    cron text as written, ``every 10s``, ``3 schedules`` for several, or ``once at <startsAt>``
    for a one-off.

    A printer column reads one field, and a job has its schedule in one of several (or in
    none): the operator states it in status. The text is the spec's, not the cron with its ``H``
    values resolved (``punctual next --job`` prints those): a resolved ``H/1`` is hundreds of
    characters, and CronJob's column shows the text as written too.
    """
    if spec.schedule is not None:
        return spec.schedule
    if spec.every is not None:
        return f"every {spec.every}"
    if spec.schedules:
        return f"{len(spec.schedules)} schedules"
    assert spec.starts_at is not None  # narrowed by the models' check
    return f"once at {timeline.rfc3339(spec.starts_at)}"


def _schedule(
    spec: models.ScheduledJobSpec, *, hash_key: str | None
) -> tuple[timeline.Schedule, merged.Merged | None]:
    """The spec's schedule within its active window, and its entries merged when it has
    several (``spec.schedules``); with none of ``schedule``, ``every`` or ``schedules``, the
    one-off at ``startsAt`` (the models make sure it is set)."""
    for field, instant in (("startsAt", spec.starts_at), ("endsAt", spec.ends_at)):
        if instant is not None and not timeline.EPOCH <= instant < _LATEST_BOUND:
            raise InvalidSpecError(
                f"{SPEC}.{field}",
                f"{timeline.rfc3339(instant)} is outside the years 1970 to 8999",
            )
    rules = dst.DstRules(nonexistent=spec.dst.nonexistent, ambiguous=spec.dst.ambiguous)
    entries: merged.Merged | None = None
    if spec.schedules is not None:
        entries = merged.merge(
            [
                merged.Entry(
                    entry.name,
                    _entry_schedule(
                        entry, index=index, time_zone=spec.time_zone, rules=rules, hash_key=hash_key
                    ),
                )
                for index, entry in enumerate(spec.schedules)
            ]
        )
        schedule: timeline.Schedule = entries
    elif spec.schedule is None and spec.every is None:
        zones.parse(spec.time_zone, field=f"{SPEC}.timeZone")
        assert spec.starts_at is not None  # narrowed by the models' check
        return windows.OneOff(spec.starts_at), None
    else:
        schedule = schedules.build(
            schedule=spec.schedule,
            every=spec.every,
            time_zone=spec.time_zone,
            rules=rules,
            field_prefix=f"{SPEC}.",
            hash_key=hash_key,
        )
    window = windows.Window(starts_at=spec.starts_at, ends_at=spec.ends_at)
    return windows.within(schedule, window), entries


class CalendarNotFoundError(InvalidSpecError):
    """``spec.exclude.calendars`` names a Calendar its namespace does not hold (yet): the job
    is not Ready, with this reason, until it does."""

    reason = "CalendarNotFound"


def _exclusions(
    spec: models.ScheduledJobSpec,
    *,
    skipped: Iterable[datetime],
    calendars: Mapping[str, Mapping[str, object]] | None,
) -> exclusions.Exclusions:
    """What ``spec.exclude``, the Calendars it names and the ``skipped`` slots leave out, local
    days in the exclusion's zone (the job's unless it names one); errors name the entry
    (``spec.exclude.days[1]``, ``spec.exclude.calendars[0]``)."""
    exclude = spec.exclude or models.ExcludeSpec()
    where = f"{SPEC}.exclude"
    zone = (
        zones.parse(exclude.time_zone, field=f"{where}.timeZone")
        if exclude.time_zone is not None
        else zones.parse(spec.time_zone, field=f"{SPEC}.timeZone")
    )
    ranges, rules = _days(exclude, prefix=where)
    for index, name in enumerate(exclude.calendars):
        field = f"{where}.calendars[{index}]"
        if calendars is None:
            continue  # not looked at (admission: a Calendar may come after its job)
        raw = calendars.get(name)
        if raw is None:
            raise CalendarNotFoundError(field, f"no Calendar {name!r} in the job's namespace")
        try:
            more_ranges, more_rules = _days(
                models.CalendarSpec.model_validate(raw, by_alias=True, by_name=False),
                prefix=SPEC,
            )
        except pydantic.ValidationError as error:
            raise InvalidSpecError(field, f"Calendar {name!r}: {_first_problem(error)}") from None
        except InvalidSpecError as error:
            raise InvalidSpecError(field, f"Calendar {name!r}: {error}") from None
        ranges += more_ranges
        rules += more_rules
    if len(rules) > exclusions.MAX_RULES:
        raise InvalidSpecError(
            where, f"more than {exclusions.MAX_RULES} recurring days, its Calendars' included"
        )
    return exclusions.Exclusions(
        zone=zone, ranges=tuple(ranges), rules=tuple(rules), skipped=frozenset(skipped)
    )


def _days(
    days: models.DaysSpec, *, prefix: str
) -> tuple[list[tuple[date, date]], list[exclusions.DayRule]]:
    ranges = [
        exclusions.parse_dates(text, field=f"{prefix}.dates[{index}]")
        for index, text in enumerate(days.dates)
    ]
    rules = [
        exclusions.parse_rule(text, field=f"{prefix}.days[{index}]")
        for index, text in enumerate(days.days)
    ]
    return ranges, rules


def _entry_schedule(
    entry: models.ScheduleEntry,
    *,
    index: int,
    time_zone: str,
    rules: dst.DstRules,
    hash_key: str | None,
) -> timeline.Schedule:
    """One entry of ``spec.schedules``, in the job's zone and DST rules unless it has its
    own; its errors name it (``spec.schedules[1].schedule``)."""
    if entry.dst is not None:
        rules = dst.DstRules(nonexistent=entry.dst.nonexistent, ambiguous=entry.dst.ambiguous)
    return schedules.build(
        schedule=entry.schedule,
        every=entry.every,
        time_zone=entry.time_zone or time_zone,
        rules=rules,
        field_prefix=f"{SPEC}.schedules[{index}].",
        hash_key=hash_key,
    )


def _check_whole_seconds(spec: models.ScheduledJobSpec) -> None:
    """Refuse an ``every`` entry of several that is no whole number of seconds, for the job
    target: two entries' slots within one second would name the same Job, and only whole
    seconds keep every slot of the merged timeline (cron slots are on whole seconds) at least
    a second from the next."""
    for index, entry in enumerate(spec.schedules or ()):
        field = f"{SPEC}.schedules[{index}].every"
        if entry.every is not None and durations.parse(entry.every, field=field) % _SECOND:
            raise InvalidSpecError(
                field,
                f"{entry.every} is not a whole number of seconds: with several schedules the "
                "job target needs every entry's slots on whole seconds (its Jobs are named "
                "after the second of their slot)",
            )


_SECOND = timedelta(seconds=1)
_LATEST_BOUND = datetime(9000, 1, 1, tzinfo=UTC)
"""A window's bounds stay before the year the search for slots never passes."""
WARM_START = f"{SPEC}.target.job.warmStart"


def history(spec: models.HistorySpec) -> plans.History:
    """How many finished runs ``spec.history`` keeps, as ``plan_for`` carries it in
    ``JobPlan.history``."""
    return plans.History(succeeded=spec.succeeded, failed=spec.failed)


def warm_lead(warm_start: models.WarmStart) -> timedelta:
    """How long before its slot a job target's Job is armed (``warmStart.lead``), as checked
    against the schedule by ``plan_for``, which carries it as ``JobPlan.warm_lead``."""
    return durations.parse(warm_start.lead, field=f"{WARM_START}.lead")


def _warm_lead(
    spec: models.ScheduledJobSpec, *, schedule: timeline.Schedule, timeout: timedelta
) -> timedelta | None:
    """The warm start's lead, refused when an armed Job could meet the previous slot's run
    still going (the lead must fit in the shortest gap between two slots, less the timeout), and
    its template when the rewrite cannot hold it (``warm_pods.check``). ``Queue`` is refused
    beside it: a later slot's Job, armed during the lead, counts as a run in flight like any
    unfinished Job of the job, so a queued slot would wait for it, and it for the queued one."""
    job = spec.target.job
    if job is None or job.warm_start is None:
        return None
    if spec.concurrency_policy is overlap.ConcurrencyPolicy.QUEUE:
        raise InvalidSpecError(
            f"{SPEC}.concurrencyPolicy",
            "Queue cannot go with spec.target.job.warmStart: the Job armed ahead of a later "
            "slot counts as a run in flight, and would hold back the slot queued before it; "
            "use Forbid, Allow or Replace",
        )
    lead = warm_lead(job.warm_start)
    period = schedule.shortest_period
    room = max(period - timeout, timedelta())
    if lead > room:
        sampled = (
            ""
            if spec.every is not None
            else " (the shortest gap in a sample of the cron schedule's slots, as for jitter)"
        )
        raise InvalidSpecError(
            f"{WARM_START}.lead",
            f"{job.warm_start.lead} is more than the {durations.format(period)} between two "
            f"slots{sampled} less spec.timeout ({spec.timeout}): at most "
            f"{durations.format(room)}, so that a Job armed ahead of its slot never runs beside "
            "the previous slot's",
        )
    warm_pods.check(job.template, mode=job.warm_start.mode)
    return lead


def check_fires(
    spec: models.ScheduledJobSpec,
    plan: plans.JobPlan,
    *,
    now: datetime,
    years: int = SCHEDULE_HORIZON_YEARS,
) -> None:
    """Raise ``InvalidSpecError`` unless ``plan``'s schedule fires within ``years`` of ``now``.

    A schedule whose active window is over (``windows.has_ended``) is valid: the job is then
    Ready with reason ``Ended``. Bounded in time: the search for the next slot stops at its
    limit (ten years), and jumps over the local times of a DST gap instead of walking them.
    """
    excluding = plan.schedule if isinstance(plan.schedule, exclusions.Excluding) else None
    search = excluding.search(now) if excluding is not None else None
    first = search.found if search is not None else plan.schedule.next_after(now)
    if first is not None and first.at <= now + years * _YEAR:
        return
    if first is None and windows.has_ended(plan.schedule, after=now):
        return  # its window is over: valid, and Ready with reason Ended
    if excluding is not None and search is not None:
        gave_up_at = search.gave_up_at
        if gave_up_at is not None:
            raise InvalidSpecError(
                f"{SPEC}.exclude",
                "leaves out every slot up to "
                f"{timeline.rfc3339(gave_up_at)}, and the search for one that runs stops after "
                f"{exclusions.MAX_SEARCH_STEPS:,} steps (a slot looked at is one, a year of a "
                "recurring day as many as the days it names): exclude long stretches with "
                "date ranges, or schedule fewer slots",
            )
        base = excluding.schedule.next_after(now)
        if base is not None and base.at <= now + years * _YEAR:
            raise InvalidSpecError(
                f"{SPEC}.exclude",
                f"excludes every slot in the next {years} years: a schedule must fire within "
                "that to be accepted (punctual run --schedule-horizon-years)",
            )
    if spec.schedules is not None:
        field, named = (
            f"{SPEC}.schedules",
            f"the merged timeline of its {len(spec.schedules)} entries",
        )
    elif spec.schedule is None and spec.every is None:
        field, named = f"{SPEC}.startsAt", timeline.rfc3339(spec.starts_at or now)
    elif spec.every is not None:
        field, named = f"{SPEC}.every", repr(spec.every)
    else:
        field, named = f"{SPEC}.schedule", f"{spec.schedule!r} in {spec.time_zone}"
        if spec.dst.nonexistent is dst.Nonexistent.SKIP:
            named += (
                " with dst.nonexistent: Skip (a local time in a spring-forward gap never comes)"
            )
    raise InvalidSpecError(
        field,
        f"{named} has no slot in the next {years} years: a schedule must fire within that to "
        "be accepted (punctual run --schedule-horizon-years)",
    )


def _check_sizes(target: models.Target, *, bounds: Bounds) -> None:
    """Refuse a target field larger than the platform allows, measured as kept and sent."""
    measured: list[tuple[str, int, int, str]] = []
    if target.job is not None:
        measured.append(
            (
                "job.template",
                _json_bytes(target.job.template),
                bounds.max_job_template_bytes,
                "--max-job-template-bytes",
            )
        )
    if target.http is not None:
        headers = "".join(f"{name}: {value}\r\n" for name, value in target.http.headers.items())
        measured.append(
            (
                "http.headers",
                _utf8_bytes(headers),
                bounds.max_http_headers_bytes,
                "--max-http-headers-bytes",
            )
        )
        if target.http.body is not None:
            measured.append(
                (
                    "http.body",
                    _utf8_bytes(target.http.body),
                    bounds.max_http_body_bytes,
                    "--max-http-body-bytes",
                )
            )
    if target.queue is not None and target.queue.payload is not None:
        measured.append(
            (
                "queue.payload",
                _json_bytes(target.queue.payload),
                bounds.max_queue_payload_bytes,
                "--max-queue-payload-bytes",
            )
        )
    found = None if target.queue is None else target.queue.task()
    if found is not None:
        name, task = found
        sent: dict[str, pydantic.JsonValue] = (
            {"data": task.data or {}}
            if isinstance(task, models.BullmqJob)
            else {"arguments": task.arguments or {}}
        )
        if isinstance(task, models.TaskiqTask):
            sent["labels"] = task.labels or {}
        for field, value in sent.items():
            measured.append(
                (
                    f"queue.{name}.{field}",
                    _json_bytes(value),
                    bounds.max_queue_payload_bytes,
                    "--max-queue-payload-bytes",
                )
            )
    for field, size, limit, flag in measured:
        if size > limit:
            raise InvalidSpecError(
                f"{SPEC}.target.{field}",
                f"{size} bytes, more than the {limit} this operator allows (punctual run {flag})",
            )


def _json_bytes(value: object) -> int:
    """The size of ``value`` as compact JSON in UTF-8: how the operator sends it."""
    return _utf8_bytes(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _utf8_bytes(text: str) -> int:
    """The size of ``text`` in UTF-8; a lone surrogate (JSON may escape one) counted as the
    three bytes it would take, never an error."""
    return len(text.encode(errors="surrogatepass"))


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
