"""From a ScheduledJob's ``spec`` to the plan the scheduler obeys: the operator's one check.

The API server enforces what the CRD can express (types, enums, limits, the CEL rules of
``punctual.api.models``). What it cannot (cron syntax, time-zone names, jitter against a cron
schedule's shortest period) is checked here, for every object, before anything is armed.

Every failure is an ``InvalidSpecError`` whose ``field`` is the path users wrote
(``spec.missedRuns.maxCatchUp``), ready for the Ready condition and a Warning Event: a bad
object never crashes the operator and never affects the other objects. A raw spec is read by
``punctual.api.spec_parsing``; the parts of the check that stand alone are their own modules:
the platform's bounds (``spec_bounds``), the days excluded (``exclusion_plans``) and the warm
start's lead (``warm_start_plans``).
"""

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

from punctual.api import exclusion_plans, models, schedule_models, spec_bounds, warm_start_plans
from punctual.api.spec_parsing import SPEC
from punctual.scheduling import (
    dst,
    durations,
    exclusions,
    merged,
    missed,
    plans,
    schedules,
    slots,
    timeline,
    windows,
    zones,
)
from punctual.scheduling.errors import InvalidSpecError

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


def plan_for(
    spec: models.ScheduledJobSpec,
    *,
    uid: str,
    hash_key: str | None = None,
    bounds: spec_bounds.Bounds = spec_bounds.DEFAULT_BOUNDS,
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
        exclusion_plans.plan_exclusions(spec, skipped=skipped, calendars=calendars),
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
    spec_bounds.check_sizes(spec.target, bounds=bounds)
    lead = warm_start_plans.checked_lead(spec, schedule=schedule, timeout=timeout)
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


def shown_target(spec: models.ScheduledJobSpec) -> str:
    """What a run does, as ``kubectl get``'s TARGET column (``status.target``) and ``punctual
    next`` show it: the kind under ``spec.target`` (``http``, ``job``), and for the queue
    target its format too (``queue:stream``, ``queue:celery``, ``queue:bullmq``, ...).

    A printer column reads one field, and the format is which field of ``spec.target.queue``
    is set: the operator states it in status, as it does the schedule."""
    kind = next(name for name in models.Target.model_fields if getattr(spec.target, name))
    queue = spec.target.queue
    if queue is None:
        return kind
    task = queue.task()
    return f"{kind}:{task[0] if task is not None else 'stream'}"


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


def _entry_schedule(
    entry: schedule_models.ScheduleEntry,
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


def history(spec: schedule_models.HistorySpec) -> plans.History:
    """How many finished runs ``spec.history`` keeps, as ``plan_for`` carries it in
    ``JobPlan.history``."""
    return plans.History(succeeded=spec.succeeded, failed=spec.failed)


def check_fires(
    spec: models.ScheduledJobSpec,
    plan: plans.JobPlan,
    *,
    now: datetime,
    years: int = spec_bounds.SCHEDULE_HORIZON_YEARS,
) -> None:
    """Raise ``InvalidSpecError`` unless ``plan``'s schedule fires within ``years`` of ``now``.

    A schedule whose active window is over (``windows.has_ended``) is valid: the job is then
    Ready with reason ``Ended``. Bounded in time: the search for the next slot stops at its
    limit (ten years), and jumps over the local times of a DST gap instead of walking them.
    """
    excluding = plan.schedule if isinstance(plan.schedule, exclusions.Excluding) else None
    search = excluding.search(now) if excluding is not None else None
    first = search.found if search is not None else plan.schedule.next_after(now)
    if first is not None and first.at <= now + years * spec_bounds.YEAR:
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
        if base is not None and base.at <= now + years * spec_bounds.YEAR:
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


def _missed_runs(spec: schedule_models.MissedRunsSpec) -> missed.MissedRuns:
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
