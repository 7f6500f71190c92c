"""What ``spec.schedule`` refuses among the cron extensions, and how it says so."""

from zoneinfo import ZoneInfo

import pytest

from punctual.scheduling import cron
from punctual.scheduling.errors import InvalidSpecError

FIELD = "spec.schedule"


def _parse_error(expression: str) -> InvalidSpecError:
    with pytest.raises(InvalidSpecError) as caught:
        cron.parse(expression, zone=ZoneInfo("UTC"))
    assert caught.value.field == FIELD
    return caught.value


class TestWhatIsNotSupportedIsRefusedSayingSo:
    @pytest.mark.parametrize(
        ("expression", "problem"),
        [
            pytest.param(
                "0 0 L-3 * *",
                "day-of-month field 'L-3': offsets from the last day (L-3) are not supported",
                id="an-offset-from-the-last-day",
            ),
            pytest.param(
                "0 0 LW * *",
                "day-of-month field 'LW': LW is not supported; 31W",
                id="the-last-weekday-spelled-lw",
            ),
            pytest.param(
                "0 0 L/2 * *",
                "day-of-month field 'L/2': L stands alone (L) or ends a range",
                id="a-step-from-l",
            ),
            pytest.param(
                "0 0 1W,15W * *",
                "day-of-month field '1W,15W': W takes one day (15W), not a list",
                id="a-list-of-nearest-weekdays",
            ),
            pytest.param(
                "0 0 1-15W * *",
                "day-of-month field '1-15W': W takes one day (15W), not a range",
                id="a-range-of-nearest-weekdays",
            ),
            pytest.param(
                "0 0 W * *", "day-of-month field 'W': W needs a day before it", id="w-without-a-day"
            ),
            pytest.param(
                "0 0 * * L",
                "day-of-week field 'L': L in day-of-week needs one weekday before it",
                id="l-alone-as-a-weekday",
            ),
            pytest.param(
                "0 0 * * 1-5L",
                "day-of-week field '1-5L': L takes one weekday",
                id="l-after-a-range-of-weekdays",
            ),
            pytest.param(
                "0 0 * * 1#6",
                "day-of-week field '1#6': the nth weekday after # must be 1-5, not 6",
                id="a-sixth-monday",
            ),
            pytest.param(
                "0 0 * * 1#0", "the nth weekday after # must be 1-5, not 0", id="a-zeroth-monday"
            ),
            pytest.param(
                "0 0 * * 8#1",
                "day-of-week field '8#1': '8' is not a weekday",
                id="an-nth-of-no-weekday",
            ),
            pytest.param(
                "0 0 * * MON#2/2",
                "day-of-week field 'MON#2/2': # takes a weekday or a range",
                id="a-step-after-the-hash",
            ),
            pytest.param(
                "0 0 * * 1#2,5",
                "day-of-week field '1#2,5': a list mixing plain weekdays with # or L ones",
                id="an-nth-and-a-plain-weekday",
            ),
            pytest.param(
                "0 0 * * 5L,MON",
                "a list mixing plain weekdays with # or L ones",
                id="a-last-and-a-plain-weekday",
            ),
            pytest.param(
                "0 L * * *",
                "hour field 'L': L (last) is only supported in day-of-month",
                id="l-as-an-hour",
            ),
            pytest.param(
                "0 0 * L *",
                "month field 'L': L (last) is only supported in day-of-month",
                id="l-as-a-month",
            ),
            pytest.param(
                "0 0 * * 15W",
                "day-of-week field '15W': W (nearest weekday) is only supported in day-of-month",
                id="w-as-a-weekday",
            ),
            pytest.param(
                "0 0 1#2 * *",
                "day-of-month field '1#2': # (nth weekday) is only supported in day-of-week",
                id="a-hash-as-a-day-of-month",
            ),
            pytest.param(
                "? 0 * * *",
                "minute field '?': '?' (no specific value) is only supported as the whole day-of",
                id="a-question-mark-as-a-minute",
            ),
            pytest.param(
                "0 0 ?,1 * *", "day-of-month field '?,1': '?'", id="a-question-mark-in-a-list"
            ),
            pytest.param(
                "0 0 1 * 1#2",
                "day-of-month '1' with day-of-week '1#2' is not supported: W, # and a weekday's L"
                " need * or ? in the other day field",
                id="a-day-of-month-beside-an-nth-weekday",
            ),
            pytest.param(
                "0 0 L * 5L",
                "day-of-month 'L' with day-of-week '5L' is not supported",
                id="the-last-day-beside-the-last-friday",
            ),
            pytest.param(
                "0 0 15W * MON",
                "day-of-month '15W' with day-of-week 'MON' is not supported",
                id="a-nearest-weekday-beside-a-weekday",
            ),
            pytest.param(
                "0 0 * * * 2026",
                "day-of-week field '2026' is not valid",
                id="six-fields-are-seconds-first-not-a-year-last",
            ),
            pytest.param(
                "0 0 0 * * * 2026",
                "has 7 fields; expected 5 (minute hour day-of-month month day-of-week), or 6 with"
                " leading seconds (a year field is not supported)",
                id="a-year-field",
            ),
            pytest.param(
                "R 2 * * *",
                "minute field 'R': random (R) values are not supported",
                id="a-random-minute",
            ),
            pytest.param(
                "H 2 * * *",
                "minute field 'H': H stands for a value derived from the job's namespace and name,"
                " and no job is named",
                id="a-hashed-minute-without-a-job",
            ),
        ],
    )
    def test_the_error_names_the_field_and_what_is_not_supported(
        self, expression: str, problem: str
    ) -> None:
        assert problem in _parse_error(expression).problem

    @pytest.mark.parametrize(
        ("expression", "expected"),
        [
            pytest.param(
                "0 0 0W * *",
                "expected 1-31, L (last day) or 15W (nearest weekday)",
                id="day-of-month",
            ),
            pytest.param(
                "0 0 * * 9",
                "expected 0-7 or SUN-SAT, 5L (last Friday) or 1#2 (second Monday)",
                id="day-of-week",
            ),
        ],
    )
    def test_an_invalid_day_field_lists_the_extensions_it_takes(
        self, expression: str, expected: str
    ) -> None:
        assert expected in _parse_error(expression).problem
