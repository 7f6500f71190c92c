"""A cron schedule counts the slots of a window by its days (``cron_counting``), and the count
and the newest slots are what walking the window slot by slot (``timeline.scan_due``) finds:
in every zone, across both DST changes, under every DST rule, with the cron extensions."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.scheduling import cron, cron_counting, dst, timeline

ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata")
CHANGE_DAYS = {
    "UTC": {"spring": datetime(2026, 3, 29), "fall": datetime(2026, 10, 25)},
    "Europe/Berlin": {"spring": datetime(2026, 3, 29), "fall": datetime(2026, 10, 25)},
    "America/New_York": {"spring": datetime(2026, 3, 8), "fall": datetime(2026, 11, 1)},
    # 30 minutes each way: 02:00 to 02:30 in October, 02:00 back to 01:30 in April.
    "Australia/Lord_Howe": {"spring": datetime(2026, 10, 4), "fall": datetime(2026, 4, 5)},
    "Asia/Kolkata": {"spring": datetime(2026, 3, 29), "fall": datetime(2026, 10, 25)},
}
"""The days each zone changes its offset in 2026 (the zones without a change: any days)."""
EXPRESSIONS = {
    "daily-in-the-gap-and-the-repeat": "30 2 * * *",
    "every-20-minutes-of-hours-1-to-3": "*/20 1-3 * * *",
    "wildcard-hour-follows-real-time": "0,30 * * * *",
    "hour-range-wrapping-midnight": "10 22-3 * * *",
    "last-day-of-the-month": "15 2 L * *",
    "last-sunday": "0 2 * * 0L",
    "nearest-weekday": "0 2 4W * *",
    "first-sunday": "45 1 * * 0#1",
    "day-of-month-or-monday": "0 2 1-3 * MON",
    "seconds-with-steps": "*/13 */7 1-3 * * *",
    "every-half-minute-of-hour-two": "*/30 * 2 * * *",
}
RULES = {
    "shift-forward-first": dst.DstRules(),
    "skip-second": dst.DstRules(nonexistent=dst.Nonexistent.SKIP, ambiguous=dst.Ambiguous.SECOND),
    "shift-forward-both": dst.DstRules(ambiguous=dst.Ambiguous.BOTH),
}
KEEP = 26
"""What ``missed.keep_for`` asks with the default ``maxCatchUp``, and more than a day holds of
the sparse schedules."""


def schedule(expression: str, zone: str, rules: dst.DstRules) -> cron.CronSchedule:
    return cron.parse(expression, zone=ZoneInfo(zone), rules=rules)


def around(day: datetime) -> tuple[datetime, datetime]:
    """From the day before ``day`` to the day after, at odd instants of both."""
    start = (day - timedelta(days=1)).replace(hour=13, minute=17, second=5, microsecond=500_000)
    end = (day + timedelta(days=1)).replace(hour=9, minute=42, second=30)
    return start.replace(tzinfo=UTC), end.replace(tzinfo=UTC)


class TestACronCountIsTheWalkedCount:
    @pytest.mark.parametrize("rules", RULES)
    @pytest.mark.parametrize("change", ["spring", "fall"])
    @pytest.mark.parametrize("zone", ZONES)
    @pytest.mark.parametrize("expression", EXPRESSIONS)
    def test_across_each_dst_change(
        self, expression: str, zone: str, change: str, rules: str
    ) -> None:
        counted = schedule(EXPRESSIONS[expression], zone, RULES[rules])
        after, until = around(CHANGE_DAYS[zone][change])

        due = counted.due_between(after=after, until=until, keep=KEEP)

        assert due == timeline.scan_due(counted, after=after, until=until, keep=KEEP)

    @pytest.mark.parametrize("zone", ZONES)
    @pytest.mark.parametrize(
        "expression", ["0 * * * *", "30 2 * * *", "0 9-17 * * MON-FRI", "0 0 L * *"]
    )
    def test_over_a_season_with_both_changes(self, expression: str, zone: str) -> None:
        counted = schedule(expression, zone, dst.DstRules())
        after = datetime(2026, 3, 1, tzinfo=UTC)
        until = datetime(2026, 11, 15, tzinfo=UTC)

        due = counted.due_between(after=after, until=until, keep=KEEP)

        assert due == timeline.scan_due(counted, after=after, until=until, keep=KEEP)

    @pytest.mark.parametrize(
        ("after", "until"),
        [
            pytest.param(
                datetime(2026, 3, 29, 0, 59, 59, tzinfo=UTC),
                datetime(2026, 3, 29, 1, tzinfo=UTC),
                id="the-second-at-the-end-of-the-gap",
            ),
            pytest.param(
                datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
                datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
                id="an-empty-window",
            ),
            pytest.param(
                datetime(2026, 10, 25, 0, 45, tzinfo=UTC),
                datetime(2026, 10, 25, 1, 15, tzinfo=UTC),
                id="a-window-within-the-repeat",
            ),
        ],
    )
    @pytest.mark.parametrize("rules", RULES)
    def test_windows_at_the_edges_of_a_change(
        self, after: datetime, until: datetime, rules: str
    ) -> None:
        counted = schedule("*/20 * 2 * * *", "Europe/Berlin", RULES[rules])

        due = counted.due_between(after=after, until=until, keep=KEEP)

        assert due == timeline.scan_due(counted, after=after, until=until, keep=KEEP)


class TestACronCountCostsItsDaysNotItsSlots:
    def test_a_year_of_every_second_is_counted_without_walking_it(self) -> None:
        every_second = schedule("* * * * * *", "Europe/Berlin", dst.DstRules())
        after = datetime(2026, 1, 1, tzinfo=UTC)

        due = every_second.due_between(after=after, until=after + timedelta(days=365), keep=2)

        assert due.total == 365 * 86_400
        assert due.newest == (
            datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC),
            datetime(2027, 1, 1, tzinfo=UTC),
        )

    @pytest.mark.parametrize(
        ("day_fields", "year", "expected"),
        [
            pytest.param("* * *", 2026, 365, id="every-day"),
            pytest.param("29 2 *", 2028, 1, id="a-leap-day"),
            pytest.param("29 2 *", 2026, 0, id="no-leap-day"),
            pytest.param("L * *", 2026, 12, id="the-last-of-each-month"),
            pytest.param("* * 1#5", 2026, 4, id="fifth-mondays"),
        ],
    )
    def test_the_days_a_year_names(self, day_fields: str, year: int, expected: int) -> None:
        assert len(cron_counting.named_days(day_fields, year)) == expected


minutes = st.sampled_from(["0", "30", "*/15", "*/7", "5-50/9", "59", "*/5"])
hours = st.sampled_from(["*", "*/5", "0-23/3", "1", "2", "1-3", "22-2", "2,3", "0"])
days_of_month = st.sampled_from(["*", "*", "L", "15W", "1-7", "20-L", "*/10"])
months = st.sampled_from(["*", "*", "3,4,10,11", "MAR-APR", "OCT-NOV"])
days_of_week = st.sampled_from(["*", "*", "SUN", "0L", "0#1", "1-5", "FRI-MON"])
seconds = st.sampled_from(["0", "*/20", "30", "15,45"])


@st.composite
def expressions(draw: st.DrawFn) -> str:
    day_of_month, day_of_week = draw(days_of_month), draw(days_of_week)
    if any(marker in f"{day_of_month}{day_of_week}" for marker in "LW#"):
        # A W, # or a weekday's L beside a restricted other day field is refused.
        day_of_week = day_of_week if day_of_month == "*" else "*"
    fields = f"{draw(minutes)} {draw(hours)} {day_of_month} {draw(months)} {day_of_week}"
    return f"{draw(seconds)} {fields}" if draw(st.booleans()) else fields


@st.composite
def windows(draw: st.DrawFn, zone: str) -> tuple[datetime, datetime]:
    """A window of up to a day and a half; half the time around one of ``zone``'s changes."""
    if draw(st.booleans()):
        near = datetime.combine(
            draw(st.sampled_from(list(CHANGE_DAYS[zone].values()))), datetime.min.time()
        )
        start = near + draw(
            st.timedeltas(min_value=-timedelta(days=2), max_value=timedelta(days=1))
        )
    else:
        start = draw(st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2027, 1, 1)))
    length = draw(st.timedeltas(min_value=timedelta(), max_value=timedelta(hours=36)))
    return start.replace(tzinfo=UTC), (start + length).replace(tzinfo=UTC)


class TestAnyCronCountIsTheWalkedCount:
    @settings(max_examples=200, deadline=None, derandomize=True)
    @given(st.data())
    def test_count_and_newest(self, data: st.DataObject) -> None:
        zone = data.draw(st.sampled_from(ZONES))
        counted = schedule(
            data.draw(expressions()), zone, data.draw(st.sampled_from(list(RULES.values())))
        )
        after, until = data.draw(windows(zone))
        keep = data.draw(st.integers(min_value=0, max_value=KEEP))

        due = counted.due_between(after=after, until=until, keep=keep)

        assert due == timeline.scan_due(counted, after=after, until=until, keep=keep)
