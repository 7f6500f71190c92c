"""Instants as the API writes them: unix milliseconds and RFC 3339 in UTC."""

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.scheduling import timeline


class TestUnixMillis:
    @pytest.mark.parametrize(
        ("instant", "millis"),
        [
            pytest.param(datetime(1970, 1, 1, tzinfo=UTC), 0, id="the-epoch"),
            pytest.param(datetime(2026, 12, 1, 1, 30, tzinfo=UTC), 1_796_088_600_000, id="utc"),
            pytest.param(
                datetime(2026, 12, 1, 2, 30, tzinfo=ZoneInfo("Europe/Copenhagen")),
                1_796_088_600_000,
                id="any-zone",
            ),
            pytest.param(
                datetime(2026, 1, 1, 0, 0, 0, 999_999, tzinfo=UTC),
                1_767_225_600_999,
                id="whole-milliseconds-truncated",
            ),
        ],
    )
    def test_whole_milliseconds_since_the_epoch(self, instant: datetime, millis: int) -> None:
        assert timeline.unix_millis(instant) == millis


class TestRfc3339IsUtcWithAZ:
    @pytest.mark.parametrize(
        ("instant", "text"),
        [
            pytest.param(datetime(2026, 10, 25, 0, 30, tzinfo=UTC), "2026-10-25T00:30:00Z",
                         id="whole-seconds-without-a-fraction"),
            pytest.param(datetime(2026, 10, 25, 0, 30, 0, 250_000, tzinfo=UTC),
                         "2026-10-25T00:30:00.250Z", id="milliseconds"),
            pytest.param(datetime(2026, 10, 25, 0, 30, 0, 250_999, tzinfo=UTC),
                         "2026-10-25T00:30:00.250Z", id="microseconds-truncated"),
            pytest.param(datetime(2026, 10, 25, 2, 30, tzinfo=ZoneInfo("Europe/Copenhagen")),
                         "2026-10-25T00:30:00Z", id="a-local-instant-in-utc"),
        ],
    )  # fmt: skip
    def test_format(self, instant: datetime, text: str) -> None:
        assert timeline.rfc3339(instant) == text

    @pytest.mark.parametrize(
        ("text", "instant"),
        [
            pytest.param("2026-10-25T00:30:00Z", datetime(2026, 10, 25, 0, 30, tzinfo=UTC), id="z"),
            pytest.param("2026-10-25T02:30:00+02:00", datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
                         id="an-offset"),
            pytest.param("2026-10-25T00:30:00.250Z",
                         datetime(2026, 10, 25, 0, 30, 0, 250_000, tzinfo=UTC), id="a-fraction"),
        ],
    )  # fmt: skip
    def test_parse(self, text: str, instant: datetime) -> None:
        parsed = timeline.parse_rfc3339(text)
        assert parsed == instant
        assert parsed.utcoffset() == timedelta(0)

    @settings(max_examples=200, deadline=None)
    @given(
        st.datetimes(
            min_value=datetime(1971, 1, 1), max_value=datetime(9998, 1, 1), timezones=st.just(UTC)
        )
    )
    def test_a_millisecond_instant_round_trips(self, instant: datetime) -> None:
        instant = instant.replace(microsecond=instant.microsecond // 1000 * 1000)
        assert timeline.parse_rfc3339(timeline.rfc3339(instant)) == instant


@pytest.fixture
def host_in_copenhagen() -> Iterator[None]:
    """The host's local time zone, as a laptop running ``punctual next`` might have it."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "Europe/Copenhagen"
    time.tzset()
    try:
        yield
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()


class TestATimestampWithoutAnOffsetIsNotReadInTheHostZone:
    @pytest.mark.usefixtures("host_in_copenhagen")
    @pytest.mark.parametrize(
        ("text", "as_utc"),
        [
            pytest.param("2026-10-25T00:30:00", datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
                         id="no-offset"),
            pytest.param("2026-10-25", datetime(2026, 10, 25, tzinfo=UTC), id="a-bare-date"),
        ],
    )  # fmt: skip
    def test_it_is_rejected_or_read_as_utc(self, text: str, as_utc: datetime) -> None:
        try:
            parsed = timeline.parse_rfc3339(text)
        except ValueError:
            return
        assert parsed == as_utc


class TestATimestampOutOfRangeInUtc:
    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("0001-01-01T00:00:00+01:00", id="before-year-one"),
            pytest.param("9999-12-31T23:59:59-01:00", id="after-year-9999"),
        ],
    )
    def test_is_a_value_error_like_any_unreadable_timestamp(self, text: str) -> None:
        with pytest.raises(ValueError, match="out of range"):
            timeline.parse_rfc3339(text)
