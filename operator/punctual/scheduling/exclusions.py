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

import bisect
import datetime as dt
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from punctual.scheduling import cron, cron_counting, timeline
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
    day_fields: str
    """The rule's three fields as ``spec.schedule``'s are read (``cron_counting.named_days``)."""

    def matches(self, day: date) -> bool:
        return cron_counting.names(self.day_fields, day)


def parse_rule(text: str, *, field: str) -> DayRule:
    """A recurring rule; errors name ``field`` and the cron field at fault."""
    parts = text.split()
    if len(parts) != len(_DAY_FIELDS.split()):
        raise InvalidSpecError(
            field, f"{text!r} has {len(parts)} fields; expected 3 ({_DAY_FIELDS}), e.g. '25 12 *'"
        )
    days = cron.parse(f"0 0 {' '.join(parts)}", zone=ZoneInfo("UTC"), field=field)
    return DayRule(text=text, day_fields=" ".join(days.expression.split()[-3:]))


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
        return sum(len(cron_counting.named_days(rule.day_fields, year)) + 1 for rule in self.rules)

    def excluded_stretches(self, *, first: date, last: date) -> list[tuple[date, date]]:
        """The excluded days of ``[first, last]`` as runs of consecutive days (first and last
        day of each), in order: from the ranges as they are, from the rules a day at a time."""
        spans = [(max(start, first), min(end, last)) for start, end in self.ranges]
        for rule in self.rules:
            for year in range(first.year, last.year + 1):
                days = cron_counting.named_days(rule.day_fields, year)
                named = days[bisect.bisect_left(days, first) : bisect.bisect_right(days, last)]
                spans.extend((day, day) for day in named)
        stretches: list[tuple[date, date]] = []
        for start, end in sorted(span for span in spans if span[0] <= span[1]):
            if stretches and start <= stretches[-1][1] + _DAY:
                stretches[-1] = (stretches[-1][0], max(stretches[-1][1], end))
            else:
                stretches.append((start, end))
        return stretches

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
        """The slots that run in ``(after, until]``: the schedule's count less the excluded
        ones, the newest ``keep`` taken from the last stretches of days that run. Walks no slot
        unless the schedule walks its own (a merged timeline: at most ``steps``, then
        ``resume_after`` says where to go on from)."""
        reach = self.schedule.due_between(after=after, until=until, keep=0, steps=steps)
        stretches = self._stretches(after=after, until=reach.resume_after or until)
        excluded = self._excluded(stretches, keep=0)
        newest: list[datetime] = []
        for stretch in reversed(stretches):
            if len(newest) >= keep:
                break
            if stretch.excluded:
                continue
            skipped = self._skipped_in(stretch)
            found = self.schedule.due_between(
                after=stretch.after, until=stretch.until, keep=keep + len(skipped)
            )
            newest[:0] = [at for at in found.newest if at not in skipped]
        return timeline.DueSlots(
            total=reach.total - excluded.total,
            newest=tuple(newest[max(len(newest) - keep, 0) :]) if keep > 0 else (),
            resume_after=reach.resume_after,
        )

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
        """The excluded slots in ``(after, until]``: how many, and the newest ``keep``; each
        excluded stretch of days counted as its schedule counts its slots. Walks no slot unless
        the schedule walks its own (at most ``steps``, as ``due_between``)."""
        reach = self.schedule.due_between(after=after, until=until, keep=0, steps=steps)
        stretches = self._stretches(after=after, until=reach.resume_after or until)
        excluded = self._excluded(stretches, keep=keep)
        return timeline.DueSlots(
            total=excluded.total, newest=excluded.newest, resume_after=reach.resume_after
        )

    def _excluded(self, stretches: list["_Stretch"], *, keep: int) -> timeline.DueSlots:
        """The excluded slots of ``stretches``: all of an excluded one's, the skipped ones of
        the others; the newest ``keep`` gathered from the last stretch back."""
        total = 0
        newest: list[datetime] = []
        for stretch in reversed(stretches):
            room = max(keep - len(newest), 0)
            if stretch.excluded:
                found = self.schedule.due_between(
                    after=stretch.after, until=stretch.until, keep=room
                )
                total += found.total
                newest[:0] = found.newest
            else:
                skipped = self._skipped_in(stretch)
                total += len(skipped)
                newest[:0] = skipped[max(len(skipped) - room, 0) :] if room else []
        return timeline.DueSlots(total=total, newest=tuple(newest))

    def _skipped_in(self, stretch: "_Stretch") -> list[datetime]:
        """The skipped occurrences in ``stretch`` that are slots of the schedule, in order."""
        return sorted(
            at
            for at in self.exclusions.skipped
            if stretch.after < at <= stretch.until
            and (found := self.schedule.next_after(at - _TICK)) is not None
            and found.at == at
        )

    def _stretches(self, *, after: datetime, until: datetime) -> list["_Stretch"]:
        """``(after, until]`` cut into the stretches of excluded days and those between, in
        order; a day's slots are those from its start to the next day's."""
        if until <= after:
            return []
        stretches: list[_Stretch] = []
        cursor = after
        days = self.exclusions.excluded_stretches(
            first=self.exclusions.local_day(after), last=self.exclusions.local_day(until)
        )
        for first, last in days:
            start = max(after, self.exclusions.day_start(first) - _TICK)
            end = min(until, self._day_end(last) - _TICK)
            if end <= start:
                continue
            if start > cursor:
                stretches.append(_Stretch(after=cursor, until=start, excluded=False))
            stretches.append(_Stretch(after=start, until=end, excluded=True))
            cursor = end
        if cursor < until:
            stretches.append(_Stretch(after=cursor, until=until, excluded=False))
        return stretches

    def _day_end(self, day: date) -> datetime:
        return self.exclusions.day_start(day + _DAY)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Stretch:
    """Part of a window, ``(after, until]``, all of whose days are excluded, or none."""

    after: datetime
    until: datetime
    excluded: bool


def excluding(
    schedule: timeline.Schedule, exclusions: Exclusions, *, slot_steps: int = 1
) -> timeline.Schedule:
    """``schedule`` without the slots ``exclusions`` excludes (itself when none are); each of
    its slots costs the search ``slot_steps`` (``Excluding.slot_steps``)."""
    return schedule if exclusions.empty else Excluding(schedule, exclusions, slot_steps)
