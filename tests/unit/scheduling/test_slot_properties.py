"""Properties every cron schedule keeps, for any expression, zone, DST rule and start instant.

The start instants are drawn from 2025-2028, half of them within hours of a DST transition of
the zone. ``TestCronSlotsAgreeWithABruteForceReading`` checks the slots against an independent
reading of the contract: walk the UTC timeline minute by minute, and keep each minute whose
local wall time the expression names (subject to the DST rules), plus the end of each gap that
swallowed a named time under ShiftForward.
"""

import functools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.scheduling import cron, dst

ZONES = (
    "Europe/London",
    "Europe/Copenhagen",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
)
YEARS_START = datetime(2025, 1, 1, tzinfo=UTC)
YEARS_END = datetime(2029, 1, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
PROPERTY_SETTINGS = settings(max_examples=200, deadline=None)


def _transitions(zone: ZoneInfo) -> tuple[datetime, ...]:
    """The instants (to the minute) where ``zone`` changes its offset, 2025-2028."""
    found = []
    day = YEARS_START
    offset = day.astimezone(zone).utcoffset()
    while day < YEARS_END:
        following = day + timedelta(days=1)
        if following.astimezone(zone).utcoffset() != offset:
            low, high = day, following
            while high - low > MINUTE:
                middle = low + (high - low) / 2
                if middle.astimezone(zone).utcoffset() == offset:
                    low = middle
                else:
                    high = middle
            found.append(high)
            offset = following.astimezone(zone).utcoffset()
        day = following
    return tuple(found)


TRANSITIONS = {name: _transitions(ZoneInfo(name)) for name in ZONES}


def test_the_zones_have_the_expected_number_of_transitions() -> None:
    assert {name: len(found) for name, found in TRANSITIONS.items()} == {
        "Europe/London": 8,
        "Europe/Copenhagen": 8,
        "America/New_York": 8,
        "Australia/Lord_Howe": 8,
        "Asia/Kolkata": 0,
    }


# A small generator of valid fields: few enough distinct expressions that parsing (which
# samples each expression's shortest period) stays cheap, varied enough to hit every DST case.
minutes = st.sampled_from(["0", "30", "0,30", "*/15", "*/7", "45", "*/5"])
hours = st.sampled_from(["*", "*/2", "0-23", "0-23/3", "1", "2", "1,2", "1-3", "2,3", "1-3/2"])
calendars = st.sampled_from(["* * *", "* * *", "25-31 * *", "* * SUN", "L * 0,6"])
seconds = st.sampled_from(["0", "*/20"])


@st.composite
def five_field_expressions(draw: st.DrawFn) -> str:
    return f"{draw(minutes)} {draw(hours)} {draw(calendars)}"


@st.composite
def expressions(draw: st.DrawFn) -> str:
    expression = draw(five_field_expressions())
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        return f"{draw(seconds)} {expression}"
    return expression


rules = st.builds(
    dst.DstRules, st.sampled_from(list(dst.Nonexistent)), st.sampled_from(list(dst.Ambiguous))
)


@st.composite
def instants_in(draw: st.DrawFn, zone: str) -> datetime:
    """An instant in 2025-2028; half the time within hours of one of ``zone``'s transitions."""
    transitions = TRANSITIONS[zone]
    if draw(st.booleans()) and transitions:
        near = draw(st.sampled_from(transitions))
        return near + draw(
            st.timedeltas(min_value=-6 * timedelta(hours=1), max_value=3 * timedelta(hours=1))
        )
    return draw(
        st.datetimes(
            min_value=YEARS_START.replace(tzinfo=None),
            max_value=YEARS_END.replace(tzinfo=None) - timedelta(days=1),
            timezones=st.just(UTC),
        )
    )


@dataclass(frozen=True)
class Case:
    schedule: cron.CronSchedule
    start: datetime


@st.composite
def cases(draw: st.DrawFn, *, five_fields_only: bool = False) -> Case:
    zone = draw(st.sampled_from(ZONES))
    expression = draw(five_field_expressions() if five_fields_only else expressions())
    schedule = _parse(expression, zone, draw(rules))
    return Case(schedule=schedule, start=draw(instants_in(zone)))


@functools.cache
def _parse(expression: str, zone: str, rules: dst.DstRules) -> cron.CronSchedule:
    return cron.parse(expression, zone=ZoneInfo(zone), rules=rules)


def _iterate(schedule: cron.CronSchedule, after: datetime, until: datetime) -> list[datetime]:
    slots = []
    occurrence = schedule.next_after(after)
    while occurrence.at <= until:
        slots.append(occurrence.at)
        occurrence = schedule.next_after(occurrence.at)
    return slots


class TestCronSlotsStrictlyIncrease:
    @PROPERTY_SETTINGS
    @given(cases())
    def test_each_slot_is_after_the_previous_and_none_repeats(self, case: Case) -> None:
        previous = case.start
        for _ in range(8):
            occurrence = case.schedule.next_after(previous)
            assert occurrence.at > previous
            assert occurrence.at.utcoffset() == timedelta(0)
            assert occurrence.at.microsecond == 0
            previous = occurrence.at

    @settings(max_examples=100, deadline=None)
    @given(cases(), st.integers(min_value=-12, max_value=12))
    def test_the_answer_does_not_depend_on_the_zone_the_instant_is_given_in(
        self, case: Case, hours_east: int
    ) -> None:
        elsewhere = case.start.astimezone(ZoneInfo(f"Etc/GMT{-hours_east:+d}"))
        assert case.schedule.next_after(elsewhere) == case.schedule.next_after(case.start)


def _brute_force(schedule: cron.CronSchedule, after: datetime, until: datetime) -> list[datetime]:
    """The slots in ``(after, until]`` of a five-field schedule, read off the UTC timeline."""
    zone, rules = schedule.zone, schedule.rules
    margin = timedelta(hours=3)
    local_after = after.astimezone(zone).replace(tzinfo=None)
    local_until = until.astimezone(zone).replace(tzinfo=None)
    walker = croniter(schedule.expression, local_after - margin)
    named = set()
    while (local := walker.get_next(datetime)) <= local_until + margin:
        named.add(local)

    found = set()
    minute = after.replace(second=0, microsecond=0) + MINUTE
    previous_offset = (minute - MINUTE).astimezone(zone).utcoffset()
    while minute <= until:
        local_time = minute.astimezone(zone)
        naive = local_time.replace(tzinfo=None)
        offset = local_time.utcoffset()
        assert offset is not None
        assert previous_offset is not None
        if naive in named:
            other_fold = naive.replace(tzinfo=zone, fold=1 - local_time.fold).utcoffset()
            repeated = other_fold != offset
            if (
                not repeated
                or rules.ambiguous is dst.Ambiguous.BOTH
                or (local_time.fold == 0) == (rules.ambiguous is dst.Ambiguous.FIRST)
            ):
                found.add(minute)
        if offset > previous_offset and rules.nonexistent is dst.Nonexistent.SHIFT_FORWARD:
            gap_start = naive - (offset - previous_offset)
            if any(gap_start <= name < naive for name in named):
                found.add(minute)
        previous_offset = offset
        minute += MINUTE
    return sorted(found)


class TestCronSlotsAgreeWithABruteForceReading:
    @pytest.mark.parametrize(
        ("expression", "rules", "after", "expected"),
        [
            pytest.param("30 2 * * *", dst.DstRules(), "2026-03-28T12:00Z",
                         ["2026-03-29T01:00Z"], id="spring-shift-forward"),
            pytest.param("30 2 * * *", dst.DstRules(nonexistent=dst.Nonexistent.SKIP),
                         "2026-03-28T12:00Z", [], id="spring-skip"),
            pytest.param("30 2 * * *", dst.DstRules(), "2026-10-24T12:00Z",
                         ["2026-10-25T00:30Z"], id="fall-first"),
            pytest.param("30 2 * * *", dst.DstRules(ambiguous=dst.Ambiguous.SECOND),
                         "2026-10-24T12:00Z", ["2026-10-25T01:30Z"], id="fall-second"),
            pytest.param("30 2 * * *", dst.DstRules(ambiguous=dst.Ambiguous.BOTH),
                         "2026-10-24T12:00Z", ["2026-10-25T00:30Z", "2026-10-25T01:30Z"],
                         id="fall-both"),
        ],
    )  # fmt: skip
    def test_the_reading_itself_gets_the_copenhagen_nights_right(
        self, expression: str, rules: dst.DstRules, after: str, expected: list[str]
    ) -> None:
        """The reference must not be vacuous: it sees the DST cases the tables pin down."""
        schedule = cron.parse(expression, zone=ZoneInfo("Europe/Copenhagen"), rules=rules)
        start = datetime.fromisoformat(after)
        found = _brute_force(schedule, start, start + timedelta(hours=20))
        assert found == [datetime.fromisoformat(text) for text in expected]

    @PROPERTY_SETTINGS
    @given(cases(five_fields_only=True), st.integers(min_value=1, max_value=4))
    def test_the_slots_in_a_window_are_exactly_the_named_local_times(
        self, case: Case, window_hours: int
    ) -> None:
        until = case.start + timedelta(hours=window_hours)
        assert _iterate(case.schedule, case.start, until) == _brute_force(
            case.schedule, case.start, until
        )


class TestCronDueSlotsAgreeWithIteratingNextAfter:
    @settings(max_examples=100, deadline=None)
    @given(
        cases(),
        st.timedeltas(min_value=-2 * timedelta(hours=1), max_value=4 * timedelta(hours=1)),
        st.integers(min_value=0, max_value=12),
    )
    def test_count_and_newest(self, case: Case, window: timedelta, keep: int) -> None:
        until = case.start + window
        iterated = _iterate(case.schedule, case.start, until)
        due = case.schedule.due_between(after=case.start, until=until, keep=keep)
        assert due.total == len(iterated)
        assert list(due.newest) == (iterated[-keep:] if keep else [])
