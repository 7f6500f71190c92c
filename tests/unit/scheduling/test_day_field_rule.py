"""How the two day fields of ``spec.schedule`` combine (``cron_fields.day_fields``).

The rule, as CronJob's cron library (robfig/cron v3) reads it: when either day field is
unrestricted (an item of its list is ``*``, ``?`` or ``*/1``), the other alone decides; otherwise
a day matches when either does. A full range (``1-31``, ``0-6``) and a step of more than one
(``*/2``) restrict. Each row is the next slots of ``0 0 <day-of-month> * <day-of-week>`` after
the first instant of 2026 (a Thursday), in UTC, written ``MM-DD`` (midnight, 2026). The same
rows, from CronJob's own library, pass in the convert differential (``tests/unit/api``).
"""

from datetime import datetime

import pytest
import slot_tables

from punctual.scheduling import cron_fields

NEW_YEAR = datetime.fromisoformat("2026-01-01T00:00Z")
MONDAYS = ["01-05", "01-12", "01-19", "01-26", "02-02", "02-09"]
FIRSTS = ["02-01", "03-01", "04-01", "05-01", "06-01", "07-01"]
EVERY_DAY = ["01-02", "01-03", "01-04", "01-05", "01-06", "01-07"]


def days_after_new_year(day_of_month: str, day_of_week: str) -> list[str]:
    slots = slot_tables.slots_after(
        f"0 0 {day_of_month} * {day_of_week}", NEW_YEAR, 6, zone="UTC", implied_year=2026
    )
    return [slot.removesuffix("T00:00Z") for slot in slots]


class TestAnUnrestrictedDayFieldLeavesTheDayToTheOther:
    @pytest.mark.parametrize(
        ("day_of_month", "day_of_week", "expected"),
        [
            pytest.param("*", "1", MONDAYS, id="a-star"),
            pytest.param("?", "1", MONDAYS, id="a-question-mark"),
            pytest.param("*/1", "1", MONDAYS, id="a-step-of-one"),
            pytest.param("*,15", "1", MONDAYS, id="a-list-starting-with-a-star"),
            pytest.param("15,*", "1", MONDAYS, id="a-list-ending-with-a-star"),
            pytest.param("1", "*", FIRSTS, id="a-star-weekday"),
            pytest.param("1", "?", FIRSTS, id="a-question-mark-weekday"),
            pytest.param("1", "*/1", FIRSTS, id="a-step-of-one-weekday"),
            pytest.param("1", "1,*", FIRSTS, id="a-weekday-list-with-a-star"),
            pytest.param("*/1", "*/1", EVERY_DAY, id="both-unrestricted"),
        ],
    )
    def test_the_other_field_alone_decides(
        self, day_of_month: str, day_of_week: str, expected: list[str]
    ) -> None:
        assert days_after_new_year(day_of_month, day_of_week) == expected


class TestTwoRestrictedDayFieldsMatchEitherDay:
    @pytest.mark.parametrize(
        ("day_of_month", "day_of_week", "expected"),
        [
            pytest.param(
                "15", "1", ["01-05", "01-12", "01-15", "01-19", "01-26", "02-02"], id="plain"
            ),
            pytest.param(
                "*/2",
                "1",
                ["01-03", "01-05", "01-07", "01-09", "01-11", "01-12"],
                id="a-step-of-two-restricts",
            ),
            pytest.param(
                "1-31/2",
                "1",
                ["01-03", "01-05", "01-07", "01-09", "01-11", "01-12"],
                id="the-same-step-on-a-range",
            ),
            pytest.param(
                "1",
                "*/2",
                ["01-03", "01-04", "01-06", "01-08", "01-10", "01-11"],
                id="a-weekday-step-of-two-restricts",
            ),
            pytest.param("1-31", "1", EVERY_DAY, id="a-full-day-of-month-range-restricts"),
            pytest.param("1", "0-6", EVERY_DAY, id="a-full-weekday-range-restricts"),
            pytest.param("1-31", "*/2", EVERY_DAY, id="a-full-range-beside-a-starred-step"),
            pytest.param("*/2", "0-6", EVERY_DAY, id="a-starred-step-beside-a-full-range"),
        ],
    )
    def test_a_day_matching_either_field_runs(
        self, day_of_month: str, day_of_week: str, expected: list[str]
    ) -> None:
        assert days_after_new_year(day_of_month, day_of_week) == expected


class TestWhatCroniterIsGiven:
    @pytest.mark.parametrize(
        ("day_of_month", "day_of_week", "given"),
        [
            pytest.param("*/1", "1", ("*", "1"), id="an-unrestricted-field-becomes-a-star"),
            pytest.param("?", "1", ("?", "1"), id="a-question-mark-stays"),
            pytest.param("1", "5,*", ("1", "*"), id="a-list-with-a-star-becomes-a-star"),
            pytest.param("*/2", "1", ("1-31/2", "1"), id="a-restricted-step-becomes-a-range"),
            pytest.param("1-31", "*/3", ("1-31", "0-6/3"), id="no-star-left-beside-a-full-range"),
        ],
    )
    def test_no_text_croniter_would_read_otherwise(
        self, day_of_month: str, day_of_week: str, given: tuple[str, str]
    ) -> None:
        assert cron_fields.day_fields(day_of_month, day_of_week) == given
