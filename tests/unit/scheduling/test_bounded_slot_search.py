"""The search for a schedule's next slot stops at its limit, ten years on; a count of due slots
stops at its step limit and goes on from where it stopped."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from punctual.scheduling import cron, dst, interval, merged, timeline

SKIP = dst.DstRules(nonexistent=dst.Nonexistent.SKIP)
BERLIN = ZoneInfo("Europe/Berlin")


def schedule(expression: str, zone: str = "UTC", rules: dst.DstRules = SKIP) -> cron.CronSchedule:
    return cron.parse(expression, zone=ZoneInfo(zone), rules=rules)


def utc(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=UTC)


class TestTheNextSlotIsSearchedTenYearsAhead:
    @pytest.mark.parametrize(
        ("expression", "zone", "after", "expected"),
        [
            pytest.param("0 0 29 2 *", "UTC", utc(2026, 6, 1), utc(2028, 2, 29), id="leap-day"),
            pytest.param(
                "0 0 29 2 *", "UTC", utc(2096, 3, 1), utc(2104, 2, 29), id="leap-day-across-2100"
            ),
            pytest.param("0 0 1 1 *", "UTC", utc(2026, 6, 1), utc(2027, 1, 1), id="yearly"),
            pytest.param(
                "30 2 * 3 0L",
                "Europe/Berlin",
                utc(2026, 6, 1),
                None,
                id="last-sunday-of-march-in-the-gap",
            ),
            pytest.param(
                "* * 2 * 3 0L", "Europe/Berlin", utc(2026, 6, 1), None, id="every-second-of-the-gap"
            ),
            pytest.param(
                "0 0 * 2 1#5", "UTC", utc(2026, 6, 1), None, id="fifth-monday-of-february-in-2044"
            ),
            pytest.param(
                "0 0 * 2 1#5",
                "UTC",
                utc(2036, 6, 1),
                utc(2044, 2, 29),
                id="fifth-monday-of-february-within-reach",
            ),
            pytest.param(
                "0 0 1 1 *", "UTC", utc(9995, 6, 1), None, id="near-the-end-of-the-calendar"
            ),
        ],
    )
    def test_the_first_slot_within_the_limit_or_none(
        self, expression: str, zone: str, after: datetime, expected: datetime | None
    ) -> None:
        found = schedule(expression, zone).next_after(after)

        assert (found.at if found is not None else None) == expected

    def test_a_slot_just_past_the_limit_is_not_found(self) -> None:
        yearly = schedule("0 0 1 1 *")
        before = utc(2030, 1, 1) - timeline.SEARCH_HORIZON - timedelta(seconds=1)

        assert yearly.next_after(before) is not None
        assert (
            schedule("0 0 * 2 1#5").next_after(
                utc(2044, 2, 29) - timeline.SEARCH_HORIZON - timedelta(seconds=1)
            )
            is None
        )

    def test_the_search_limit_stays_inside_the_calendar(self) -> None:
        assert timeline.search_limit(datetime.max.replace(tzinfo=UTC)) < datetime(
            9999, 1, 1, tzinfo=UTC
        )


class TestASkippedGapIsJumpedNotWalked:
    @pytest.mark.parametrize(
        ("expression", "after", "expected"),
        [
            # 2026-03-29: Berlin springs from 02:00 to 03:00 (01:00Z).
            pytest.param(
                "* * 2 * * *",
                utc(2026, 3, 29, 0, 30),
                utc(2026, 3, 30, 0, 0),
                id="every-second-of-hour-two",
            ),
            pytest.param(
                "*/20 * 2,3 * * *",
                utc(2026, 3, 29, 0, 30),
                utc(2026, 3, 29, 1, 0),
                id="the-hour-after-the-gap",
            ),
            pytest.param(
                "59 59 2 * * *",
                utc(2026, 3, 29, 0, 30),
                utc(2026, 3, 30, 0, 59, 59),
                id="the-last-second-of-the-gap",
            ),
            pytest.param(
                "0 0 3 * * *",
                utc(2026, 3, 29, 0, 30),
                utc(2026, 3, 29, 1, 0),
                id="the-end-of-the-gap-itself",
            ),
        ],
    )
    def test_the_first_slot_after_the_gap(
        self, expression: str, after: datetime, expected: datetime
    ) -> None:
        found = schedule(expression, "Europe/Berlin").next_after(after)

        assert found is not None
        assert found.at == expected


def walk(schedule: timeline.Schedule, *, after: datetime, until: datetime) -> list[datetime]:
    found = []
    while (occurrence := schedule.next_after(after)) is not None and occurrence.at <= until:
        found.append(occurrence.at)
        after = occurrence.at
    return found


def count_in_steps(
    schedule: timeline.Schedule, *, after: datetime, until: datetime, keep: int, steps: int
) -> timeline.DueSlots:
    due = schedule.due_between(after=after, until=until, keep=keep, steps=steps)
    while due.resume_after is not None:
        later = schedule.due_between(after=due.resume_after, until=until, keep=keep, steps=steps)
        due = timeline.combine(due, later, keep=keep)
    return due


SCHEDULES = {
    "every-7s": interval.IntervalSchedule(every=timedelta(seconds=7)),
    "every-twenty-seconds-cron": schedule("*/20 * * * * *"),
    "quarter-hours-in-berlin-across-spring": schedule("*/15 * * * *", "Europe/Berlin"),
    "hour-two-skipped-in-berlin": schedule("0 */10 2 * * *", "Europe/Berlin"),
    "hour-two-both-in-berlin-across-fall": schedule(
        "0 */20 2 * * *", "Europe/Berlin", dst.DstRules(ambiguous=dst.Ambiguous.BOTH)
    ),
}
WINDOWS = {
    "an-hour": (utc(2026, 1, 1), utc(2026, 1, 1, 1)),
    "spring-forward": (utc(2026, 3, 28, 23), utc(2026, 3, 29, 3)),
    "fall-back": (utc(2026, 10, 24, 23), utc(2026, 10, 25, 3)),
}


class TestACountInStepsIsTheWalkedCount:
    @pytest.mark.parametrize("name", SCHEDULES)
    @pytest.mark.parametrize("window", WINDOWS)
    @pytest.mark.parametrize("steps", [1, 7, None])
    @pytest.mark.parametrize("keep", [0, 5, 26])
    def test_total_and_newest(self, name: str, window: str, steps: int | None, keep: int) -> None:
        after, until = WINDOWS[window]
        walked = walk(SCHEDULES[name], after=after, until=until)

        due = (
            SCHEDULES[name].due_between(after=after, until=until, keep=keep)
            if steps is None
            else count_in_steps(SCHEDULES[name], after=after, until=until, keep=keep, steps=steps)
        )

        assert due.total == len(walked)
        assert due.newest == tuple(walked[max(len(walked) - keep, 0) :] if keep else ())
        assert due.resume_after is None

    def test_a_count_that_reaches_its_step_limit_says_where_to_go_on(self) -> None:
        every_second = merged.merge(
            [
                merged.Entry("seconds", schedule("* * * * * *")),
                merged.Entry("minutes", schedule("* * * * *")),
            ]
        )

        due = every_second.due_between(
            after=utc(2026, 1, 1), until=utc(2026, 1, 2), keep=2, steps=3
        )

        assert due.total == 3
        assert due.newest == (utc(2026, 1, 1, 0, 0, 2), utc(2026, 1, 1, 0, 0, 3))
        assert due.resume_after == utc(2026, 1, 1, 0, 0, 3)

    @pytest.mark.parametrize(
        "every_second",
        [interval.IntervalSchedule(every=timedelta(seconds=1)), schedule("* * * * * *")],
        ids=["interval", "cron"],
    )
    def test_a_counted_schedule_counts_a_long_outage_in_one_step(
        self, every_second: timeline.Schedule
    ) -> None:
        due = every_second.due_between(
            after=utc(2026, 1, 1), until=utc(2026, 1, 3), keep=1, steps=1
        )

        assert due.total == 2 * 86_400
        assert due.resume_after is None
