"""The active window ``[startsAt, endsAt)``: a slot exactly at ``startsAt`` runs, one exactly at
``endsAt`` does not; without a schedule, one slot at ``startsAt``."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from punctual.scheduling import cron, dst, interval, timeline, windows

COPENHAGEN = ZoneInfo("Europe/Copenhagen")
HOURLY = interval.IntervalSchedule(every=timedelta(hours=1))


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def slots_of(schedule: timeline.Schedule, *, after: datetime, until: datetime) -> list[datetime]:
    found = []
    while (occurrence := schedule.next_after(after)) is not None and occurrence.at <= until:
        found.append(occurrence.at)
        after = occurrence.at
    return found


class TestTheWindowsEdges:
    @pytest.mark.parametrize(
        ("window", "expected"),
        [
            pytest.param(
                windows.Window(starts_at=utc(2026, 1, 1, 2), ends_at=utc(2026, 1, 1, 5)),
                [utc(2026, 1, 1, 2), utc(2026, 1, 1, 3), utc(2026, 1, 1, 4)],
                id="a-slot-at-the-start-runs-one-at-the-end-does-not",
            ),
            pytest.param(
                windows.Window(
                    starts_at=utc(2026, 1, 1, 1, 30), ends_at=utc(2026, 1, 1, 4, 0, 0, 1)
                ),
                [utc(2026, 1, 1, 2), utc(2026, 1, 1, 3), utc(2026, 1, 1, 4)],
                id="between-slots-and-a-microsecond-past-one",
            ),
            pytest.param(
                windows.Window(starts_at=utc(2026, 1, 1, 22)),
                [utc(2026, 1, 1, 22), utc(2026, 1, 1, 23), utc(2026, 1, 2)],
                id="only-a-start",
            ),
            pytest.param(
                windows.Window(ends_at=utc(2026, 1, 1, 2)),
                [utc(2026, 1, 1, 1)],
                id="only-an-end",
            ),
            pytest.param(
                windows.Window(
                    starts_at=datetime.fromisoformat("2026-01-01T03:00:00+01:00"),
                    ends_at=datetime.fromisoformat("2026-01-01T05:00:00+02:00"),
                ),
                [utc(2026, 1, 1, 2)],
                id="bounds-in-other-offsets-are-instants",
            ),
        ],
    )
    def test_the_slots_of_an_hourly_job(
        self, window: windows.Window, expected: list[datetime]
    ) -> None:
        schedule = windows.within(HOURLY, window)

        assert slots_of(schedule, after=utc(2026, 1, 1), until=utc(2026, 1, 2)) == expected

    def test_counting_due_slots_keeps_to_the_window(self) -> None:
        window = windows.Window(starts_at=utc(2026, 1, 1, 2), ends_at=utc(2026, 1, 1, 5))
        for schedule in (HOURLY, cron.parse("0 * * * *", zone=ZoneInfo("UTC"))):
            due = windows.within(schedule, window).due_between(
                after=utc(2026, 1, 1), until=utc(2026, 1, 2), keep=2
            )

            assert (due.total, due.newest) == (3, (utc(2026, 1, 1, 3), utc(2026, 1, 1, 4)))

    def test_a_window_open_at_both_ends_is_the_schedule_itself(self) -> None:
        assert windows.within(HOURLY, windows.Window()) is HOURLY


class TestAWindowAcrossDst:
    """The bounds are instants: they cut between the two 02:30 of a fall-back night, and a
    shifted slot counts at the instant it runs."""

    @pytest.mark.parametrize(
        ("window", "expected"),
        [
            pytest.param(
                windows.Window(starts_at=utc(2026, 10, 25, 1)),
                [utc(2026, 10, 25, 1, 30)],
                id="fall-back-only-the-second-0230",
            ),
            pytest.param(
                windows.Window(ends_at=utc(2026, 10, 25, 1, 30)),
                [utc(2026, 10, 25, 0, 30)],
                id="fall-back-only-the-first-0230",
            ),
        ],
    )
    def test_a_daily_0230_with_both_occurrences(
        self, window: windows.Window, expected: list[datetime]
    ) -> None:
        daily = cron.parse(
            "30 2 * * *", zone=COPENHAGEN, rules=dst.DstRules(ambiguous=dst.Ambiguous.BOTH)
        )
        schedule = windows.within(daily, window)

        found = slots_of(schedule, after=utc(2026, 10, 24, 12), until=utc(2026, 10, 25, 12))
        assert found == expected

    def test_a_slot_shifted_out_of_the_spring_forward_gap_runs_at_its_new_instant(self) -> None:
        daily = cron.parse("30 2 * * *", zone=COPENHAGEN)
        # 02:30 does not exist on 2026-03-29: it runs at 03:00 CEST, 01:00Z.
        window = windows.Window(starts_at=datetime.fromisoformat("2026-03-29T03:00:00+02:00"))

        found = slots_of(
            windows.within(daily, window), after=utc(2026, 3, 28, 12), until=utc(2026, 3, 30, 12)
        )
        assert found == [utc(2026, 3, 29, 1), utc(2026, 3, 30, 0, 30)]


class TestAOneOff:
    AT = utc(2026, 12, 24, 17)

    @pytest.mark.parametrize(
        ("after", "expected"),
        [
            pytest.param(utc(2026, 1, 1), AT, id="before-it"),
            pytest.param(AT - timedelta(microseconds=1), AT, id="just-before-it"),
            pytest.param(AT, None, id="at-it"),
            pytest.param(utc(2027, 1, 1), None, id="after-it"),
        ],
    )
    def test_has_its_one_slot(self, after: datetime, expected: datetime | None) -> None:
        found = windows.OneOff(self.AT).next_after(after)

        assert (found.at if found is not None else None) == expected

    @pytest.mark.parametrize(
        ("after", "until", "total"),
        [
            pytest.param(utc(2026, 1, 1), AT, 1, id="ending-at-it"),
            pytest.param(AT, utc(2027, 1, 1), 0, id="starting-at-it"),
            pytest.param(utc(2026, 1, 1), AT - timedelta(seconds=1), 0, id="before-it"),
        ],
    )
    def test_is_due_once(self, after: datetime, until: datetime, total: int) -> None:
        due = windows.OneOff(self.AT).due_between(after=after, until=until, keep=1)

        assert (due.total, due.newest) == (total, (self.AT,) * total)


class TestEndedOrRunOut:
    NOW = utc(2026, 6, 1)

    @pytest.mark.parametrize(
        ("schedule", "ended"),
        [
            pytest.param(windows.OneOff(utc(2026, 1, 1)), True, id="a-one-off"),
            pytest.param(
                windows.within(HOURLY, windows.Window(ends_at=utc(2026, 5, 1))),
                True,
                id="a-window-over",
            ),
            pytest.param(
                windows.within(
                    cron.parse("0 0 * 2 1#5", zone=ZoneInfo("UTC")),
                    windows.Window(ends_at=utc(2030, 1, 1)),
                ),
                True,
                id="no-slot-left-before-its-end",
            ),
            pytest.param(
                windows.within(
                    cron.parse("0 0 * 2 1#5", zone=ZoneInfo("UTC")),
                    windows.Window(ends_at=utc(2100, 1, 1)),
                ),
                False,
                id="the-search-gave-up-before-its-end",
            ),
            pytest.param(cron.parse("0 0 * 2 1#5", zone=ZoneInfo("UTC")), False, id="no-window"),
        ],
    )
    def test_a_schedule_with_no_slot_left(self, schedule: timeline.Schedule, ended: bool) -> None:
        assert windows.has_ended(schedule, after=self.NOW) is ended
