"""Go-style durations: what users may write for ``every``, ``jitter``, ``timeout`` and deadlines."""

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.scheduling import durations
from punctual.scheduling.errors import InvalidSpecError

FIELD = "spec.every"


class TestAWellFormedDurationParses:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            pytest.param("250ms", timedelta(milliseconds=250), id="milliseconds"),
            pytest.param("10s", timedelta(seconds=10), id="seconds"),
            pytest.param("5m", timedelta(minutes=5), id="minutes"),
            pytest.param("2h", timedelta(hours=2), id="hours"),
            pytest.param("1h30m", timedelta(hours=1, minutes=30), id="hours-and-minutes"),
            pytest.param(
                "1h2m3s4ms",
                timedelta(hours=1, minutes=2, seconds=3, milliseconds=4),
                id="every-unit-at-once",
            ),
            pytest.param(
                "90s", timedelta(minutes=1, seconds=30), id="units-need-not-be-normalized"
            ),
            pytest.param("1m1m", timedelta(minutes=2), id="repeated-units-add-up-as-in-go"),
            pytest.param("0h1s", timedelta(seconds=1), id="a-zero-term-beside-a-positive-one"),
            pytest.param("1ms", timedelta(milliseconds=1), id="the-smallest-positive-duration"),
        ],
    )
    def test_it_becomes_the_timedelta_it_spells(self, text: str, expected: timedelta) -> None:
        assert durations.parse(text, field=FIELD) == expected


class TestAMalformedDurationIsRejectedNamingTheFieldAndTheProblem:
    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            pytest.param("", "empty duration", id="empty"),
            pytest.param("10", "missing unit", id="a-bare-number-misses-its-unit"),
            pytest.param("-5s", "must be positive", id="negative"),
            pytest.param("1.5h", "fractions are not supported", id="fraction"),
            pytest.param("10us", "the smallest unit is ms", id="microseconds"),
            pytest.param("10ns", "the smallest unit is ms", id="nanoseconds"),
            pytest.param("abc", "expected whole numbers with units", id="not-a-duration-at-all"),
            pytest.param("10S", "expected whole numbers with units", id="units-are-lowercase"),
            pytest.param("10 s", "expected whole numbers with units", id="no-spaces"),
            pytest.param("1d", "expected whole numbers with units", id="days-are-not-a-unit"),
            pytest.param("0s", "must be positive", id="zero-is-not-positive"),
            pytest.param("0h0m", "must be positive", id="all-zero-terms"),
        ],
    )
    def test_the_error_names_the_field_and_says_what_is_wrong(
        self, text: str, problem: str
    ) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            durations.parse(text, field=FIELD)
        assert caught.value.field == FIELD
        assert problem in caught.value.problem
        assert str(caught.value).startswith(f"{FIELD}: ")

    def test_the_error_quotes_what_the_user_wrote(self) -> None:
        with pytest.raises(InvalidSpecError, match=r"'1\.5h'"):
            durations.parse("1.5h", field="spec.timeout")

    def test_the_error_names_whichever_field_it_was_given(self) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            durations.parse("10", field="spec.missedRuns.startingDeadline")
        assert str(caught.value).startswith("spec.missedRuns.startingDeadline: ")

    def test_an_invalid_duration_is_a_value_error_for_callers_that_only_know_that(self) -> None:
        with pytest.raises(ValueError, match=r"^spec\.every: "):
            durations.parse("soon", field=FIELD)

    def test_a_duration_too_large_to_represent_is_an_invalid_spec_not_a_crash(self) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            durations.parse("99999999999999h", field=FIELD)
        assert caught.value.field == FIELD
        assert caught.value.problem == "'99999999999999h' is too large"

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("\uff11\uff10s", id="full-width-digits"),
            pytest.param("\u0661\u0660s", id="arabic-indic-digits"),
        ],
    )
    def test_only_ascii_digits_count_as_in_go(self, text: str) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            durations.parse(text, field=FIELD)
        assert caught.value.field == FIELD


class TestADurationHasOneCanonicalSpelling:
    @pytest.mark.parametrize(
        ("duration", "spelling"),
        [
            pytest.param(timedelta(milliseconds=250), "250ms", id="milliseconds"),
            pytest.param(timedelta(seconds=90), "1m30s", id="seconds-carry-into-minutes"),
            pytest.param(timedelta(hours=1, minutes=30), "1h30m", id="hours-and-minutes"),
            pytest.param(timedelta(days=2), "48h", id="days-are-spelled-in-hours"),
            pytest.param(timedelta(hours=1, milliseconds=5), "1h5ms", id="zero-units-are-left-out"),
            pytest.param(timedelta(), "0s", id="zero"),
        ],
    )
    def test_format_spells_it_the_canonical_way(self, duration: timedelta, spelling: str) -> None:
        assert durations.format(duration) == spelling

    @settings(max_examples=200, deadline=None)
    @given(st.integers(min_value=1, max_value=10**12))
    def test_format_and_parse_round_trip(self, millis: int) -> None:
        duration = timedelta(milliseconds=millis)
        assert durations.parse(durations.format(duration), field=FIELD) == duration
