"""``every`` schedules: multiples of the interval since the Unix epoch, in UTC."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.scheduling import interval, timeline

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
PROPERTY_SETTINGS = settings(max_examples=100, deadline=None)

# Round intervals users write, and any whole number of milliseconds up to three days.
intervals = st.one_of(
    st.sampled_from(
        [
            timedelta(milliseconds=250),
            timedelta(seconds=1),
            timedelta(seconds=7),
            timedelta(seconds=10),
            timedelta(minutes=5),
            timedelta(hours=1, minutes=30),
            timedelta(days=1),
            timedelta(days=7),
        ]
    ),
    st.integers(min_value=1, max_value=3 * 24 * 3600 * 1000).map(
        lambda ms: timedelta(milliseconds=ms)
    ),
)


def _index_range(every: timedelta) -> tuple[int, int]:
    """The indexes k of the slots k * every since the epoch that fall in 2025-2028."""
    return (
        (datetime(2025, 1, 1, tzinfo=UTC) - EPOCH) // every,
        (datetime(2029, 1, 1, tzinfo=UTC) - EPOCH) // every,
    )


@st.composite
def interval_and_index(draw: st.DrawFn) -> tuple[timedelta, int]:
    every = draw(intervals)
    low, high = _index_range(every)
    return every, draw(st.integers(min_value=low, max_value=high))


class TestAnIntervalSlotIsAMultipleOfTheIntervalSinceTheEpoch:
    @pytest.mark.parametrize(
        ("every", "after", "expected"),
        [
            pytest.param(
                timedelta(seconds=10),
                datetime(2026, 3, 29, 1, 0, 3, tzinfo=UTC),
                datetime(2026, 3, 29, 1, 0, 10, tzinfo=UTC),
                id="ten-seconds",
            ),
            pytest.param(
                timedelta(seconds=10),
                datetime(2026, 3, 29, 1, 0, 10, tzinfo=UTC),
                datetime(2026, 3, 29, 1, 0, 20, tzinfo=UTC),
                id="strictly-after-an-instant-on-a-slot",
            ),
            pytest.param(
                timedelta(milliseconds=250),
                datetime(2026, 1, 1, 0, 0, 0, 100_000, tzinfo=UTC),
                datetime(2026, 1, 1, 0, 0, 0, 250_000, tzinfo=UTC),
                id="quarter-seconds",
            ),
            pytest.param(
                timedelta(hours=1, minutes=30),
                datetime(2026, 1, 1, 0, 10, tzinfo=UTC),
                datetime(2026, 1, 1, 1, 30, tzinfo=UTC),
                id="ninety-minutes-counted-from-1970-not-from-midnight",
            ),
            pytest.param(
                timedelta(hours=1, minutes=30),
                datetime(2026, 1, 1, 22, 40, tzinfo=UTC),
                datetime(2026, 1, 2, 0, 0, tzinfo=UTC),
                id="ninety-minutes-across-midnight",
            ),
            pytest.param(
                timedelta(days=7),
                datetime(2026, 1, 1, tzinfo=UTC),  # a Thursday, like 1970-01-01
                datetime(2026, 1, 8, tzinfo=UTC),
                id="weekly-from-a-thursday",
            ),
            pytest.param(
                timedelta(hours=1),
                datetime(2026, 10, 25, 2, 10, tzinfo=ZoneInfo("Europe/Copenhagen")),
                datetime(2026, 10, 25, 1, tzinfo=UTC),
                id="an-instant-in-a-repeated-local-hour",
            ),
        ],
    )
    def test_the_next_slot(self, every: timedelta, after: datetime, expected: datetime) -> None:
        occurrence = interval.IntervalSchedule(every=every).next_after(after)
        assert occurrence.at == expected
        assert occurrence.at.utcoffset() == timedelta(0)
        assert occurrence.adjustment is None
        assert occurrence.nominal == expected.replace(tzinfo=None)

    def test_the_shortest_period_is_the_interval(self) -> None:
        every = timedelta(minutes=5)
        assert interval.IntervalSchedule(every=every).shortest_period == every

    @PROPERTY_SETTINGS
    @given(interval_and_index(), st.floats(min_value=0, max_value=1, exclude_max=True))
    def test_any_instant_in_one_interval_leads_to_the_start_of_the_next(
        self, every_and_index: tuple[timedelta, int], fraction: float
    ) -> None:
        every, k = every_and_index
        instant = EPOCH + k * every + min(every * fraction, every - timedelta(microseconds=1))
        assert EPOCH + k * every <= instant < EPOCH + (k + 1) * every
        at = interval.IntervalSchedule(every=every).next_after(instant).at
        assert at == EPOCH + (k + 1) * every
        assert (at - EPOCH) % every == timedelta(0)

    @PROPERTY_SETTINGS
    @given(
        intervals,
        st.datetimes(
            min_value=datetime(2025, 1, 1), max_value=datetime(2028, 12, 31), timezones=st.just(UTC)
        ),
        st.sampled_from(["Europe/Copenhagen", "America/New_York", "Australia/Lord_Howe"]),
    )
    def test_all_replicas_agree_whenever_and_wherever_they_started(
        self, every: timedelta, start: datetime, zone: str
    ) -> None:
        schedule = interval.IntervalSchedule(every=every)
        first = schedule.next_after(start).at
        assert schedule.next_after(start.astimezone(ZoneInfo(zone))).at == first
        assert (first - EPOCH) % every == timedelta(0)
        assert first - every <= start < first
        assert schedule.next_after(first).at == first + every


class TestIntervalDueSlotsAgreeWithIteratingNextAfter:
    @PROPERTY_SETTINGS
    @given(
        intervals,
        st.datetimes(
            min_value=datetime(2025, 1, 1), max_value=datetime(2028, 12, 31), timezones=st.just(UTC)
        ),
        st.floats(min_value=-2, max_value=40),
        st.integers(min_value=0, max_value=12),
    )
    def test_count_and_newest(
        self, every: timedelta, after: datetime, intervals_long: float, keep: int
    ) -> None:
        schedule = interval.IntervalSchedule(every=every)
        until = after + every * intervals_long
        due = schedule.due_between(after=after, until=until, keep=keep)
        iterated = timeline.scan_due(schedule, after=after, until=until, keep=keep)
        assert due == iterated
        assert len(due.newest) == min(keep, due.total)

    @pytest.mark.parametrize(
        ("after", "until", "keep", "total", "newest"),
        [
            pytest.param(0, 60, 10, 6, (10, 20, 30, 40, 50, 60), id="open-at-start-closed-at-end"),
            pytest.param(5, 55, 10, 5, (10, 20, 30, 40, 50), id="window-between-slots"),
            pytest.param(0, 60, 2, 6, (50, 60), id="keeps-the-newest-oldest-first"),
            pytest.param(0, 60, 0, 6, (), id="keep-none-still-counts"),
            pytest.param(60, 60, 5, 0, (), id="empty-window"),
            pytest.param(60, 0, 5, 0, (), id="reversed-window"),
            pytest.param(1, 9, 5, 0, (), id="no-slot-inside"),
        ],
    )  # fmt: skip
    def test_a_ten_second_interval(
        self, after: int, until: int, keep: int, total: int, newest: tuple[int, ...]
    ) -> None:
        base = datetime(2026, 1, 1, tzinfo=UTC)
        due = interval.IntervalSchedule(every=timedelta(seconds=10)).due_between(
            after=base + timedelta(seconds=after), until=base + timedelta(seconds=until), keep=keep
        )
        assert due.total == total
        assert due.newest == tuple(base + timedelta(seconds=s) for s in newest)

    def test_a_long_outage_is_counted_without_walking_it(self) -> None:
        schedule = interval.IntervalSchedule(every=timedelta(milliseconds=250))
        after = datetime(2025, 1, 1, tzinfo=UTC)
        due = schedule.due_between(after=after, until=after + timedelta(days=365), keep=3)
        assert due.total == 365 * 24 * 3600 * 4
        assert due.newest[-1] == after + timedelta(days=365)
