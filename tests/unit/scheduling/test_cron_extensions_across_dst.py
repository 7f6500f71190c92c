"""Cron extensions across DST changes: the rules apply to them exactly as to plain expressions.

Slots are written ``"YYYY-MM-DDTHH:MMZ"`` (UTC), followed by the occurrence's adjustment when it
has one, e.g. ``"2026-03-29T01:00Z ShiftedForward"``.

Europe/Copenhagen changes on the last Sunday of March (02:00 → 03:00 CEST, 01:00Z) and of
October (03:00 CEST → 02:00 CET, 01:00Z): 2026-03-29, 2026-10-25, 2027-03-28, 2027-10-31,
2030-03-31. Asia/Jerusalem springs forward on a Friday (2026-03-27, 2027-03-26: 02:00 → 03:00
IDT, 00:00Z), the only kind of day a ``W`` slot can fall on.
"""

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
import slot_tables

from punctual.scheduling import cron, dst

SHIFT = dst.Nonexistent.SHIFT_FORWARD
SKIP = dst.Nonexistent.SKIP
FIRST = dst.Ambiguous.FIRST
SECOND = dst.Ambiguous.SECOND
BOTH = dst.Ambiguous.BOTH
COPENHAGEN = "Europe/Copenhagen"
JERUSALEM = "Asia/Jerusalem"


def slots_after(
    expression: str,
    after: str,
    count: int,
    *,
    zone: str,
    rules: dst.DstRules = dst.DstRules(),
) -> list[str]:
    return slot_tables.slots_after(
        expression, datetime.fromisoformat(after), count, zone=zone, rules=rules
    )


class TestTheDstRulesApplyToExtensionsAsToPlainExpressions:
    """The day fields pick local days; the hour field alone decides fixed-hour or real time."""

    @pytest.mark.parametrize(
        ("expression", "zone", "after", "rules", "expected"),
        [
            pytest.param(
                "30 2 L * *",
                COPENHAGEN,
                "2026-10-01T00:00Z",
                dst.DstRules(SHIFT, BOTH),
                ["2026-10-31T01:30Z", "2026-11-30T01:30Z"],
                id="october-2026-the-31st-is-six-days-after-the-change-nothing-adjusts",
            ),
            pytest.param(
                "30 2 L * *",
                COPENHAGEN,
                "2027-03-01T00:00Z",
                dst.DstRules(SKIP, FIRST),
                ["2027-03-31T00:30Z", "2027-04-30T00:30Z"],
                id="march-2027-the-31st-is-three-days-after-the-change-nothing-adjusts",
            ),
            pytest.param(
                "30 2 L * *",
                COPENHAGEN,
                "2027-10-30T00:00Z",
                dst.DstRules(SHIFT, FIRST),
                ["2027-10-31T00:30Z FirstOfRepeated", "2027-11-30T01:30Z"],
                id="october-2027-the-last-day-is-the-change-first-runs-once-in-cest",
            ),
            pytest.param(
                "30 2 L * *",
                COPENHAGEN,
                "2027-10-30T00:00Z",
                dst.DstRules(SHIFT, SECOND),
                ["2027-10-31T01:30Z SecondOfRepeated", "2027-11-30T01:30Z"],
                id="october-2027-second-runs-once-in-cet",
            ),
            pytest.param(
                "30 2 L * *",
                COPENHAGEN,
                "2027-10-30T00:00Z",
                dst.DstRules(SHIFT, BOTH),
                [
                    "2027-10-31T00:30Z FirstOfRepeated",
                    "2027-10-31T01:30Z SecondOfRepeated",
                    "2027-11-30T01:30Z",
                ],
                id="october-2027-both-runs-twice",
            ),
            pytest.param(
                "30 2 L * *",
                COPENHAGEN,
                "2030-03-30T00:00Z",
                dst.DstRules(SHIFT, FIRST),
                ["2030-03-31T01:00Z ShiftedForward", "2030-04-30T00:30Z"],
                id="march-2030-the-last-day-is-the-change-shift-forward-runs-at-03:00",
            ),
            pytest.param(
                "30 2 L * *",
                COPENHAGEN,
                "2030-03-30T00:00Z",
                dst.DstRules(SKIP, FIRST),
                ["2030-04-30T00:30Z"],
                id="march-2030-skip-drops-that-month",
            ),
            pytest.param(
                "0 2 * * 0#5",
                COPENHAGEN,
                "2026-03-01T00:00Z",
                dst.DstRules(SHIFT, FIRST),
                ["2026-03-29T01:00Z ShiftedForward", "2026-05-31T00:00Z"],
                id="the-fifth-sunday-of-march-2026-is-the-change-shift-forward",
            ),
            pytest.param(
                "0 2 * * 0#5",
                COPENHAGEN,
                "2026-03-01T00:00Z",
                dst.DstRules(SKIP, FIRST),
                ["2026-05-31T00:00Z", "2026-08-30T00:00Z"],
                id="the-fifth-sunday-of-march-2026-skipped",
            ),
            pytest.param(
                "0 2 * * 0#5",
                COPENHAGEN,
                "2027-10-01T00:00Z",
                dst.DstRules(SHIFT, SECOND),
                ["2027-10-31T01:00Z SecondOfRepeated", "2028-01-30T01:00Z"],
                id="the-fifth-sunday-of-october-2027-is-the-change-second",
            ),
            pytest.param(
                "0 2 * * 0#4",
                COPENHAGEN,
                "2026-10-01T00:00Z",
                dst.DstRules(SHIFT, BOTH),
                [
                    "2026-10-25T00:00Z FirstOfRepeated",
                    "2026-10-25T01:00Z SecondOfRepeated",
                    "2026-11-22T01:00Z",
                ],
                id="the-fourth-sunday-of-october-2026-both",
            ),
            pytest.param(
                "30 2 * * SUNL",
                COPENHAGEN,
                "2026-10-01T00:00Z",
                dst.DstRules(SHIFT, FIRST),
                ["2026-10-25T00:30Z FirstOfRepeated", "2026-11-29T01:30Z"],
                id="the-last-sunday-is-always-a-change-day-first",
            ),
            pytest.param(
                "30 2 * * 7L",
                COPENHAGEN,
                "2027-03-01T00:00Z",
                dst.DstRules(SHIFT, FIRST),
                ["2027-03-28T01:00Z ShiftedForward", "2027-04-25T00:30Z"],
                id="the-last-sunday-of-march-2027-shift-forward",
            ),
            pytest.param(
                "30 2 * * 7L",
                COPENHAGEN,
                "2027-03-01T00:00Z",
                dst.DstRules(SKIP, FIRST),
                ["2027-04-25T00:30Z"],
                id="the-last-sunday-of-march-2027-skipped",
            ),
            pytest.param(
                "0,30 2 ? * SUN#5",
                COPENHAGEN,
                "2026-03-28T00:00Z",
                dst.DstRules(SHIFT, FIRST),
                ["2026-03-29T01:00Z ShiftedForward", "2026-05-31T00:00Z"],
                id="two-slots-in-the-gap-coalesce-as-in-plain-expressions",
            ),
            pytest.param(
                "0 30 2 * * 7L",
                COPENHAGEN,
                "2026-10-24T00:00Z",
                dst.DstRules(SHIFT, BOTH),
                ["2026-10-25T00:30Z FirstOfRepeated", "2026-10-25T01:30Z SecondOfRepeated"],
                id="six-fields-with-seconds-the-same",
            ),
            pytest.param(
                "30 2 27W 3 *",
                JERUSALEM,
                "2026-01-01T00:00Z",
                dst.DstRules(SHIFT, FIRST),
                [
                    "2026-03-27T00:00Z ShiftedForward",
                    "2027-03-26T00:00Z ShiftedForward",
                    "2028-03-26T23:30Z",
                ],
                id="a-nearest-weekday-on-a-friday-change-shift-forward",
            ),
            pytest.param(
                "30 2 27W 3 *",
                JERUSALEM,
                "2026-01-01T00:00Z",
                dst.DstRules(SKIP, FIRST),
                ["2028-03-26T23:30Z"],
                id="a-nearest-weekday-on-a-friday-change-skipped",
            ),
            pytest.param(
                "30 2 25W 10 *",
                COPENHAGEN,
                "2026-10-01T00:00Z",
                dst.DstRules(SHIFT, BOTH),
                ["2026-10-26T01:30Z"],
                id="the-weekday-nearest-a-sunday-change-is-the-monday-after",
            ),
        ],
    )
    def test_a_fixed_hour_follows_the_spec_rules(
        self, expression: str, zone: str, after: str, rules: dst.DstRules, expected: list[str]
    ) -> None:
        assert slots_after(expression, after, len(expected), zone=zone, rules=rules) == expected

    @pytest.mark.parametrize(
        ("expression", "after", "expected"),
        [
            pytest.param(
                "*/30 * * * 0L",
                "2026-10-24T23:00Z",
                [
                    "2026-10-24T23:30Z",
                    "2026-10-25T00:00Z FirstOfRepeated",
                    "2026-10-25T00:30Z FirstOfRepeated",
                    "2026-10-25T01:00Z SecondOfRepeated",
                    "2026-10-25T01:30Z SecondOfRepeated",
                    "2026-10-25T02:00Z",
                ],
                id="the-repeated-hour-of-the-last-sunday-runs-twice",
            ),
            pytest.param(
                "30 * * * 0L",
                "2027-03-28T00:00Z",
                ["2027-03-28T00:30Z", "2027-03-28T01:30Z"],
                id="the-missing-hour-of-the-last-sunday-never-runs",
            ),
            pytest.param(
                "30 * L * *",
                "2027-10-31T00:00Z",
                [
                    "2027-10-31T00:30Z FirstOfRepeated",
                    "2027-10-31T01:30Z SecondOfRepeated",
                    "2027-10-31T02:30Z",
                ],
                id="the-last-day-of-october-2027-repeats-02:30",
            ),
        ],
    )
    def test_a_wildcard_hour_follows_real_time_whatever_the_spec_rules(
        self, expression: str, after: str, expected: list[str]
    ) -> None:
        for rules in (dst.DstRules(SHIFT, FIRST), dst.DstRules(SKIP, SECOND)):
            got = slots_after(expression, after, len(expected), zone=COPENHAGEN, rules=rules)
            assert got == expected

    @pytest.mark.parametrize(
        ("expression", "wildcard_hour"),
        [
            pytest.param("30 2 L * *", False, id="last-day-at-02:30"),
            pytest.param("0 2 * * 0#5", False, id="fifth-sunday-at-02:00"),
            pytest.param("0 22-2 * * 5L", False, id="a-wrapping-range-of-hours"),
            pytest.param("0 5-5 * * *", False, id="an-equal-range-of-hours"),
            pytest.param("*/30 * * * 0L", True, id="every-half-hour-on-the-last-sunday"),
            pytest.param("0 */2 15W * *", True, id="every-other-hour-on-the-nearest-weekday"),
        ],
    )
    def test_the_hour_field_alone_decides_which_rules(
        self, expression: str, wildcard_hour: bool
    ) -> None:
        rules = dst.DstRules(SKIP, SECOND)
        schedule = cron.parse(expression, zone=ZoneInfo(COPENHAGEN), rules=rules)
        assert schedule.rules == (dst.REAL_TIME if wildcard_hour else rules)
