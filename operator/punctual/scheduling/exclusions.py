"""Slots a job must not run: excluded days (``spec.exclude``) and skipped occurrences.

Days are local days in the exclusion's zone (the job's ``spec.timeZone`` unless
``spec.exclude.timeZone`` says otherwise): a day runs from its local midnight to the next, so a
day around a DST change is 23 or 25 hours long and every slot in it is excluded, whatever its
UTC date. Days are excluded by date (``2026-12-25``), by an inclusive range of dates
(``2026-12-24/2026-12-31``) or by a recurring rule: the three day fields of a cron expression,
``day-of-month month day-of-week`` (``25 12 *``, ``* * SAT,SUN``, ``* 1 1#1``), read as
``spec.schedule`` reads them (docs/time.md: how the two day fields combine). One occurrence
is skipped by its instant (``punctual skip``). An excluded slot is never run and never missed:
it is counted ``excluded``.

``Excluding`` is a schedule: its slots are the runnable ones, so everything that walks a
job's slots (the loop, its missed-run policy, ``status.nextScheduleTime``, ``punctual next``,
a backfill) skips excluded slots without knowing of them; ``excluded_between`` counts the
slots it left out.
"""

import datetime as dt
import functools
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from punctual.scheduling import cron, timeline
from punctual.scheduling.errors import InvalidSpecError

MAX_DAYS = 366
"""The most dates and ranges of dates one list holds: each is looked at for every day the
search for a slot passes."""
MAX_RULES = 16
"""The most recurring rules one job's exclusions hold, its Calendars' included: each walks a
year of its days the first time a day of that year is looked at."""
MAX_SEARCH_STEPS = 10_000
"""The most steps one search for a slot that runs takes: each slot looked at is one per
schedule it asks (``Excluding.slot_steps``: the entries of a merged timeline), and each year
of a recurring rule looked at as many as the days it names (walking them is the cost).
Dense rules (16 of them naming nearly every day) would otherwise cost seconds of one search,
on the event loop; a date range is one step however long, so long stretches belong there."""
MAX_SKIPPED = 32
"""The most single occurrences skipped at once (``punctual skip``): they live in an annotation."""
RANGE_SEPARATOR = "/"
"""Between the first and the last date of a range, as in an ISO 8601 interval."""
_TICK = timedelta(microseconds=1)
_DAY = timedelta(days=1)
_DAY_FIELDS = "day-of-month month day-of-week"


@dataclass(frozen=True, slots=True)
class DayRule:
    """Recurring days: the day fields of a cron expression (``25 12 *``)."""

    text: str
    days: cron.CronSchedule
    """The rule as a daily schedule at midnight, in UTC, where no day is shorter than another."""

    def matches(self, day: date) -> bool:
        return day in _days_of_year(self.days, day.year)


@functools.lru_cache(maxsize=256)
def _days_of_year(days: cron.CronSchedule, year: int) -> frozenset[date]:
    """The days of ``year`` the rule names, found by walking its schedule (one step per day
    named, so a holiday costs two steps a year), kept for the searches that follow: every slot
    of every job excluding it asks again."""
    found: set[date] = set()
    cursor = datetime(year, 1, 1, tzinfo=UTC) - _TICK
    while (occurrence := days.next_after(cursor)) is not None and occurrence.at.year == year:
        found.add(occurrence.at.date())
        cursor = occurrence.at
    return frozenset(found)


def parse_rule(text: str, *, field: str) -> DayRule:
    """A recurring rule; errors name ``field`` and the cron field at fault."""
    parts = text.split()
    if len(parts) != len(_DAY_FIELDS.split()):
        raise InvalidSpecError(
            field, f"{text!r} has {len(parts)} fields; expected 3 ({_DAY_FIELDS}), e.g. '25 12 *'"
        )
    days = cron.parse(f"0 0 {' '.join(parts)}", zone=ZoneInfo("UTC"), field=field)
    return DayRule(text=text, days=days)


def parse_dates(text: str, *, field: str) -> tuple[date, date]:
    """A date (``2026-12-25``) or an inclusive range (``2026-12-24/2026-12-31``) as its first
    and last day."""
    first_text, separator, last_text = text.partition(RANGE_SEPARATOR)
    first = _date(first_text, text=text, field=field)
    last = _date(last_text, text=text, field=field) if separator else first
    if last < first:
        raise InvalidSpecError(field, f"{text!r} ends before it starts")
    return first, last


def _date(part: str, *, text: str, field: str) -> date:
    try:
        return date.fromisoformat(part.strip())
    except ValueError:
        raise InvalidSpecError(
            field,
            f"{text!r} is not a date (YYYY-MM-DD) or a range of dates "
            f"(YYYY-MM-DD{RANGE_SEPARATOR}YYYY-MM-DD)",
        ) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class Exclusions:
    zone: ZoneInfo
    ranges: tuple[tuple[date, date], ...] = ()
    """Inclusive first and last days."""
    rules: tuple[DayRule, ...] = ()
    skipped: frozenset[datetime] = field(default_factory=frozenset)
    """Single occurrences, as the UTC instants of their slots."""

    @property
    def empty(self) -> bool:
        return not (self.ranges or self.rules or self.skipped)

    def excluded_through(self, day: date) -> date | None:
        """The last day of the excluded stretch ``day`` begins, as far as one look can tell
        (a range's end, or ``day`` itself for a rule); None when ``day`` is not excluded."""
        through = max((last for first, last in self.ranges if first <= day <= last), default=None)
        if through is not None:
            return through
        if any(rule.matches(day) for rule in self.rules):
            return day
        return None

    def year_cost(self, year: int) -> int:
        """The search steps of looking at the days of ``year``: one per day its rules name,
        and one per rule (``MAX_SEARCH_STEPS``)."""
        return sum(len(_days_of_year(rule.days, year)) + 1 for rule in self.rules)

    def excludes(self, at: datetime) -> bool:
        return at in self.skipped or self.excluded_through(self.local_day(at)) is not None

    def local_day(self, at: datetime) -> date:
        return at.astimezone(self.zone).date()

    def day_start(self, day: date) -> datetime:
        """The UTC instant ``day`` begins in the zone: its first local midnight, or the end
        of the gap when midnight itself is skipped by a DST change."""
        return datetime.combine(day, dt.time(), tzinfo=self.zone).astimezone(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Search:
    """What one search for a slot that runs found."""

    found: timeline.Occurrence | None
    gave_up_at: datetime | None = None
    """Set when the search ran out of steps (``MAX_SEARCH_STEPS``): the slot it looked at
    last, excluded like every one before it."""


@dataclass(frozen=True, slots=True)
class Excluding:
    """``schedule``'s slots but the ones ``exclusions`` excludes."""

    schedule: timeline.Schedule
    exclusions: Exclusions
    slot_steps: int = 1
    """The search steps of looking at one slot of ``schedule``: the schedules it asks for its
    next slot (``MAX_SEARCH_STEPS``)."""

    @property
    def shortest_period(self) -> timedelta:
        return self.schedule.shortest_period

    def next_after(self, instant: datetime) -> timeline.Occurrence | None:
        return self.search(instant).found

    def search(self, instant: datetime) -> "Search":
        """The first slot after ``instant`` that runs, in at most ``MAX_SEARCH_STEPS`` steps.
        Jumps over excluded days whole: a job every second excluded for a week looks at one
        slot per day, not at each of its slots."""
        limit = timeline.search_limit(instant)
        cursor = instant
        steps = 0
        years: set[int] = set()
        while (found := self.schedule.next_after(cursor)) is not None and found.at <= limit:
            day = self.exclusions.local_day(found.at)
            if day.year not in years:
                years.add(day.year)
                steps += self.exclusions.year_cost(day.year)
            steps += self.slot_steps
            if steps > MAX_SEARCH_STEPS:
                return Search(found=None, gave_up_at=found.at)
            through = self.exclusions.excluded_through(day)
            if through is not None:
                cursor = self._day_end(through) - _TICK
            elif found.at in self.exclusions.skipped:
                cursor = found.at
            else:
                return Search(found=found)
        return Search(found=None)

    def due_between(
        self, *, after: datetime, until: datetime, keep: int, steps: int | None = None
    ) -> timeline.DueSlots:
        return timeline.scan_due(self, after=after, until=until, keep=keep, steps=steps)

    def first_excluded(self, *, after: datetime, until: datetime) -> datetime | None:
        """The first excluded slot in ``(after, until]``, if any; walks the slots that run
        before it one by one (between two slots that run, none)."""
        cursor = after
        while (found := self.schedule.next_after(cursor)) is not None and found.at <= until:
            if self.exclusions.excludes(found.at):
                return found.at
            cursor = found.at
        return None

    def excluded_between(
        self, *, after: datetime, until: datetime, keep: int, steps: int | None = None
    ) -> timeline.DueSlots:
        """The excluded slots in ``(after, until]``: how many, and the newest ``keep``. At most
        ``steps`` slots are walked (an excluded day counts its slots at once, as its schedule
        counts them), then ``resume_after`` says where to go on from."""
        newest: deque[datetime] = deque(maxlen=max(keep, 0))
        total = walked = 0
        cursor = after
        while (found := self.schedule.next_after(cursor)) is not None and found.at <= until:
            if walked == steps:
                return timeline.DueSlots(total=total, newest=tuple(newest), resume_after=cursor)
            walked += 1
            through = self.exclusions.excluded_through(self.exclusions.local_day(found.at))
            if through is None:
                if found.at in self.exclusions.skipped:
                    total += 1
                    newest.append(found.at)
                cursor = found.at
                continue
            end = min(until, self._day_end(through) - _TICK)
            left = None if steps is None else steps - walked + 1
            day = self.schedule.due_between(after=cursor, until=end, keep=keep, steps=left)
            total += day.total
            newest.extend(day.newest)
            if day.resume_after is not None:
                return timeline.DueSlots(
                    total=total, newest=tuple(newest), resume_after=day.resume_after
                )
            walked += day.total - 1
            cursor = end
        return timeline.DueSlots(total=total, newest=tuple(newest))

    def _day_end(self, day: date) -> datetime:
        return self.exclusions.day_start(day + _DAY)


def excluding(
    schedule: timeline.Schedule, exclusions: Exclusions, *, slot_steps: int = 1
) -> timeline.Schedule:
    """``schedule`` without the slots ``exclusions`` excludes (itself when none are); each of
    its slots costs the search ``slot_steps`` (``Excluding.slot_steps``)."""
    return schedule if exclusions.empty else Excluding(schedule, exclusions, slot_steps)
