"""Cron schedules evaluated in a time zone, with explicit DST rules.

croniter does the calendar arithmetic on *naive local* times, where no DST exists; ``dst``
then maps each local time to UTC. That split is what prevents the classic bug of running a
daily 02:30 twice on a fall-back night (raw croniter on aware datetimes does).

Expressions: 5 fields, or 6 with LEADING seconds, or an @-macro; ``cron_fields`` says which
extensions (``L``, ``W``, ``#``, ``?``, wrapping ranges) they may use. Schedules whose hour field is
a wildcard (``*``, ``*/n``, ``0-23``, ``0-23/n``) follow real elapsed time; fixed-hour schedules
follow ``DstRules``, whatever their day fields say.
"""

import functools
import itertools
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, CroniterError, croniter

from punctual.scheduling import cron_counting, cron_fields, dst, hashed, timeline
from punctual.scheduling.errors import InvalidSpecError

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIELDS_5 = ("minute", "hour", "day-of-month", "month", "day-of-week")
_FIELDS_6 = ("second", *_FIELDS_5)
_RANGES = {
    "second": "0-59",
    "minute": "0-59",
    "hour": "0-23",
    "day-of-month": "1-31, L (last day) or 15W (nearest weekday)",
    "month": "1-12 or JAN-DEC",
    "day-of-week": "0-7 or SUN-SAT, 5L (last Friday) or 1#2 (second Monday)",
}
_WILDCARD_HOUR = re.compile(r"\*(/\d+)?|0-23(/\d+)?")
# Random (R) fields would give each replica different slots; an H left here is not an H item
# (``hashed`` resolves those first).
_NONDETERMINISTIC = re.compile(r"[HR]", re.IGNORECASE)
_SAMPLE_START = datetime(2026, 1, 1)
_SAMPLE_SIZE = 64


@dataclass(frozen=True, slots=True)
class CronSchedule:
    expression: str
    """Normalized: 5 fields, or 6 with leading seconds (macros expanded)."""
    zone: ZoneInfo
    rules: dst.DstRules
    """The rules in effect: the spec's for fixed-hour schedules, REAL_TIME for wildcard hours."""

    @property
    def shortest_period(self) -> timedelta:
        return _shortest_period(self.expression)

    def next_after(self, instant: datetime) -> timeline.Occurrence | None:
        return _next_after(self, instant)

    def due_between(
        self, *, after: datetime, until: datetime, keep: int, steps: int | None = None
    ) -> timeline.DueSlots:
        """Counted by days (``cron_counting``), not walked: ``steps`` never binds."""
        return timeline.counted_due(self, count=self._count, after=after, until=until, keep=keep)

    def _count(self, *, after: datetime, until: datetime) -> int:
        return cron_counting.count(
            self.expression, zone=self.zone, rules=self.rules, after=after, until=until
        )


def parse(
    expression: str,
    *,
    zone: ZoneInfo,
    rules: dst.DstRules = dst.DstRules(),
    field: str = "spec.schedule",
    hash_key: str | None = None,
) -> CronSchedule:
    """Validate ``expression``; errors name ``field`` and the offending cron field.

    ``hash_key``: the job's ``hashed.job_key``, which its ``H`` values derive from (None: no
    job is named, and an ``H`` is refused).
    """
    normalized = _normalize(expression, field=field, hash_key=hash_key)
    hour = normalized.split()[-4]
    effective = dst.REAL_TIME if _WILDCARD_HOUR.fullmatch(hour) else rules
    schedule = CronSchedule(expression=normalized, zone=zone, rules=effective)
    try:
        _shortest_period(normalized)
    except CroniterBadDateError:
        raise InvalidSpecError(field, f"{expression!r} never fires") from None
    return schedule


def _normalize(expression: str, *, field: str, hash_key: str | None) -> str:
    text = " ".join(expression.split())
    if text.startswith("@"):
        if text.lower() not in MACROS:
            known = ", ".join(MACROS)
            raise InvalidSpecError(field, f"unknown macro {text!r} (known: {known})")
        return MACROS[text.lower()]
    fields = text.split()
    if len(fields) not in (len(_FIELDS_5), len(_FIELDS_6)):
        raise InvalidSpecError(
            field,
            f"{expression!r} has {len(fields)} fields; expected 5 (minute hour day-of-month "
            "month day-of-week), or 6 with leading seconds (a year field is not supported)",
        )
    names = _FIELDS_5 if len(fields) == len(_FIELDS_5) else _FIELDS_6
    fields = hashed.resolve(fields, names, key=hash_key, field=field)
    for name, value in zip(names, fields, strict=True):
        if _NONDETERMINISTIC.search(cron_fields.strip_names(value)):
            raise InvalidSpecError(
                field,
                f"{name} field {value!r}: random (R) values are not supported, every replica "
                "must compute the same slots (H, H(a-b), H/n as list items of their own give a "
                "value fixed per job; spec.jitter spreads load)",
            )
    canonical = cron_fields.canonical(fields, names, field=field)
    for position, (name, value) in enumerate(zip(names, fields, strict=True)):
        probe = ["*"] * len(fields)
        probe[position] = canonical[position]
        if not _is_valid(probe):
            raise InvalidSpecError(
                field, f"{name} field {value!r} is not valid (expected {_RANGES[name]})"
            )
    if not _is_valid(canonical):
        raise InvalidSpecError(field, f"{expression!r} is not a valid cron expression")
    return " ".join(canonical)


def _is_valid(fields: list[str]) -> bool:
    try:
        croniter(" ".join(fields), _SAMPLE_START, second_at_beginning=len(fields) == len(_FIELDS_6))
    except CroniterError:
        return False
    return True


@functools.lru_cache(maxsize=1 << 16)
def _next_after(schedule: CronSchedule, instant: datetime) -> timeline.Occurrence | None:
    """``CronSchedule.next_after``, shared by every job with the same schedule, zone and rules.

    Thousands of jobs on one schedule ask for the slot after the same previous slot; the
    first asks croniter, the others read the answer. The scan ends at the search limit: local
    times there and beyond (plus a day, more than any UTC offset changes) cannot come before it.
    """
    # The earliest occurrence of a local time never decreases along the scan, so once a
    # local time's earliest occurrence lies after ``instant`` no later one can beat it.
    # Only the second occurrence of a repeated local time can lie after ``instant`` while
    # its first does not: then the scan goes on.
    limit = timeline.search_limit(instant)
    last_local = limit.astimezone(schedule.zone).replace(tzinfo=None) + _DAY
    local_times = _iterator(schedule.expression)
    local_times.set_current(dst.scan_start(instant, schedule.zone), force=True)
    best: timeline.Occurrence | None = None
    while (local := local_times.get_next(datetime)) <= last_local:
        occurrences = dst.resolve(local, schedule.zone, schedule.rules)
        if not occurrences:  # skipped: in a gap, as are the local times after it up to its end
            local_times.set_current(dst.after_gap(local, schedule.zone) - _SECOND, force=True)
            continue
        for occurrence in occurrences:
            if occurrence.at > instant and (best is None or occurrence.at < best.at):
                best = occurrence
        if best is not None and occurrences[0].at > instant:
            break
    return best if best is not None and best.at <= limit else None


_DAY = timedelta(days=1)
_SECOND = timedelta(seconds=1)


CACHED_EXPRESSIONS = 4096
"""Expressions whose parsed iterator and shortest period are kept: the cron texts are the
tenants' to choose, so the caches keyed by them are bounded (a text pushed out is parsed again
when next asked for: a cost, never a wrong answer)."""


@functools.lru_cache(maxsize=CACHED_EXPRESSIONS)
def _iterator(expression: str) -> croniter:
    """One croniter per expression, re-positioned for each scan.

    Building a croniter parses the expression again, which costs several times a step. Sharing
    is safe: ``next_after`` never awaits between positioning the iterator and reading it.
    """
    return croniter(expression, _SAMPLE_START, second_at_beginning=_has_seconds(expression))


def _has_seconds(expression: str) -> bool:
    return len(expression.split()) == len(_FIELDS_6)


@functools.lru_cache(maxsize=CACHED_EXPRESSIONS)
def _shortest_period(expression: str) -> timedelta:
    """The smallest gap between consecutive slots, sampled on naive (DST-free) local time.

    Deterministic, so every replica derives the same jitter cap from it.
    """
    local_times = croniter(expression, _SAMPLE_START, second_at_beginning=_has_seconds(expression))
    samples = [local_times.get_next(datetime) for _ in range(_SAMPLE_SIZE)]
    return min(later - earlier for earlier, later in itertools.pairwise(samples))
