"""Properties of cron expressions with extensions (L, W, #, ?, wrapping and equal ranges).

Each field of a drawn expression comes with its meaning, written out here independently of
croniter: the set of minutes or hours it names, or a predicate on local dates. The slots must be
exactly the named local times mapped to UTC by the DST rules (also written out here, on
zoneinfo's folds), and every replica must compute the same ones.
"""

import calendar
import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.scheduling import cron, dst
from punctual.scheduling.errors import InvalidSpecError
from punctual.scheduling.timeline import Adjustment, Occurrence

ZONES = (
    "Europe/Copenhagen",
    "Europe/London",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Jerusalem",
)
YEARS_START = datetime(2025, 1, 1, tzinfo=UTC)
YEARS_END = datetime(2029, 1, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
SLOTS = 8
PROPERTY_SETTINGS = settings(max_examples=200, deadline=None)

DayTest = Callable[[date], bool]


def _last(day: date) -> int:
    return calendar.monthrange(day.year, day.month)[1]


def _weekday(day: date) -> int:
    """0 is Sunday, as in cron."""
    return (day.weekday() + 1) % 7


def _nearest_weekday(n: int) -> DayTest:
    def test(day: date) -> bool:
        last = _last(day)
        target = date(day.year, day.month, min(n, last))
        if target.weekday() == 5:
            target += timedelta(days=-1 if target.day > 1 else 2)
        elif target.weekday() == 6:
            target += timedelta(days=1 if target.day < last else -2)
        return day == target

    return test


def _nth(weekdays: set[int], nth: int) -> DayTest:
    return lambda day: _weekday(day) in weekdays and (day.day - 1) // 7 + 1 == nth


def _last_of(weekday: int) -> DayTest:
    return lambda day: _weekday(day) == weekday and day.day + 7 > _last(day)


def _weekdays(*numbers: int) -> DayTest:
    return lambda day: _weekday(day) in numbers


def _any_of(*tests: DayTest) -> DayTest:
    return lambda day: any(test(day) for test in tests)


SECONDS = [("0", {0}), ("*/20", {0, 20, 40}), ("15", {15})]
MINUTES = [
    ("0", {0}),
    ("30", {30}),
    ("*/15", {0, 15, 30, 45}),
    ("0,30", {0, 30}),
    ("45-45", {45}),
    ("50-10/20", {50, 10}),
    ("55-5", {55, 56, 57, 58, 59, 0, 1, 2, 3, 4, 5}),
    ("10/25", {10, 35}),
]
HOURS = [  # (text, hours, wildcard)
    ("*", set(range(24)), True),
    ("*/2", set(range(0, 24, 2)), True),
    ("0-23/3", set(range(0, 24, 3)), True),
    ("2", {2}, False),
    ("1-3", {1, 2, 3}, False),
    ("2-2", {2}, False),
    ("1,2", {1, 2}, False),
    ("22-2", {22, 23, 0, 1, 2}, False),
    ("23-5/3", {23, 2, 5}, False),
]
MONTHS = [
    ("*", set(range(1, 13))),
    ("NOV-FEB", {11, 12, 1, 2}),
    ("MAR,OCT", {3, 10}),
    ("OCT-MAR/5", {10, 3}),
    ("*/3", {1, 4, 7, 10}),
    ("APR", {4}),
]
ANY_DAY: list[tuple[str, DayTest | None]] = [("*", None), ("?", None)]
PLAIN_DAYS_OF_MONTH: list[tuple[str, DayTest | None]] = [
    ("L", lambda day: day.day == _last(day)),
    ("15-L", lambda day: day.day >= 15),
    ("1,L", lambda day: day.day in (1, _last(day))),
    ("25-31", lambda day: day.day >= 25),
    ("28-3", lambda day: day.day >= 28 or day.day <= 3),
    ("1-7", lambda day: day.day <= 7),
]
NEAREST_WEEKDAYS: list[tuple[str, DayTest | None]] = [
    (f"{n}W", _nearest_weekday(n)) for n in (1, 8, 25, 27, 29, 31)
] + [("W15", _nearest_weekday(15))]
PLAIN_DAYS_OF_WEEK: list[tuple[str, DayTest | None]] = [
    ("SUN", _weekdays(0)),
    ("0,6", _weekdays(0, 6)),
    ("FRI-MON", _weekdays(5, 6, 0, 1)),
    ("1-7/2", _weekdays(1, 3, 5, 0)),
    ("5-7", _weekdays(5, 6, 0)),
]
NTH_WEEKDAYS: list[tuple[str, DayTest | None]] = [
    ("0L", _last_of(0)),
    ("SUNL", _last_of(0)),
    ("7L", _last_of(0)),
    ("5L", _last_of(5)),
    ("0#5", _nth({0}, 5)),
    ("0#4", _nth({0}, 4)),
    ("SUN#1,SAT#2", _any_of(_nth({0}, 1), _nth({6}, 2))),
    ("FRI-MON#1", _nth({5, 6, 0, 1}, 1)),
    ("1L,5#2", _any_of(_last_of(1), _nth({5}, 2))),
]


@dataclass(frozen=True)
class Expression:
    text: str
    seconds: frozenset[int] | None
    minutes: frozenset[int]
    hours: frozenset[int]
    wildcard_hour: bool
    months: frozenset[int]
    day_of_month: DayTest | None
    day_of_week: DayTest | None

    def names_day(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        tests = [test for test in (self.day_of_month, self.day_of_week) if test is not None]
        # Both day fields restricted: either may match (Vixie cron).
        return not tests or any(test(day) for test in tests)

    def names(self, local: datetime) -> bool:
        second_ok = local.second in self.seconds if self.seconds else local.second == 0
        return (
            second_ok
            and local.minute in self.minutes
            and local.hour in self.hours
            and self.names_day(local.date())
        )

    def times_on(self, day: date) -> list[datetime]:
        seconds = sorted(self.seconds) if self.seconds else [0]
        return [
            datetime(day.year, day.month, day.day, hour, minute, second)
            for hour in sorted(self.hours)
            for minute in sorted(self.minutes)
            for second in seconds
        ]


@st.composite
def expressions(draw: st.DrawFn) -> Expression:
    kind = draw(st.sampled_from(["nearest-weekday", "nth-or-last-weekday", "plain-days"]))
    if kind == "nearest-weekday":
        dom, dow = draw(st.sampled_from(NEAREST_WEEKDAYS)), draw(st.sampled_from(ANY_DAY))
    elif kind == "nth-or-last-weekday":
        dom, dow = draw(st.sampled_from(ANY_DAY)), draw(st.sampled_from(NTH_WEEKDAYS))
    else:
        dom = draw(st.sampled_from(ANY_DAY + PLAIN_DAYS_OF_MONTH))
        dow = draw(st.sampled_from(ANY_DAY + PLAIN_DAYS_OF_WEEK))
    second = draw(st.none() | st.sampled_from(SECONDS))
    minute, (hour, hours, wildcard), (month, months) = (
        draw(st.sampled_from(MINUTES)),
        draw(st.sampled_from(HOURS)),
        draw(st.sampled_from(MONTHS)),
    )
    fields = [minute[0], hour, dom[0], month, dow[0]]
    if second is not None:
        fields.insert(0, second[0])
    return Expression(
        text=" ".join(fields),
        seconds=frozenset(second[1]) if second else None,
        minutes=frozenset(minute[1]),
        hours=frozenset(hours),
        wildcard_hour=wildcard,
        months=frozenset(months),
        day_of_month=dom[1],
        day_of_week=dow[1],
    )


rules = st.builds(
    dst.DstRules, st.sampled_from(list(dst.Nonexistent)), st.sampled_from(list(dst.Ambiguous))
)


def _transitions(zone: ZoneInfo) -> tuple[datetime, ...]:
    """The instants (to the minute) where ``zone`` changes its offset, 2025-2028."""
    found = []
    day = YEARS_START
    while day < YEARS_END:
        following = day + timedelta(days=1)
        if following.astimezone(zone).utcoffset() != day.astimezone(zone).utcoffset():
            low, high = day, following
            while high - low > MINUTE:
                middle = low + (high - low) / 2
                same = middle.astimezone(zone).utcoffset() == low.astimezone(zone).utcoffset()
                low, high = (middle, high) if same else (low, middle)
            found.append(high)
        day = following
    return tuple(found)


TRANSITIONS = {name: _transitions(ZoneInfo(name)) for name in ZONES}


@st.composite
def instants_in(draw: st.DrawFn, zone: str) -> datetime:
    """An instant in 2025-2028; half the time within two days before one of ``zone``'s changes."""
    if draw(st.booleans()):
        near = draw(st.sampled_from(TRANSITIONS[zone]))
        return near - draw(st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=2)))
    return draw(
        st.datetimes(
            min_value=YEARS_START.replace(tzinfo=None),
            max_value=YEARS_END.replace(tzinfo=None),
            timezones=st.just(UTC),
        )
    )


@dataclass(frozen=True)
class Case:
    expression: Expression
    schedule: cron.CronSchedule
    start: datetime


@functools.cache
def _parse(text: str, zone: str, spec_rules: dst.DstRules) -> cron.CronSchedule:
    return cron.parse(text, zone=ZoneInfo(zone), rules=spec_rules)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    zone = draw(st.sampled_from(ZONES))
    expression = draw(expressions())
    schedule = _parse(expression.text, zone, draw(rules))
    return Case(expression=expression, schedule=schedule, start=draw(instants_in(zone)))


def _slots(schedule: cron.CronSchedule, after: datetime, count: int = SLOTS) -> list[Occurrence]:
    occurrences = []
    for _ in range(count):
        occurrence = schedule.next_after(after)
        occurrences.append(occurrence)
        after = occurrence.at
    return occurrences


def _local(instant: datetime, zone: ZoneInfo) -> datetime:
    return instant.astimezone(zone).replace(tzinfo=None)


def _instants(named: datetime, zone: ZoneInfo, rules: dst.DstRules) -> set[datetime]:
    """The UTC instants at which the local time ``named`` runs under ``rules``."""
    offsets = {named.replace(tzinfo=zone, fold=fold).utcoffset() for fold in (0, 1)}
    real = sorted(
        instant
        for offset in offsets
        if offset is not None
        and _local(instant := (named - offset).replace(tzinfo=UTC), zone) == named
    )
    if len(real) == 1:
        return set(real)
    if len(real) == 2:
        return {
            dst.Ambiguous.FIRST: {real[0]},
            dst.Ambiguous.SECOND: {real[1]},
            dst.Ambiguous.BOTH: set(real),
        }[rules.ambiguous]
    if rules.nonexistent is dst.Nonexistent.SKIP:
        return set()
    # In a gap: the first minute after it, where the local time passes ``named``.
    earliest = named - max(offset for offset in offsets if offset is not None)
    instant = earliest.replace(second=0, tzinfo=UTC)
    while _local(instant, zone) < named:
        instant += MINUTE
    return {instant}


def _expected(case: Case, until: datetime) -> list[datetime]:
    """Every slot in ``(case.start, until]``, read off the expression's meaning."""
    zone, rules = case.schedule.zone, case.schedule.rules
    margin = timedelta(hours=3)
    first_day = (_local(case.start, zone) - margin).date()
    last_day = (_local(until, zone) + margin).date()
    found: set[datetime] = set()
    day = first_day
    while day <= last_day:
        if case.expression.names_day(day):
            for named in case.expression.times_on(day):
                found.update(_instants(named, zone, rules))
        day += timedelta(days=1)
    return sorted(instant for instant in found if case.start < instant <= until)


class TestExtendedSlotsAreTheNamedLocalTimesUnderTheDstRules:
    @PROPERTY_SETTINGS
    @given(cases())
    def test_the_hour_field_decides_the_rules(self, case: Case) -> None:
        if case.expression.wildcard_hour:
            assert case.schedule.rules == dst.REAL_TIME

    @PROPERTY_SETTINGS
    @given(cases())
    def test_successive_slots_strictly_increase(self, case: Case) -> None:
        previous = case.start
        for occurrence in _slots(case.schedule, case.start):
            assert occurrence.at > previous
            assert occurrence.at.utcoffset() == timedelta(0)
            assert occurrence.at.microsecond == 0
            previous = occurrence.at

    @PROPERTY_SETTINGS
    @given(cases())
    def test_each_slot_is_a_named_local_time_or_its_dst_shifted_instant(self, case: Case) -> None:
        zone = case.schedule.zone
        for occurrence in _slots(case.schedule, case.start):
            assert case.expression.names(occurrence.nominal)
            local = occurrence.at.astimezone(zone)
            match occurrence.adjustment:
                case None:
                    assert local.replace(tzinfo=None) == occurrence.nominal
                case Adjustment.FIRST_OF_REPEATED | Adjustment.SECOND_OF_REPEATED:
                    assert local.replace(tzinfo=None) == occurrence.nominal
                    first = occurrence.adjustment is Adjustment.FIRST_OF_REPEATED
                    assert local.fold == (0 if first else 1)
                case Adjustment.SHIFTED_FORWARD:
                    assert case.schedule.rules.nonexistent is dst.Nonexistent.SHIFT_FORWARD
                    assert _instants(occurrence.nominal, zone, dst.DstRules()) == {occurrence.at}
                    assert local.replace(tzinfo=None) > occurrence.nominal

    @PROPERTY_SETTINGS
    @given(cases())
    def test_no_named_local_time_is_missed_or_added(self, case: Case) -> None:
        slots = [occurrence.at for occurrence in _slots(case.schedule, case.start)]
        assert slots == _expected(case, until=slots[-1])


class TestEveryReplicaComputesTheSameSlots:
    @settings(max_examples=100, deadline=None)
    @given(cases(), st.sampled_from(ZONES))
    def test_the_same_expression_gives_the_same_slots_on_every_call(
        self, case: Case, other_zone: str
    ) -> None:
        first = _slots(case.schedule, case.start)
        # Another job on the same expression moves the shared croniter elsewhere.
        _slots(_parse(case.expression.text, other_zone, dst.DstRules()), case.start, 3)
        again = _slots(case.schedule, case.start)
        reparsed = cron.parse(
            case.expression.text, zone=case.schedule.zone, rules=case.schedule.rules
        )
        uncached = []
        after = case.start
        for _ in range(SLOTS):
            uncached.append(cron._next_after.__wrapped__(reparsed, after))
            after = uncached[-1].at
        assert first == again == uncached


TOKENS = ["0", "1", "2", "5", "7", "15", "31", "59", "L", "l", "W", "#", "?", "*", "/", "-", ","]
TOKENS += ["MON", "fri", "JUL", "H", "R", "(", ")", "99", "6"]


@st.composite
def token_soups(draw: st.DrawFn) -> str:
    fields = draw(
        st.lists(
            st.lists(st.sampled_from(TOKENS), min_size=1, max_size=4).map("".join),
            min_size=5,
            max_size=6,
        )
    )
    if draw(st.booleans()):
        fields[draw(st.integers(0, len(fields) - 1))] = "*"
    return " ".join(fields)


class TestAnythingElseIsRefusedNamingSpecSchedule:
    @settings(max_examples=1000, deadline=None)
    @given(token_soups() | st.text(max_size=40))
    def test_an_expression_parses_or_is_refused_never_a_croniter_error(self, text: str) -> None:
        refusal = None
        try:
            schedule = cron.parse(text, zone=ZoneInfo("Europe/Copenhagen"))
        except InvalidSpecError as error:
            refusal = error
        if refusal is not None:
            assert refusal.field == "spec.schedule"
            assert str(refusal).startswith("spec.schedule: ")
            return
        previous = YEARS_START
        for occurrence in _slots(schedule, previous, 3):
            assert occurrence.at > previous
            previous = occurrence.at
