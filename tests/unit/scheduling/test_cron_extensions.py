"""Cron extensions in ``spec.schedule``: L, W, #, ?, wrapping and equal ranges, and what they mean.

Slots are written ``"YYYY-MM-DDTHH:MMZ"`` (UTC). DST: ``test_cron_extensions_across_dst.py``;
refusals: ``test_cron_extension_refusals.py``; properties: ``test_cron_extension_properties.py``.
"""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import slot_tables

from punctual.scheduling import cron

UTC_ZONE = "UTC"


def slots_after(expression: str, after: str, count: int) -> list[str]:
    return slot_tables.slots_after(expression, datetime.fromisoformat(after), count, zone=UTC_ZONE)


class TestTheLastDayOfTheMonth:
    @pytest.mark.parametrize(
        ("expression", "after", "expected"),
        [
            pytest.param(
                "0 0 L * *",
                "2028-01-15T00:00Z",
                ["2028-01-31T00:00Z", "2028-02-29T00:00Z", "2028-03-31T00:00Z"],
                id="l-is-the-31st-the-29th-in-a-leap-february-the-31st",
            ),
            pytest.param(
                "0 0 L * *",
                "2026-04-15T00:00Z",
                ["2026-04-30T00:00Z", "2026-05-31T00:00Z"],
                id="l-is-the-30th-in-a-30-day-month",
            ),
            pytest.param(
                "0 0 1,L * *",
                "2026-02-15T00:00Z",
                ["2026-02-28T00:00Z", "2026-03-01T00:00Z", "2026-03-31T00:00Z"],
                id="l-in-a-list-with-the-first",
            ),
            pytest.param(
                "0 0 28-L * *",
                "2026-02-01T00:00Z",
                ["2026-02-28T00:00Z", "2026-03-28T00:00Z", "2026-03-29T00:00Z"],
                id="a-range-ending-in-l-stops-at-each-months-end",
            ),
            pytest.param(
                "0 0 20-L/5 * *",
                "2026-04-01T00:00Z",
                [
                    "2026-04-20T00:00Z",
                    "2026-04-25T00:00Z",
                    "2026-04-30T00:00Z",
                    "2026-05-20T00:00Z",
                ],
                id="a-stepped-range-ending-in-l",
            ),
            pytest.param(
                "0 0 31-L * *",
                "2026-04-01T00:00Z",
                ["2026-05-31T00:00Z", "2026-07-31T00:00Z"],
                id="31-to-l-is-the-31st-not-every-day",
            ),
            pytest.param(
                "0 0 L * MON",
                "2026-01-25T00:00Z",
                ["2026-01-26T00:00Z", "2026-01-31T00:00Z", "2026-02-02T00:00Z"],
                id="beside-plain-weekdays-either-day-field-fires-as-in-vixie-cron",
            ),
        ],
    )
    def test_the_slots_are_on_the_named_days(
        self, expression: str, after: str, expected: list[str]
    ) -> None:
        assert slots_after(expression, after, len(expected)) == expected


class TestTheWeekdayNearestADayOfTheMonth:
    @pytest.mark.parametrize(
        ("expression", "after", "expected"),
        [
            pytest.param(
                "0 9 15W * *",
                "2026-08-01T00:00Z",
                ["2026-08-14T09:00Z", "2026-09-15T09:00Z"],
                id="a-saturday-15th-runs-on-friday-the-14th",
            ),
            pytest.param(
                "0 9 15W * *",
                "2026-11-01T00:00Z",
                ["2026-11-16T09:00Z", "2026-12-15T09:00Z"],
                id="a-sunday-15th-runs-on-monday-the-16th",
            ),
            pytest.param(
                "0 9 W15 * *",
                "2026-11-01T00:00Z",
                ["2026-11-16T09:00Z", "2026-12-15T09:00Z"],
                id="w-before-the-day-means-the-same",
            ),
            pytest.param(
                "0 9 1W * *",
                "2026-07-15T00:00Z",
                ["2026-08-03T09:00Z", "2026-09-01T09:00Z"],
                id="a-saturday-1st-runs-on-monday-the-3rd-never-in-the-month-before",
            ),
            pytest.param(
                "0 9 31W * *",
                "2026-05-01T00:00Z",
                ["2026-05-29T09:00Z", "2026-06-30T09:00Z", "2026-07-31T09:00Z"],
                id="31w-is-the-last-weekday-of-every-month",
            ),
            pytest.param(
                "0 9 15W * ?",
                "2026-08-01T00:00Z",
                ["2026-08-14T09:00Z"],
                id="with-a-question-mark-for-the-weekday",
            ),
        ],
    )
    def test_the_slots_are_on_weekdays(
        self, expression: str, after: str, expected: list[str]
    ) -> None:
        assert slots_after(expression, after, len(expected)) == expected


class TestTheLastAndTheNthWeekdayOfTheMonth:
    @pytest.mark.parametrize(
        ("expression", "after", "expected"),
        [
            pytest.param(
                "0 0 * * 5L",
                "2026-01-01T00:00Z",
                ["2026-01-30T00:00Z", "2026-02-27T00:00Z"],
                id="5l-is-the-last-friday",
            ),
            pytest.param(
                "0 0 * * FRIL",
                "2026-01-01T00:00Z",
                ["2026-01-30T00:00Z", "2026-02-27T00:00Z"],
                id="a-name-before-l",
            ),
            pytest.param(
                "0 0 * * L5",
                "2026-01-01T00:00Z",
                ["2026-01-30T00:00Z", "2026-02-27T00:00Z"],
                id="croniters-own-spelling-l5",
            ),
            pytest.param(
                "0 0 * * 7L",
                "2026-01-01T00:00Z",
                ["2026-01-25T00:00Z", "2026-02-22T00:00Z"],
                id="seven-l-is-the-last-sunday",
            ),
            pytest.param(
                "0 0 * * 1L,5L",
                "2026-01-01T00:00Z",
                ["2026-01-26T00:00Z", "2026-01-30T00:00Z", "2026-02-23T00:00Z"],
                id="a-list-of-last-weekdays",
            ),
            pytest.param(
                "0 0 * * 1#2",
                "2026-01-01T00:00Z",
                ["2026-01-12T00:00Z", "2026-02-09T00:00Z"],
                id="1#2-is-the-second-monday",
            ),
            pytest.param(
                "0 0 * * MON#2",
                "2026-01-01T00:00Z",
                ["2026-01-12T00:00Z", "2026-02-09T00:00Z"],
                id="a-name-before-the-hash",
            ),
            pytest.param(
                "0 0 * * 0#5",
                "2026-01-01T00:00Z",
                ["2026-03-29T00:00Z", "2026-05-31T00:00Z", "2026-08-30T00:00Z"],
                id="a-fifth-sunday-skips-the-months-without-one",
            ),
            pytest.param(
                "0 0 * * 1#2,3#4",
                "2026-01-01T00:00Z",
                ["2026-01-12T00:00Z", "2026-01-28T00:00Z", "2026-02-09T00:00Z"],
                id="a-list-of-nth-weekdays",
            ),
            pytest.param(
                "0 0 * * 1-3#1",
                "2026-01-01T00:00Z",
                [
                    "2026-01-05T00:00Z",
                    "2026-01-06T00:00Z",
                    "2026-01-07T00:00Z",
                    "2026-02-02T00:00Z",
                ],
                id="a-range-of-weekdays-each-the-first",
            ),
            pytest.param(
                "0 0 * * SAT-SUN#1",
                "2026-01-01T00:00Z",
                ["2026-01-03T00:00Z", "2026-01-04T00:00Z", "2026-02-01T00:00Z"],
                id="a-range-wrapping-past-saturday",
            ),
            pytest.param(
                "0 0 ? * 1#2",
                "2026-01-01T00:00Z",
                ["2026-01-12T00:00Z"],
                id="with-a-question-mark-for-the-day-of-month",
            ),
        ],
    )
    def test_the_slots_are_on_the_named_weekdays(
        self, expression: str, after: str, expected: list[str]
    ) -> None:
        assert slots_after(expression, after, len(expected)) == expected


class TestRangesStepsAndNames:
    @pytest.mark.parametrize(
        ("expression", "after", "expected"),
        [
            pytest.param(
                "0 0 ? * MON",
                "2026-01-01T00:00Z",
                ["2026-01-05T00:00Z", "2026-01-12T00:00Z"],
                id="a-question-mark-is-any-day",
            ),
            pytest.param(
                "0 0 1 * ?",
                "2026-01-15T00:00Z",
                ["2026-02-01T00:00Z", "2026-03-01T00:00Z"],
                id="a-question-mark-is-any-weekday",
            ),
            pytest.param(
                "0 0 * * FRI-MON",
                "2026-01-06T00:00Z",
                [
                    "2026-01-09T00:00Z",
                    "2026-01-10T00:00Z",
                    "2026-01-11T00:00Z",
                    "2026-01-12T00:00Z",
                    "2026-01-16T00:00Z",
                ],
                id="weekdays-wrapping-past-saturday",
            ),
            pytest.param(
                "0 0 1 NOV-FEB *",
                "2026-03-01T00:00Z",
                [
                    "2026-11-01T00:00Z",
                    "2026-12-01T00:00Z",
                    "2027-01-01T00:00Z",
                    "2027-02-01T00:00Z",
                    "2027-11-01T00:00Z",
                ],
                id="months-wrapping-past-december",
            ),
            pytest.param(
                "0 22-1 * * *",
                "2026-01-01T12:00Z",
                [
                    "2026-01-01T22:00Z",
                    "2026-01-01T23:00Z",
                    "2026-01-02T00:00Z",
                    "2026-01-02T01:00Z",
                    "2026-01-02T22:00Z",
                ],
                id="hours-wrapping-past-midnight",
            ),
            pytest.param(
                "50-10/20 * * * *",
                "2026-01-01T00:00Z",
                ["2026-01-01T00:10Z", "2026-01-01T00:50Z", "2026-01-01T01:10Z"],
                id="a-stepped-wrap-keeps-the-value-after-the-wrap",
            ),
            pytest.param(
                "0 23-5/3 * * *",
                "2026-01-01T12:00Z",
                ["2026-01-01T23:00Z", "2026-01-02T02:00Z", "2026-01-02T05:00Z"],
                id="a-stepped-wrap-keeps-its-phase",
            ),
            pytest.param(
                "0 0 1 NOV-FEB/2 *",
                "2026-03-01T00:00Z",
                ["2026-11-01T00:00Z", "2027-01-01T00:00Z", "2027-11-01T00:00Z"],
                id="a-stepped-wrap-of-months",
            ),
            pytest.param(
                "0 0 * * 1-7/2",
                "2026-01-05T12:00Z",
                [
                    "2026-01-07T00:00Z",
                    "2026-01-09T00:00Z",
                    "2026-01-11T00:00Z",
                    "2026-01-12T00:00Z",
                ],
                id="a-weekday-step-through-seven-reaches-sunday",
            ),
            pytest.param(
                "0 0 * * MON-FRI/2",
                "2026-01-05T12:00Z",
                ["2026-01-07T00:00Z", "2026-01-09T00:00Z", "2026-01-12T00:00Z"],
                id="a-step-over-named-weekdays",
            ),
            pytest.param(
                "10/20 * * * *",
                "2026-01-01T00:00Z",
                [
                    "2026-01-01T00:10Z",
                    "2026-01-01T00:30Z",
                    "2026-01-01T00:50Z",
                    "2026-01-01T01:10Z",
                ],
                id="a-start-with-a-step",
            ),
            pytest.param(
                "0 5-5 * * *",
                "2026-01-01T00:00Z",
                ["2026-01-01T05:00Z", "2026-01-02T05:00Z"],
                id="a-range-with-equal-ends-is-that-one-hour-not-every-hour",
            ),
            pytest.param(
                "0 0 * * SUN-SUN",
                "2026-01-01T00:00Z",
                ["2026-01-04T00:00Z", "2026-01-11T00:00Z"],
                id="an-equal-range-of-weekdays-is-that-weekday",
            ),
            pytest.param(
                "0 0 * * 7-7",
                "2026-01-01T00:00Z",
                ["2026-01-04T00:00Z", "2026-01-11T00:00Z"],
                id="seven-to-seven-is-sunday",
            ),
            pytest.param(
                "0 0 * * 0-7",
                "2026-01-01T00:00Z",
                ["2026-01-02T00:00Z", "2026-01-03T00:00Z"],
                id="zero-to-seven-is-the-whole-week",
            ),
        ],
    )
    def test_the_slots_are_the_named_ones(
        self, expression: str, after: str, expected: list[str]
    ) -> None:
        assert slots_after(expression, after, len(expected)) == expected


class TestAnExtendedExpressionIsSpelledForCroniter:
    @pytest.mark.parametrize(
        ("expression", "normalized"),
        [
            pytest.param("30 2 L * *", "30 2 L * *", id="l-stays"),
            pytest.param("0 0 * * 5L", "0 0 * * L5", id="a-trailing-l-moves-in-front"),
            pytest.param(
                "0 0 * * fril", "0 0 * * L5", id="a-named-last-weekday-becomes-its-number"
            ),
            pytest.param(
                "0 0 * * MON#2", "0 0 * * 1#2", id="a-named-nth-weekday-becomes-its-number"
            ),
            pytest.param(
                "0 0 * * 5-1#1", "0 0 * * 5#1,6#1,0#1,1#1", id="a-hash-range-becomes-a-list"
            ),
            pytest.param("0 5-5 * * *", "0 5 * * *", id="an-equal-range-becomes-its-value"),
            pytest.param("0 0 31-L * *", "0 0 31 * *", id="31-to-l-becomes-31"),
            pytest.param("50-10/20 * * * *", "50,10 * * * *", id="a-stepped-wrap-becomes-a-list"),
            pytest.param("0 0 * * FRI-MON", "0 0 * * FRI-MON", id="an-unstepped-wrap-stays"),
            pytest.param("0 0 ? * MON", "0 0 ? * MON", id="a-question-mark-stays"),
        ],
    )
    def test_the_normalized_expression(self, expression: str, normalized: str) -> None:
        assert cron.parse(expression, zone=ZoneInfo(UTC_ZONE)).expression == normalized

    @pytest.mark.parametrize(
        ("expression", "period"),
        [
            pytest.param("0 0 L * *", timedelta(days=28), id="the-last-day-february-to-march"),
            pytest.param("0 0 * * 1#2,1#4", timedelta(days=14), id="second-and-fourth-monday"),
            pytest.param("0 0 * * 5L", timedelta(days=28), id="last-friday"),
        ],
    )
    def test_the_shortest_period_caps_the_jitter(self, expression: str, period: timedelta) -> None:
        assert cron.parse(expression, zone=ZoneInfo(UTC_ZONE)).shortest_period == period
