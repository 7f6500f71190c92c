"""Cron expressions: what ``spec.schedule`` accepts, and how it says no."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from punctual.scheduling import cron, dst
from punctual.scheduling.errors import InvalidSpecError

UTC_ZONE = ZoneInfo("UTC")
FIELD = "spec.schedule"


def _next_slots(expression: str, after: datetime, count: int) -> list[datetime]:
    schedule = cron.parse(expression, zone=UTC_ZONE)
    slots = []
    for _ in range(count):
        after = schedule.next_after(after).at
        slots.append(after)
    return slots


class TestAFiveFieldExpressionReadsMinuteHourDayMonthWeekday:
    @pytest.mark.parametrize(
        ("expression", "after", "expected"),
        [
            pytest.param(
                "30 2 * * *",
                datetime(2026, 1, 1, tzinfo=UTC),
                [datetime(2026, 1, 1, 2, 30, tzinfo=UTC), datetime(2026, 1, 2, 2, 30, tzinfo=UTC)],
                id="daily-at-02:30",
            ),
            pytest.param(
                "*/15 * * * *",
                datetime(2026, 1, 1, 0, 7, tzinfo=UTC),
                [datetime(2026, 1, 1, 0, 15, tzinfo=UTC), datetime(2026, 1, 1, 0, 30, tzinfo=UTC)],
                id="every-quarter-hour",
            ),
            pytest.param(
                "0 9 * JAN-MAR MON-FRI",
                datetime(2026, 3, 27, 12, tzinfo=UTC),  # a Friday
                [datetime(2026, 3, 30, 9, tzinfo=UTC), datetime(2026, 3, 31, 9, tzinfo=UTC)],
                id="month-and-day-names",
            ),
            pytest.param(
                "0 9 * jan-mar mon-fri",
                datetime(2026, 3, 31, 12, tzinfo=UTC),
                [datetime(2027, 1, 1, 9, tzinfo=UTC), datetime(2027, 1, 4, 9, tzinfo=UTC)],
                id="lowercase-names-and-the-month-range-ends",
            ),
            pytest.param(
                "0 0 * * 7",
                datetime(2026, 1, 1, tzinfo=UTC),  # a Thursday
                [datetime(2026, 1, 4, tzinfo=UTC), datetime(2026, 1, 11, tzinfo=UTC)],
                id="seven-is-sunday-too",
            ),
            pytest.param(
                "0 0 L * *",
                datetime(2026, 1, 31, 12, tzinfo=UTC),
                [datetime(2026, 2, 28, tzinfo=UTC), datetime(2026, 3, 31, tzinfo=UTC)],
                id="last-day-of-the-month",
            ),
            pytest.param(
                "0 0 29 2 *",
                datetime(2026, 1, 1, tzinfo=UTC),
                [datetime(2028, 2, 29, tzinfo=UTC), datetime(2032, 2, 29, tzinfo=UTC)],
                id="leap-day-only",
            ),
        ],
    )
    def test_the_slots_are_the_ones_the_expression_names(
        self, expression: str, after: datetime, expected: list[datetime]
    ) -> None:
        assert _next_slots(expression, after, len(expected)) == expected


class TestASixFieldExpressionHasLeadingSeconds:
    @pytest.mark.parametrize(
        ("expression", "after", "expected"),
        [
            pytest.param(
                "*/10 * * * * *",
                datetime(2026, 1, 1, 0, 0, 3, tzinfo=UTC),
                [
                    datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC),
                    datetime(2026, 1, 1, 0, 0, 20, tzinfo=UTC),
                ],
                id="every-ten-seconds",
            ),
            pytest.param(
                "15 30 2 * * *",
                datetime(2026, 1, 1, tzinfo=UTC),
                [
                    datetime(2026, 1, 1, 2, 30, 15, tzinfo=UTC),
                    datetime(2026, 1, 2, 2, 30, 15, tzinfo=UTC),
                ],
                id="second-minute-hour",
            ),
        ],
    )
    def test_the_first_field_is_the_second(
        self, expression: str, after: datetime, expected: list[datetime]
    ) -> None:
        assert _next_slots(expression, after, len(expected)) == expected

    def test_a_five_field_expression_fires_on_the_whole_minute(self) -> None:
        after = datetime(2026, 1, 1, 0, 0, 3, tzinfo=UTC)
        assert _next_slots("* * * * *", after, 1) == [datetime(2026, 1, 1, 0, 1, tzinfo=UTC)]


class TestAMacroStandsForItsExpression:
    @pytest.mark.parametrize(
        ("macro", "expression"),
        [
            pytest.param("@yearly", "0 0 1 1 *", id="yearly"),
            pytest.param("@annually", "0 0 1 1 *", id="annually"),
            pytest.param("@monthly", "0 0 1 * *", id="monthly"),
            pytest.param("@weekly", "0 0 * * 0", id="weekly"),
            pytest.param("@daily", "0 0 * * *", id="daily"),
            pytest.param("@midnight", "0 0 * * *", id="midnight"),
            pytest.param("@hourly", "0 * * * *", id="hourly"),
            pytest.param("@DAILY", "0 0 * * *", id="case-insensitive"),
            pytest.param("  @hourly ", "0 * * * *", id="surrounding-blanks"),
        ],
    )
    def test_the_macro_expands(self, macro: str, expression: str) -> None:
        assert cron.parse(macro, zone=UTC_ZONE).expression == expression

    def test_every_documented_macro_is_known(self) -> None:
        documented = {"@hourly", "@daily", "@weekly", "@monthly", "@yearly"}
        assert documented <= set(cron.MACROS)


class TestAnExpressionIsNormalized:
    def test_runs_of_blanks_collapse_to_one_space(self) -> None:
        assert cron.parse(" 30\t2  *  * * ", zone=UTC_ZONE).expression == "30 2 * * *"


class TestTheShortestPeriodIsTheSmallestGapBetweenSlots:
    @pytest.mark.parametrize(
        ("expression", "period"),
        [
            pytest.param("*/10 * * * * *", timedelta(seconds=10), id="every-ten-seconds"),
            pytest.param("* * * * *", timedelta(minutes=1), id="every-minute"),
            pytest.param("0,10 * * * *", timedelta(minutes=10), id="uneven-minutes"),
            pytest.param("@hourly", timedelta(hours=1), id="hourly"),
            pytest.param("30 2 * * *", timedelta(days=1), id="daily"),
            pytest.param("0 9 * * MON-FRI", timedelta(days=1), id="weekdays"),
            pytest.param("@weekly", timedelta(days=7), id="weekly"),
            pytest.param("@monthly", timedelta(days=28), id="monthly-february"),
            pytest.param("@yearly", timedelta(days=365), id="yearly"),
        ],
    )
    def test_it_is_measured_on_local_wall_time(self, expression: str, period: timedelta) -> None:
        assert cron.parse(expression, zone=UTC_ZONE).shortest_period == period


class TestWhatIsKeptPerExpressionIsBounded:
    def test_more_expressions_than_the_bound_keep_the_caches_at_it(self) -> None:
        # Tenants choose the cron texts: distinct ones must not grow memory without end.
        after = datetime(2026, 1, 1, tzinfo=UTC)
        expressions = [
            f"{minute} {hour} {day} * *"
            for minute in range(60)
            for hour in range(24)
            for day in range(1, 4)
        ]
        assert len(expressions) > cron.CACHED_EXPRESSIONS
        for expression in expressions:
            cron.parse(expression, zone=UTC_ZONE).next_after(after)

        assert cron._iterator.cache_info().currsize <= cron.CACHED_EXPRESSIONS
        assert cron._shortest_period.cache_info().currsize <= cron.CACHED_EXPRESSIONS


class TestAFixedHourFollowsTheDstRulesAWildcardHourFollowsRealTime:
    RULES = dst.DstRules(nonexistent=dst.Nonexistent.SKIP, ambiguous=dst.Ambiguous.SECOND)

    @pytest.mark.parametrize(
        "expression",
        [
            pytest.param("30 2 * * *", id="one-hour"),
            pytest.param("0 1,2 * * *", id="a-list-of-hours"),
            pytest.param("0 1-3 * * *", id="a-range-of-hours"),
            pytest.param("0 30 2 * * *", id="one-hour-with-seconds"),
            pytest.param("@daily", id="daily-macro"),
        ],
    )
    def test_a_fixed_hour_keeps_the_spec_rules(self, expression: str) -> None:
        assert cron.parse(expression, zone=UTC_ZONE, rules=self.RULES).rules == self.RULES

    @pytest.mark.parametrize(
        "expression",
        [
            pytest.param("*/30 * * * *", id="any-hour"),
            pytest.param("0 */2 * * *", id="a-step-over-all-hours"),
            pytest.param("0 0-23 * * *", id="the-full-range"),
            pytest.param("0 0-23/3 * * *", id="a-step-over-the-full-range"),
            pytest.param("0 * * * * *", id="any-hour-with-seconds"),
            pytest.param("@hourly", id="hourly-macro"),
        ],
    )
    def test_a_wildcard_hour_uses_real_time(self, expression: str) -> None:
        assert cron.parse(expression, zone=UTC_ZONE, rules=self.RULES).rules == dst.REAL_TIME


def _parse_error(expression: str, field: str = FIELD) -> InvalidSpecError:
    with pytest.raises(InvalidSpecError) as caught:
        cron.parse(expression, zone=UTC_ZONE, field=field)
    return caught.value


class TestAMalformedExpressionIsRejectedNamingTheCronField:
    @pytest.mark.parametrize(
        ("expression", "problem"),
        [
            pytest.param("", "has 0 fields", id="empty"),
            pytest.param("* * * *", "has 4 fields", id="four-fields"),
            pytest.param("0 0 * * * * 2026", "has 7 fields", id="seven-fields-with-a-year"),
            pytest.param("61 * * * *", "minute field '61'", id="minute-61"),
            pytest.param("* 24 * * *", "hour field '24'", id="hour-24"),
            pytest.param("* * 0 * *", "day-of-month field '0'", id="day-of-month-0"),
            pytest.param("* * 32 * *", "day-of-month field '32'", id="day-of-month-32"),
            pytest.param("* * * 13 *", "month field '13'", id="month-13"),
            pytest.param("* * * * 8", "day-of-week field '8'", id="day-of-week-8"),
            pytest.param("60 * * * * *", "second field '60'", id="second-60"),
            pytest.param("0 61 * * * *", "minute field '61'", id="minute-61-after-seconds"),
            pytest.param("* * * FOO *", "month field 'FOO'", id="unknown-month-name"),
            pytest.param("* * * * SUNDAY", "day-of-week field 'SUNDAY'", id="long-day-name"),
            pytest.param("abc * * * *", "minute field 'abc'", id="letters"),
            pytest.param("1-2-3 * * * *", "minute field '1-2-3'", id="a-broken-range"),
        ],
    )
    def test_the_error_names_the_field_and_what_is_wrong(
        self, expression: str, problem: str
    ) -> None:
        error = _parse_error(expression)
        assert error.field == FIELD
        assert problem in error.problem

    @pytest.mark.parametrize(
        ("expression", "expected_range"),
        [
            pytest.param("61 * * * *", "0-59", id="minute"),
            pytest.param("* 24 * * *", "0-23", id="hour"),
            pytest.param("* * 32 * *", "1-31", id="day-of-month"),
            pytest.param("* * * 13 *", "1-12", id="month"),
            pytest.param("* * * * 8", "0-7", id="day-of-week"),
        ],
    )
    def test_the_error_says_which_values_the_field_takes(
        self, expression: str, expected_range: str
    ) -> None:
        assert f"expected {expected_range}" in _parse_error(expression).problem

    def test_the_wrong_field_count_explains_the_two_shapes(self) -> None:
        problem = _parse_error("* * * *").problem
        assert "expected 5" in problem
        assert "6 with leading seconds" in problem

    def test_the_error_names_whichever_spec_field_it_was_given(self) -> None:
        assert str(_parse_error("61 * * * *", field="schedule")).startswith("schedule: ")


class TestRandomValuesAreRejectedAndHashedOnesNeedAJob:
    @pytest.mark.parametrize(
        ("expression", "cron_field"),
        [
            pytest.param("R * * * *", "minute field 'R'", id="random-minute"),
            pytest.param("0 0 * * R", "day-of-week field 'R'", id="random-weekday"),
        ],
    )
    def test_every_replica_must_compute_the_same_slots(
        self, expression: str, cron_field: str
    ) -> None:
        error = _parse_error(expression)
        assert cron_field in error.problem
        assert "not supported" in error.problem
        assert "spec.jitter" in error.problem

    @pytest.mark.parametrize(
        ("expression", "cron_field"),
        [
            pytest.param("H * * * *", "minute field 'H'", id="hashed-minute"),
            pytest.param("0 H * * *", "hour field 'H'", id="hashed-hour"),
            pytest.param("0 H(0-3) * * *", "hour field 'H(0-3)'", id="hashed-range"),
            pytest.param("H/15 * * * *", "minute field 'H/15'", id="hashed-step"),
            pytest.param("h * * * *", "minute field 'h'", id="lowercase-hash"),
            pytest.param("H * * * * *", "second field 'H'", id="hashed-second"),
        ],
    )
    def test_a_hashed_value_without_a_job_is_refused_naming_the_field(
        self, expression: str, cron_field: str
    ) -> None:
        error = _parse_error(expression)
        assert cron_field in error.problem
        assert "no job is named" in error.problem

    @pytest.mark.parametrize(
        "expression",
        [
            pytest.param("0 0 * MAR,APR *", id="months-with-an-R"),
            pytest.param("0 0 * * THU", id="thursday-with-an-H"),
            pytest.param("0 0 * * FRI", id="friday-with-an-R"),
        ],
    )
    def test_names_that_contain_an_h_or_an_r_are_not_mistaken_for_them(
        self, expression: str
    ) -> None:
        assert cron.parse(expression, zone=UTC_ZONE).expression == expression


class TestAnUnknownMacroIsRejected:
    @pytest.mark.parametrize(
        "macro",
        [
            pytest.param("@reboot", id="reboot-has-no-slots"),
            pytest.param("@every 5m", id="go-cron-every-is-spec-every"),
            pytest.param("@fortnightly", id="made-up"),
        ],
    )
    def test_the_error_lists_the_known_ones(self, macro: str) -> None:
        error = _parse_error(macro)
        assert f"unknown macro {macro!r}" in error.problem
        assert "@daily" in error.problem
        assert "@hourly" in error.problem


class TestAnExpressionThatNeverFiresIsRejected:
    @pytest.mark.parametrize(
        "expression",
        [
            pytest.param("0 0 30 2 *", id="february-30"),
            pytest.param("0 0 31 4,6,9,11 *", id="the-31st-of-30-day-months"),
            pytest.param("0 0 0 30 2 *", id="february-30-with-seconds"),
        ],
    )
    def test_the_error_says_it_never_fires(self, expression: str) -> None:
        error = _parse_error(expression)
        assert error.field == FIELD
        assert error.problem == f"{expression!r} never fires"

    def test_a_rare_but_real_date_is_accepted(self) -> None:
        assert cron.parse("0 0 29 2 *", zone=UTC_ZONE).shortest_period == timedelta(
            days=4 * 365 + 1
        )


class TestAFullMonthOrWeekdayNameIsRejectedAsOne:
    @pytest.mark.parametrize(
        ("expression", "message"),
        [
            pytest.param(
                "0 9 * * thursday",
                "day-of-week field 'thursday': 'thursday' is a full name, which cron does not "
                "take: write its first three letters (THU)",
                id="a-weekday",
            ),
            pytest.param(
                "0 9 1 march *",
                "month field 'march': 'march' is a full name, which cron does not take: write "
                "its first three letters (MAR)",
                id="a-month",
            ),
            pytest.param(
                "0 9 * * MON-Friday",
                "day-of-week field 'MON-Friday': 'Friday' is a full name",
                id="one-end-of-a-range",
            ),
        ],
    )
    def test_the_error_says_it_is_a_full_name(self, expression: str, message: str) -> None:
        error = _parse_error(expression)
        assert message in error.problem
        assert "hashed" not in error.problem

    def test_may_is_its_own_abbreviation(self) -> None:
        assert cron.parse("0 9 1 may *", zone=ZoneInfo("UTC")).expression == "0 9 1 may *"
