"""``spec.timeZone``: IANA names, and a helpful no for near misses."""

from datetime import UTC, datetime, timedelta

import pytest

from punctual.scheduling import zones
from punctual.scheduling.errors import InvalidSpecError

FIELD = "spec.timeZone"


class TestAnIanaNameIsAZone:
    @pytest.mark.parametrize(
        ("name", "winter_offset"),
        [
            pytest.param("UTC", timedelta(0), id="utc"),
            pytest.param("Europe/London", timedelta(0), id="london"),
            pytest.param("Europe/Copenhagen", timedelta(hours=1), id="copenhagen"),
            pytest.param("America/New_York", timedelta(hours=-5), id="new-york"),
            pytest.param("Australia/Lord_Howe", timedelta(hours=11), id="lord-howe-in-its-summer"),
            pytest.param("Asia/Kolkata", timedelta(hours=5, minutes=30), id="kolkata"),
            pytest.param("Etc/GMT+5", timedelta(hours=-5), id="posix-sign-etc-zone"),
        ],
    )
    def test_it_parses_to_that_zone(self, name: str, winter_offset: timedelta) -> None:
        zone = zones.parse(name)
        assert str(zone) == name
        assert datetime(2026, 1, 15, tzinfo=UTC).astimezone(zone).utcoffset() == winter_offset


class TestAnUnknownNameIsRejectedWithASuggestion:
    @pytest.mark.parametrize(
        ("name", "suggestion"),
        [
            pytest.param("Europe/Copenhagn", "Europe/Copenhagen", id="a-typo"),
            pytest.param("europe/copenhagen", "Europe/Copenhagen", id="wrong-case"),
            pytest.param("America/New_Yrok", "America/New_York", id="swapped-letters"),
            pytest.param("Kolkata", "Asia/Kolkata", id="the-city-alone"),
            pytest.param("Europe/Copenhagen/", "Europe/Copenhagen", id="a-trailing-slash"),
            pytest.param("UTC ", "UTC", id="a-trailing-blank"),
        ],
    )
    def test_the_error_names_the_field_and_suggests_the_near_miss(
        self, name: str, suggestion: str
    ) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            zones.parse(name)
        assert caught.value.field == FIELD
        assert caught.value.problem == f"unknown time zone {name!r}; did you mean {suggestion!r}?"

    @pytest.mark.parametrize(
        "name",
        [
            pytest.param("Mars/Olympus_Mons", id="nothing-close"),
            pytest.param("", id="empty"),
            pytest.param("../../etc/passwd", id="a-path"),
        ],
    )
    def test_without_a_near_miss_it_shows_an_example(self, name: str) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            zones.parse(name)
        assert caught.value.field == FIELD
        assert caught.value.problem.startswith(f"unknown time zone {name!r}")
        assert "such as Europe/Copenhagen" in caught.value.problem

    def test_the_error_names_whichever_field_it_was_given(self) -> None:
        with pytest.raises(InvalidSpecError, match=r"^--tz: unknown time zone"):
            zones.parse("Nowhere/Land", field="--tz")

    @pytest.mark.parametrize(
        "name",
        [
            pytest.param("Europe", id="a-region-is-a-directory"),
            pytest.param("Etc", id="another-directory"),
            pytest.param("A" * 300, id="a-name-longer-than-a-file-name"),
        ],
    )
    def test_a_name_that_is_no_zone_file_is_an_invalid_spec_not_a_crash(self, name: str) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            zones.parse(name)
        assert caught.value.field == FIELD
        assert caught.value.problem.startswith(f"unknown time zone {name!r}")
