"""Several schedules of one job as one timeline: each instant once, named by every entry that
lands on it, and the same instants for the others when an entry goes."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from punctual.scheduling import cron, interval, merged, timeline, windows

COPENHAGEN = ZoneInfo("Europe/Copenhagen")
NEW_YORK = ZoneInfo("America/New_York")
UTC_ZONE = ZoneInfo("UTC")


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def entry(name: str, expression: str, zone: ZoneInfo = UTC_ZONE) -> merged.Entry:
    return merged.Entry(name, cron.parse(expression, zone=zone))


def every(name: str, period: timedelta) -> merged.Entry:
    return merged.Entry(name, interval.IntervalSchedule(every=period))


def slots_of(schedule: timeline.Schedule, *, after: datetime, until: datetime) -> list[datetime]:
    found = []
    while (occurrence := schedule.next_after(after)) is not None and occurrence.at <= until:
        found.append(occurrence.at)
        after = occurrence.at
    return found


def named(
    schedule: merged.Merged, *, after: datetime, until: datetime
) -> list[tuple[datetime, tuple[str, ...]]]:
    return [(at, schedule.fired_by(at)) for at in slots_of(schedule, after=after, until=until)]


class TestTheMergedTimeline:
    @pytest.mark.parametrize(
        ("entries", "after", "until", "expected"),
        [
            pytest.param(
                [entry("morning", "0 9 * * *"), entry("evening", "0 17 * * *")],
                utc(2026, 3, 2),
                utc(2026, 3, 3, 12),
                [
                    (utc(2026, 3, 2, 9), ("morning",)),
                    (utc(2026, 3, 2, 17), ("evening",)),
                    (utc(2026, 3, 3, 9), ("morning",)),
                ],
                id="two-entries-interleave",
            ),
            pytest.param(
                [entry("hourly", "0 * * * *"), entry("noon", "0 12 * * *")],
                utc(2026, 3, 2, 10, 30),
                utc(2026, 3, 2, 13),
                [
                    (utc(2026, 3, 2, 11), ("hourly",)),
                    (utc(2026, 3, 2, 12), ("hourly", "noon")),
                    (utc(2026, 3, 2, 13), ("hourly",)),
                ],
                id="coinciding-slots-are-one-slot-named-by-both",
            ),
            pytest.param(
                [every("quarter", timedelta(minutes=15)), entry("half-past", "30 * * * *")],
                utc(2026, 3, 2, 10, 10),
                utc(2026, 3, 2, 11),
                [
                    (utc(2026, 3, 2, 10, 15), ("quarter",)),
                    (utc(2026, 3, 2, 10, 30), ("quarter", "half-past")),
                    (utc(2026, 3, 2, 10, 45), ("quarter",)),
                    (utc(2026, 3, 2, 11), ("quarter",)),
                ],
                id="an-interval-and-a-cron-entry",
            ),
            pytest.param(
                # 09:00 in Copenhagen is 08:00 UTC until its change on 29 March, 07:00 after;
                # 03:00 in New York is 08:00 UTC until its change on 8 March, 07:00 after: the
                # entries are one slot a day before the first change and after the second, two
                # slots a day between them.
                [entry("cph", "0 9 * * *", COPENHAGEN), entry("nyc", "0 3 * * *", NEW_YORK)],
                utc(2026, 3, 6),
                utc(2026, 3, 31),
                [
                    (utc(2026, 3, 6, 8), ("cph", "nyc")),
                    (utc(2026, 3, 7, 8), ("cph", "nyc")),
                    *[
                        slot
                        for day in range(8, 29)
                        for slot in (
                            (utc(2026, 3, day, 7), ("nyc",)),
                            (utc(2026, 3, day, 8), ("cph",)),
                        )
                    ],
                    (utc(2026, 3, 29, 7), ("cph", "nyc")),
                    (utc(2026, 3, 30, 7), ("cph", "nyc")),
                ],
                id="entries-in-two-zones-across-their-dst-changes",
            ),
        ],
    )
    def test_slots_and_the_entries_that_fire_them(
        self,
        entries: list[merged.Entry],
        after: datetime,
        until: datetime,
        expected: list[tuple[datetime, tuple[str, ...]]],
    ) -> None:
        assert named(merged.merge(entries), after=after, until=until) == expected

    def test_an_instant_no_entry_names_is_fired_by_none(self) -> None:
        schedule = merged.merge([entry("morning", "0 9 * * *"), entry("evening", "0 17 * * *")])

        assert schedule.fired_by(utc(2026, 3, 2, 12)) == ()

    def test_removing_an_entry_leaves_the_others_slots_where_they_were(self) -> None:
        both = merged.merge([entry("hourly", "0 * * * *"), entry("halves", "30 9-11 * * *")])
        hourly = merged.merge([entry("hourly", "0 * * * *")])
        window = {"after": utc(2026, 3, 2, 8), "until": utc(2026, 3, 2, 14)}

        kept = slots_of(hourly, **window)

        assert set(kept) <= set(slots_of(both, **window))
        assert [timeline.unix_millis(at) for at in kept] == [
            timeline.unix_millis(at) for at in slots_of(both, **window) if at.minute == 0
        ]

    def test_an_entry_with_no_slot_left_leaves_the_others(self) -> None:
        ended = merged.Entry(
            "launch", windows.OneOff(utc(2026, 3, 2, 9, 30))
        )  # any schedule may run out
        schedule = merged.merge([ended, entry("hourly", "0 * * * *")])

        assert slots_of(schedule, after=utc(2026, 3, 2, 9), until=utc(2026, 3, 2, 11)) == [
            utc(2026, 3, 2, 9, 30),
            utc(2026, 3, 2, 10),
            utc(2026, 3, 2, 11),
        ]

    def test_no_entry_with_a_slot_left_is_no_slot(self) -> None:
        schedule = merged.merge([merged.Entry("launch", windows.OneOff(utc(2026, 3, 2)))])

        assert schedule.next_after(utc(2026, 3, 2)) is None


class TestCountingDueSlots:
    def test_coinciding_slots_count_once(self) -> None:
        schedule = merged.merge([entry("hourly", "0 * * * *"), entry("noon", "0 12 * * *")])

        due = schedule.due_between(after=utc(2026, 3, 2), until=utc(2026, 3, 3), keep=2)

        assert due == timeline.DueSlots(total=24, newest=(utc(2026, 3, 2, 23), utc(2026, 3, 3)))

    def test_a_long_window_is_counted_a_bounded_number_of_slots_at_a_time(self) -> None:
        schedule = merged.merge([every("second", timedelta(seconds=1)), entry("min", "* * * * *")])

        due = schedule.due_between(after=utc(2026, 3, 2), until=utc(2026, 3, 3), keep=1, steps=10)

        assert due.total == 10
        assert due.resume_after == utc(2026, 3, 2, 0, 0, 10)


class TestTheShortestPeriod:
    @pytest.mark.parametrize(
        ("entries", "expected"),
        [
            pytest.param(
                [entry("morning", "0 9 * * *"), entry("evening", "0 17 * * *")],
                timedelta(hours=8),
                id="the-gap-between-two-entries",
            ),
            pytest.param(
                [entry("hourly", "0 * * * *"), entry("top", "0 12 * * *")],
                timedelta(hours=1),
                id="coinciding-slots-are-no-gap",
            ),
            pytest.param(
                [entry("a", "0 * * * *"), entry("b", "1 * * * *")],
                timedelta(minutes=1),
                id="two-hourly-entries-a-minute-apart",
            ),
            pytest.param(
                # 09:00 Copenhagen and 08:00 UTC coincide in winter, an hour apart in summer.
                [entry("cph", "0 9 * * *", COPENHAGEN), entry("utc", "0 8 * * *")],
                timedelta(hours=1),
                id="entries-closer-in-summer-than-in-winter",
            ),
            pytest.param(
                [every("fast", timedelta(seconds=10)), entry("daily", "0 0 * * *")],
                timedelta(seconds=10),
                id="the-shortest-entry-period",
            ),
        ],
    )
    def test_the_smallest_gap_of_the_merged_timeline(
        self, entries: list[merged.Entry], expected: timedelta
    ) -> None:
        assert merged.merge(entries).shortest_period == expected
