"""Exclusions (``spec.exclude``, skipped occurrences): an excluded slot is left out of the
timeline, whole local days in the exclusion's zone (23 or 25 hours across a DST change), and
counted apart (``excluded_between``)."""

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from punctual.scheduling import cron, exclusions, interval, merged, timeline, windows
from punctual.scheduling.errors import InvalidSpecError

HOURLY = interval.IntervalSchedule(every=timedelta(hours=1))
EVERY_SECOND = interval.IntervalSchedule(every=timedelta(seconds=1))


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def excluded(
    *,
    zone: str = "UTC",
    dates: tuple[str, ...] = (),
    days: tuple[str, ...] = (),
    skipped: tuple[datetime, ...] = (),
) -> exclusions.Exclusions:
    return exclusions.Exclusions(
        zone=ZoneInfo(zone),
        ranges=tuple(exclusions.parse_dates(text, field="dates") for text in dates),
        rules=tuple(exclusions.parse_rule(text, field="days") for text in days),
        skipped=frozenset(skipped),
    )


def slots_of(schedule: timeline.Schedule, *, after: datetime, count: int) -> list[datetime]:
    found = []
    for _ in range(count):
        occurrence = schedule.next_after(after)
        assert occurrence is not None
        found.append(occurrence.at)
        after = occurrence.at
    return found


class TestExcludedDaysAreLocalDays:
    @pytest.mark.parametrize(
        ("schedule", "exclude", "after", "expected"),
        [
            pytest.param(
                HOURLY,
                excluded(zone="Europe/Copenhagen", dates=("2026-03-29",)),
                utc(2026, 3, 28, 21, 30),
                [utc(2026, 3, 28, 22), utc(2026, 3, 29, 22), utc(2026, 3, 29, 23)],
                id="a-spring-forward-day-is-23-hours",
            ),
            pytest.param(
                HOURLY,
                excluded(zone="Europe/Copenhagen", dates=("2026-10-25",)),
                utc(2026, 10, 24, 20, 30),
                [utc(2026, 10, 24, 21), utc(2026, 10, 25, 23), utc(2026, 10, 26)],
                id="a-fall-back-day-is-25-hours",
            ),
            pytest.param(
                HOURLY,
                excluded(zone="America/Santiago", dates=("2026-09-06",)),
                utc(2026, 9, 6, 2, 30),
                [utc(2026, 9, 6, 3), utc(2026, 9, 7, 3), utc(2026, 9, 7, 4)],
                id="a-day-whose-midnight-is-skipped-starts-after-the-gap",
            ),
            pytest.param(
                cron.parse("0 9 * * *", zone=ZoneInfo("America/New_York")),
                excluded(zone="America/New_York", dates=("2026-12-31/2027-01-01",)),
                utc(2026, 12, 29, 15),
                [utc(2026, 12, 30, 14), utc(2027, 1, 2, 14), utc(2027, 1, 3, 14)],
                id="a-range-across-the-year-end",
            ),
            pytest.param(
                cron.parse("30 23 * * *", zone=ZoneInfo("Asia/Tokyo")),
                excluded(zone="Asia/Tokyo", dates=("2027-01-01",)),
                utc(2026, 12, 30, 15),
                [utc(2026, 12, 31, 14, 30), utc(2027, 1, 2, 14, 30)],
                id="the-local-date-decides-not-the-utc-one",
            ),
            pytest.param(
                cron.parse("0 12 * * *", zone=ZoneInfo("UTC")),
                excluded(days=("* * SAT,SUN",)),
                utc(2026, 12, 3, 13),
                [utc(2026, 12, 4, 12), utc(2026, 12, 7, 12), utc(2026, 12, 8, 12)],
                id="a-recurring-rule-weekends",
            ),
            pytest.param(
                cron.parse("0 12 * * *", zone=ZoneInfo("UTC")),
                excluded(days=("24-26 12 *", "1 1 *")),
                utc(2026, 12, 23, 13),
                [utc(2026, 12, 27, 12), utc(2026, 12, 28, 12)],
                id="recurring-holidays",
            ),
            pytest.param(
                cron.parse("0 12 * * MON", zone=ZoneInfo("UTC")),
                excluded(days=("* * 1#1",)),
                utc(2026, 11, 30, 13),
                [utc(2026, 12, 14, 12), utc(2026, 12, 21, 12), utc(2026, 12, 28, 12)],
                id="the-first-monday-of-each-month",
            ),
            pytest.param(
                HOURLY,
                excluded(skipped=(utc(2026, 12, 1, 10),)),
                utc(2026, 12, 1, 8, 30),
                [utc(2026, 12, 1, 9), utc(2026, 12, 1, 11)],
                id="one-occurrence-skipped",
            ),
        ],
    )
    def test_the_slots_left(
        self,
        schedule: timeline.Schedule,
        exclude: exclusions.Exclusions,
        after: datetime,
        expected: list[datetime],
    ) -> None:
        found = exclusions.excluding(schedule, exclude)

        assert slots_of(found, after=after, count=len(expected)) == expected


class TestCountingExcludedSlots:
    @pytest.mark.parametrize(
        ("schedule", "exclude", "window", "expected"),
        [
            pytest.param(
                HOURLY,
                excluded(zone="Europe/Copenhagen", dates=("2026-03-29",)),
                (utc(2026, 3, 28), utc(2026, 3, 31)),
                (23, (utc(2026, 3, 29, 20), utc(2026, 3, 29, 21))),
                id="a-23-hour-day",
            ),
            pytest.param(
                HOURLY,
                excluded(zone="Europe/Copenhagen", dates=("2026-10-25",)),
                (utc(2026, 10, 24), utc(2026, 10, 27)),
                (25, (utc(2026, 10, 25, 21), utc(2026, 10, 25, 22))),
                id="a-25-hour-day",
            ),
            pytest.param(
                HOURLY,
                excluded(dates=("2026-12-31/2027-01-01",), skipped=(utc(2027, 1, 2, 5),)),
                (utc(2026, 12, 31, 12, 30), utc(2027, 1, 3)),
                (36, (utc(2027, 1, 1, 23), utc(2027, 1, 2, 5))),
                id="part-of-a-range-and-one-occurrence",
            ),
            pytest.param(
                HOURLY,
                excluded(skipped=(utc(2026, 12, 1, 10), utc(2026, 12, 1, 10, 30))),
                (utc(2026, 12, 1), utc(2026, 12, 2)),
                (1, (utc(2026, 12, 1, 10),)),
                id="a-skipped-instant-that-is-no-slot-counts-nothing",
            ),
        ],
    )
    def test_how_many_and_the_newest(
        self,
        schedule: timeline.Schedule,
        exclude: exclusions.Exclusions,
        window: tuple[datetime, datetime],
        expected: tuple[int, tuple[datetime, ...]],
    ) -> None:
        found = exclusions.Excluding(schedule, exclude)

        counted = found.excluded_between(after=window[0], until=window[1], keep=2)

        assert ((counted.total, counted.newest), counted.resume_after) == (expected, None)

    def test_a_count_in_steps_adds_up_to_the_whole(self) -> None:
        found = exclusions.Excluding(
            cron.parse("* * * * *", zone=ZoneInfo("UTC")),
            excluded(dates=("2026-12-01",), skipped=(utc(2026, 12, 2, 0, 1),)),
        )
        after, until = utc(2026, 11, 30, 23, 59), utc(2026, 12, 2, 0, 5)
        whole = found.excluded_between(after=after, until=until, keep=1)
        total, partial = 0, found.excluded_between(after=after, until=until, keep=1, steps=100)
        while partial.resume_after is not None:
            total += partial.total
            partial = found.excluded_between(
                after=partial.resume_after, until=until, keep=1, steps=100
            )

        assert (whole.total, total + partial.total) == (1441, 1441)

    def test_runnable_slots_are_counted_without_the_excluded(self) -> None:
        found = exclusions.Excluding(HOURLY, excluded(dates=("2026-12-01",)))

        due = found.due_between(after=utc(2026, 11, 30, 20, 30), until=utc(2026, 12, 2, 2), keep=1)

        assert (due.total, due.newest) == (6, (utc(2026, 12, 2, 2),))


def walked_excluded(
    found: exclusions.Excluding, *, after: datetime, until: datetime
) -> list[datetime]:
    """The excluded slots of ``(after, until]``, found by walking every slot of the schedule."""
    walked = timeline.scan_due(found.schedule, after=after, until=until, keep=1_000_000)
    return [at for at in walked.newest if found.exclusions.excludes(at)]


def in_steps(
    count: Callable[..., timeline.DueSlots],
    *,
    after: datetime,
    until: datetime,
    keep: int,
    steps: int | None,
) -> timeline.DueSlots:
    due = count(after=after, until=until, keep=keep, steps=steps)
    while due.resume_after is not None:
        later = count(after=due.resume_after, until=until, keep=keep, steps=steps)
        due = timeline.combine(due, later, keep=keep)
    return due


COUNTED_SCHEDULES = {
    "quarter-hours": cron.parse("*/15 * * * *", zone=ZoneInfo("Europe/Berlin")),
    "daily-in-the-gap": cron.parse("30 2 * * *", zone=ZoneInfo("America/New_York")),
    "every-40-seconds": interval.IntervalSchedule(every=timedelta(seconds=40)),
    "merged-cron-entries": merged.merge(
        [
            merged.Entry("a", cron.parse("*/10 * * * *", zone=ZoneInfo("Europe/Berlin"))),
            merged.Entry("b", cron.parse("*/15 1-3 * * *", zone=ZoneInfo("Europe/Berlin"))),
        ]
    ),
}
COUNTED_EXCLUSIONS = {
    "weekends-in-berlin": excluded(zone="Europe/Berlin", days=("* * SAT,SUN",)),
    "a-range-across-the-fall-change": excluded(
        zone="Europe/Berlin", dates=("2026-10-24/2026-10-26",)
    ),
    "last-days-and-a-date-in-new-york": excluded(
        zone="America/New_York", days=("L * *",), dates=("2026-11-03",)
    ),
    "skipped-occurrences-only": excluded(
        skipped=(utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1, 0), utc(2026, 10, 30, 7, 30))
    ),
}


class TestExcludingCountsWhatWalkingFinds:
    """Across excluded days, ranges, rules and skipped occurrences, in zones with a DST change
    in the window, the runnable and the excluded counts and newest slots are what walking
    every slot finds; a merged timeline, which walks, counts in steps that add up."""

    @pytest.mark.parametrize("steps", [None, 50])
    @pytest.mark.parametrize("exclude", COUNTED_EXCLUSIONS)
    @pytest.mark.parametrize("schedule", COUNTED_SCHEDULES)
    def test_runnable_and_excluded(self, schedule: str, exclude: str, steps: int | None) -> None:
        found = exclusions.Excluding(COUNTED_SCHEDULES[schedule], COUNTED_EXCLUSIONS[exclude])
        after, until = utc(2026, 10, 22, 13, 7, 30), utc(2026, 11, 4, 9)
        excluded_slots = walked_excluded(found, after=after, until=until)

        runnable = in_steps(found.due_between, after=after, until=until, keep=20, steps=steps)
        excluded_due = in_steps(
            found.excluded_between, after=after, until=until, keep=20, steps=steps
        )

        assert runnable == timeline.scan_due(found, after=after, until=until, keep=20)
        assert (excluded_due.total, excluded_due.newest) == (
            len(excluded_slots),
            tuple(excluded_slots[-20:]),
        )


LEAP_SUNDAYS = ("1-28 * *", "29 1,3-12 *", "* 2 MON-SAT", "30 * *", "31 * *")
"""Every day but 29 February on a Sunday: 2032 after 2026."""
DENSE_PADDING = tuple(f"{first}-28 * *" for first in range(2, 13))
"""Eleven rules more naming nearly every day, each walked once a year."""


class TestTheSearchStaysBounded:
    """The search for a slot that runs takes at most ``MAX_SEARCH_STEPS`` steps: a slot looked
    at costs its schedule's ``slot_steps``, a year of a rule's days as many as it names."""

    def test_a_week_excluded_from_a_job_every_second_is_jumped_day_by_day(self) -> None:
        found = exclusions.excluding(EVERY_SECOND, excluded(dates=("2026-12-01/2026-12-07",)))

        assert found.next_after(utc(2026, 11, 30, 23, 59, 59)) == timeline.Occurrence(
            at=utc(2026, 12, 8), nominal=datetime(2026, 12, 8)
        )

    @pytest.mark.parametrize(
        ("rules", "slot_steps", "expected"),
        [
            pytest.param(
                LEAP_SUNDAYS,
                1,
                exclusions.Search(
                    found=timeline.Occurrence(at=utc(2032, 2, 29), nominal=datetime(2032, 2, 29))
                ),
                id="five-rules-leave-a-sunday-29-february-five-years-on",
            ),
            pytest.param(
                LEAP_SUNDAYS + DENSE_PADDING,
                1,
                exclusions.Search(found=None, gave_up_at=utc(2028, 1, 1)),
                id="sixteen-dense-rules-walk-a-year-too-many-days",
            ),
            pytest.param(
                LEAP_SUNDAYS,
                16,
                exclusions.Search(found=None, gave_up_at=utc(2028, 6, 4)),
                id="a-timeline-of-sixteen-entries-asks-each-slot-sixteen-times",
            ),
            pytest.param(
                ("* * *",),
                1,
                exclusions.Search(found=None),
                id="every-day-over-ten-years-fits",
            ),
        ],
    )
    def test_a_search_gives_up_after_its_steps(
        self, rules: tuple[str, ...], slot_steps: int, expected: exclusions.Search
    ) -> None:
        found = exclusions.Excluding(HOURLY, excluded(days=rules), slot_steps)

        assert found.search(utc(2026, 12, 1)) == expected

    def test_every_day_excluded_leaves_no_slot(self) -> None:
        found = exclusions.excluding(HOURLY, excluded(days=("* * *",)))

        assert found.next_after(utc(2026, 12, 1)) is None

    def test_no_exclusion_is_the_schedule_itself(self) -> None:
        assert exclusions.excluding(HOURLY, excluded()) is HOURLY

    def test_an_excluded_one_off_has_ended(self) -> None:
        found = exclusions.excluding(
            windows.OneOff(utc(2026, 12, 25, 9)), excluded(dates=("2026-12-25",))
        )

        assert found.next_after(utc(2026, 12, 1)) is None
        assert windows.has_ended(found, after=utc(2026, 12, 1))


class TestMalformedExclusionsNameTheirField:
    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            ("2026-13-01", "is not a date (YYYY-MM-DD)"),
            ("25.12.2026", "is not a date (YYYY-MM-DD)"),
            ("2026-12-31/2026-12-01", "ends before it starts"),
            ("2026-12-01/", "is not a date"),
        ],
    )
    def test_dates(self, text: str, problem: str) -> None:
        with pytest.raises(InvalidSpecError, match=re.escape(problem)) as raised:
            exclusions.parse_dates(text, field="spec.exclude.dates[2]")

        assert raised.value.field == "spec.exclude.dates[2]"

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            ("25 12", "has 2 fields; expected 3 (day-of-month month day-of-week)"),
            ("0 0 25 12 *", "has 5 fields"),
            ("32 * *", "day-of-month field '32' is not valid"),
            ("* * thursday", "thursday"),
        ],
    )
    def test_recurring_rules(self, text: str, problem: str) -> None:
        with pytest.raises(InvalidSpecError, match=re.escape(problem)) as raised:
            exclusions.parse_rule(text, field="spec.exclude.days[0]")

        assert raised.value.field == "spec.exclude.days[0]"

    def test_a_range_parses_to_its_first_and_last_day(self) -> None:
        assert exclusions.parse_dates("2026-12-24/2027-01-01", field="dates") == (
            date(2026, 12, 24),
            date(2027, 1, 1),
        )


class TestTheFirstExcludedSlot:
    @pytest.mark.parametrize(
        ("until", "expected"),
        [
            (utc(2026, 12, 2, 5), utc(2026, 12, 2)),
            (utc(2026, 12, 1, 23, 59), None),
        ],
    )
    def test_in_a_window(self, until: datetime, expected: datetime | None) -> None:
        found = exclusions.Excluding(HOURLY, excluded(dates=("2026-12-02",)))

        assert found.first_excluded(after=utc(2026, 12, 1, 20, 30), until=until) == expected
