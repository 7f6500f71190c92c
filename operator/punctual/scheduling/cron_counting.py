"""How many slots a cron schedule has in a window, counted by its days, never walked one by one.

A cron expression names a set of days (its day-of-month, month and day-of-week fields, as
croniter reads them) and, on each of them, the same times of day (hours x minutes x seconds),
all on naive local time. Between two changes of the zone's UTC offset local time is UTC shifted
by a constant, so the slots of such a stretch are the expression's local times in the shifted
interval: the times of day in the partial days at its ends, and the times of a whole day for
each day named in between. Each change of offset then does what ``dst`` decides for it: the
local times of a spring-forward gap never happen (``Skip``) or coalesce into one slot at its end
(``ShiftForward``); those a fall-back repeats happen in both passes (``Both``), or the stretch
of the pass the rules leave out is not counted (``First``, ``Second``).

The work grows with the years of the window (the days each year names, the offset changes of
each year, both found once and kept), never with its slots: a week of a schedule with seconds
costs what a week of a daily one does.
"""

import bisect
import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterError, croniter

from punctual.scheduling import dst

CACHED = 4096
"""Expressions, and years of each day rule, whose days and times of day are kept: the texts are
the tenants' to choose, so the caches keyed by them are bounded (a text pushed out is read
again when next asked for: a cost, never a wrong answer)."""
_SECOND = timedelta(seconds=1)
_DAY = timedelta(days=1)
_FIELDS_WITH_SECONDS = 6


@dataclass(frozen=True, slots=True)
class TimesOfDay:
    """The times of day an expression names on each day it names, as sorted field values."""

    hours: tuple[int, ...]
    minutes: tuple[int, ...]
    seconds: tuple[int, ...]

    @property
    def per_day(self) -> int:
        return len(self.hours) * len(self.minutes) * len(self.seconds)

    def before(self, moment: datetime) -> int:
        """How many of the times fall before the time of day of ``moment`` (whole seconds)."""
        hour = bisect.bisect_left(self.hours, moment.hour)
        earlier = hour * len(self.minutes) * len(self.seconds)
        if hour == len(self.hours) or self.hours[hour] != moment.hour:
            return earlier
        minute = bisect.bisect_left(self.minutes, moment.minute)
        earlier += minute * len(self.seconds)
        if minute == len(self.minutes) or self.minutes[minute] != moment.minute:
            return earlier
        return earlier + bisect.bisect_left(self.seconds, moment.second)


def count(
    expression: str, *, zone: ZoneInfo, rules: dst.DstRules, after: datetime, until: datetime
) -> int:
    """The slots of the normalized cron ``expression`` in ``zone`` under ``rules`` in
    ``(after, until]``: as many as walking them with ``CronSchedule.next_after`` finds."""
    # Slots fall on whole seconds: (after, until] holds the same ones as [low, high).
    low = _next_whole_second(after)
    high = _next_whole_second(until)
    if high <= low:
        return 0
    # A fall-back's left-out pass, up to a few hours on either side of its change, may overlap
    # the window from a change outside it.
    changes = dst.offset_changes(zone, start=low - _DAY, end=high + _DAY)
    left_out: list[tuple[datetime, datetime]] = []
    total = 0
    for change in changes:
        if change.after > change.before:
            total += _shifted_out_of_gap(expression, change, rules=rules, low=low, high=high)
            continue
        repeated = change.before - change.after
        match rules.ambiguous:
            case dst.Ambiguous.FIRST:
                left_out.append((change.at, change.at + repeated))
            case dst.Ambiguous.SECOND:
                left_out.append((change.at - repeated, change.at))
            case dst.Ambiguous.BOTH:
                pass
    cuts = sorted(
        {low, high}
        | {change.at for change in changes if low < change.at < high}
        | {edge for stretch in left_out for edge in stretch if low < edge < high}
    )
    for start, end in itertools.pairwise(cuts):
        if any(first <= start < last for first, last in left_out):
            continue
        offset = start.astimezone(zone).utcoffset()
        assert offset is not None  # ZoneInfo always has offsets
        total += count_local(expression, start=_naive(start + offset), end=_naive(end + offset))
    return total


def count_local(expression: str, *, start: datetime, end: datetime) -> int:
    """The local times ``expression`` names in ``[start, end)`` (naive, whole seconds)."""
    if end <= start:
        return 0
    times, day_fields = _read(expression)
    first, last = start.date(), end.date()
    if first == last:
        return times.before(end) - times.before(start) if names(day_fields, first) else 0
    total = times.per_day - times.before(start) if names(day_fields, first) else 0
    total += times.before(end) if names(day_fields, last) else 0
    return total + times.per_day * _named_between(day_fields, first + _DAY, last - _DAY)


def names(day_fields: str, day: date) -> bool:
    """Whether the day fields ``day-of-month month day-of-week`` name ``day``."""
    days = named_days(day_fields, day.year)
    index = bisect.bisect_left(days, day)
    return index < len(days) and days[index] == day


@functools.lru_cache(maxsize=CACHED)
def named_days(day_fields: str, year: int) -> tuple[date, ...]:
    """The days of ``year`` the day fields ``day-of-month month day-of-week`` name, in order:
    walked once (a step per day named), then kept for every count that passes that year."""
    days = croniter(f"0 0 {day_fields}", datetime(year, 1, 1) - _SECOND)
    found: list[date] = []
    try:
        while (day := days.get_next(datetime)).year == year:
            found.append(day.date())
    except (CroniterError, OverflowError, ValueError):  # past year 9999: no next day
        pass
    return tuple(found)


def _named_between(day_fields: str, first: date, last: date) -> int:
    """How many days of ``[first, last]`` the day fields name."""
    return sum(
        bisect.bisect_right(days, last) - bisect.bisect_left(days, first)
        for year in range(first.year, last.year + 1)
        for days in (named_days(day_fields, year),)
    )


def _shifted_out_of_gap(
    expression: str, change: dst.OffsetChange, *, rules: dst.DstRules, low: datetime, high: datetime
) -> int:
    """The one slot at the end of the gap ``change`` opens (``ShiftForward``) into which the
    local times in the gap coalesce, unless a slot of the first local time after the gap is
    there already."""
    if rules.nonexistent is dst.Nonexistent.SKIP or not low <= change.at < high:
        return 0
    gap_start, gap_end = _naive(change.at + change.before), _naive(change.at + change.after)
    if not count_local(expression, start=gap_start, end=gap_end):
        return 0
    return 0 if count_local(expression, start=gap_end, end=gap_end + _SECOND) else 1


@functools.lru_cache(maxsize=CACHED)
def _read(expression: str) -> tuple[TimesOfDay, str]:
    """The times of day of ``expression`` and its day fields, read as croniter reads them."""
    fields = expression.split()
    with_seconds = len(fields) == _FIELDS_WITH_SECONDS
    expanded = croniter(expression, second_at_beginning=with_seconds).expanded
    minutes, hours = expanded[0], expanded[1]
    seconds: Sequence[int | str] = expanded[5] if with_seconds else [0]
    times = TimesOfDay(
        hours=_values(hours, 24), minutes=_values(minutes, 60), seconds=_values(seconds, 60)
    )
    return times, " ".join(fields[-3:])


def _values(expanded: Sequence[int | str], size: int) -> tuple[int, ...]:
    if expanded == ["*"]:
        return tuple(range(size))
    return tuple(sorted({int(value) for value in expanded}))


def _next_whole_second(instant: datetime) -> datetime:
    return instant.astimezone(UTC).replace(microsecond=0) + _SECOND


def _naive(instant: datetime) -> datetime:
    return instant.replace(tzinfo=None)
