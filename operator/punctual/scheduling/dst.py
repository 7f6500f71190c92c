"""Local wall-clock times to UTC instants, with explicit rules for DST transitions.

A local time can exist once (the normal case), never (a spring-forward gap) or twice (a
fall-back overlap). ``DstRules`` says what a schedule does in the two odd cases. Schedules whose
hour field is a wildcard follow real elapsed time instead (``REAL_TIME``): a time in a gap simply
does not happen, a repeated time happens twice, as in Vixie cron.
"""

import enum
import functools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from punctual.scheduling import timeline


class Nonexistent(enum.StrEnum):
    """What a slot does when its local time falls in a spring-forward gap."""

    SHIFT_FORWARD = "ShiftForward"
    """Run once at the first instant after the gap; slots inside one gap coalesce into it."""
    SKIP = "Skip"
    """Do not run that day."""


class Ambiguous(enum.StrEnum):
    """Which occurrence(s) of a local time repeated by a fall-back transition run."""

    FIRST = "First"
    SECOND = "Second"
    BOTH = "Both"


@dataclass(frozen=True, slots=True)
class DstRules:
    nonexistent: Nonexistent = Nonexistent.SHIFT_FORWARD
    ambiguous: Ambiguous = Ambiguous.FIRST


REAL_TIME = DstRules(nonexistent=Nonexistent.SKIP, ambiguous=Ambiguous.BOTH)
"""Wildcard-hour schedules: times in a gap never happen, repeated times happen twice."""


def resolve(naive: datetime, zone: ZoneInfo, rules: DstRules) -> tuple[timeline.Occurrence, ...]:
    """The UTC occurrences, in order, of the naive local time ``naive`` in ``zone``."""
    before = naive.replace(tzinfo=zone, fold=0).utcoffset()
    after = naive.replace(tzinfo=zone, fold=1).utcoffset()
    assert before is not None  # ZoneInfo always has offsets
    assert after is not None
    if before == after:
        return (timeline.Occurrence(at=_utc(naive - before), nominal=naive),)
    if before > after:
        return _repeated(naive, first=_utc(naive - before), second=_utc(naive - after), rules=rules)
    if rules.nonexistent is Nonexistent.SKIP:
        return ()
    gap_end = _transition(zone, not_after=_utc(naive - after), after=_utc(naive - before))
    adjustment = timeline.Adjustment.SHIFTED_FORWARD
    return (timeline.Occurrence(at=gap_end, nominal=naive, adjustment=adjustment),)


def after_gap(naive: datetime, zone: ZoneInfo) -> datetime:
    """The naive local time at which the spring-forward gap holding ``naive`` ends.

    A scan for slots under ``Nonexistent.SKIP`` jumps there: a schedule with seconds has
    thousands of local times in one gap, and one that names only such times never fires.
    """
    before = naive.replace(tzinfo=zone, fold=0).utcoffset()
    after = naive.replace(tzinfo=zone, fold=1).utcoffset()
    assert before is not None  # ZoneInfo always has offsets
    assert after is not None
    end = _transition(zone, not_after=_utc(naive - after), after=_utc(naive - before))
    return (end + after).replace(tzinfo=None)


def scan_start(instant: datetime, zone: ZoneInfo) -> datetime:
    """The naive local time from which to scan for the slots after ``instant``.

    Normally the local time of ``instant``. During the first pass of a repeated (fall-back)
    period, the second occurrences of local times already passed still lie ahead, so the scan
    starts that much earlier.
    """
    local = instant.astimezone(zone)
    naive = local.replace(tzinfo=None)
    if local.fold == 0:
        offset = local.utcoffset()
        second_offset = naive.replace(tzinfo=zone, fold=1).utcoffset()
        assert offset is not None
        assert second_offset is not None
        if second_offset < offset:
            return naive - (offset - second_offset)
    return naive


@dataclass(frozen=True, slots=True)
class OffsetChange:
    """A change of a zone's UTC offset: a spring-forward gap when ``after`` is the larger, a
    fall-back repeat when it is the smaller."""

    at: datetime
    """The UTC instant the new offset starts."""
    before: timedelta
    after: timedelta


def offset_changes(zone: ZoneInfo, *, start: datetime, end: datetime) -> tuple[OffsetChange, ...]:
    """The changes of ``zone``'s UTC offset in ``(start, end]`` (aware instants), in order."""
    found = (
        change
        for year in range(start.astimezone(UTC).year, end.astimezone(UTC).year + 1)
        for change in _changes_of_year(zone, year)
    )
    return tuple(change for change in found if start < change.at <= end)


@functools.lru_cache(maxsize=1024)
def _changes_of_year(zone: ZoneInfo, year: int) -> tuple[OffsetChange, ...]:
    """The changes of ``zone``'s offset in ``(January 1, next January 1]`` of ``year`` in UTC,
    found once per zone and year: the offset is looked at every day and bisected where it
    differs (no zone changes its offset twice within a day). A count of slots asks for the
    changes of every year of each window it counts, and narrowing a window down asks many times.
    """
    if year >= _LAST_YEAR:
        return ()
    changes: list[OffsetChange] = []
    day = datetime(year, 1, 1, tzinfo=UTC)
    offset = _offset(day, zone)
    while day.year == year:
        following = day + _DAY
        following_offset = _offset(following, zone)
        if following_offset != offset:
            at = _transition(zone, not_after=day, after=following)
            changes.append(OffsetChange(at=at, before=offset, after=following_offset))
        day, offset = following, following_offset
    return tuple(changes)


def _offset(instant: datetime, zone: ZoneInfo) -> timedelta:
    offset = instant.astimezone(zone).utcoffset()
    assert offset is not None  # ZoneInfo always has offsets
    return offset


_DAY = timedelta(days=1)
_LAST_YEAR = 9999
"""Its days have no following day to compare with, and no schedule looks there."""


def _repeated(
    naive: datetime, *, first: datetime, second: datetime, rules: DstRules
) -> tuple[timeline.Occurrence, ...]:
    first_occurrence = timeline.Occurrence(
        at=first, nominal=naive, adjustment=timeline.Adjustment.FIRST_OF_REPEATED
    )
    second_occurrence = timeline.Occurrence(
        at=second, nominal=naive, adjustment=timeline.Adjustment.SECOND_OF_REPEATED
    )
    match rules.ambiguous:
        case Ambiguous.FIRST:
            return (first_occurrence,)
        case Ambiguous.SECOND:
            return (second_occurrence,)
        case Ambiguous.BOTH:
            return (first_occurrence, second_occurrence)


def _transition(zone: ZoneInfo, *, not_after: datetime, after: datetime) -> datetime:
    """The instant in ``(not_after, after]`` where ``zone``'s UTC offset changes, to the second.

    zoneinfo does not expose its transitions, so bisect on the offset.
    """
    old_offset = not_after.astimezone(zone).utcoffset()
    low, high = not_after, after
    while high - low > _RESOLUTION:
        middle = low + (high - low) / 2
        if middle.astimezone(zone).utcoffset() == old_offset:
            low = middle
        else:
            high = middle
    # Transitions fall on whole seconds: the first whole second after ``low``.
    return low.replace(microsecond=0) + _RESOLUTION


_RESOLUTION = timedelta(seconds=1)


def _utc(naive_utc: datetime) -> datetime:
    return naive_utc.replace(tzinfo=UTC)
