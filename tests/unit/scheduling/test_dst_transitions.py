"""Cron schedules across the 2026 DST transitions of five zones, under every DST rule.

The transition instants are the tz database's (checked against zoneinfo in the first class):

===================  ================================  ==========================================
zone                 spring forward (a gap)            fall back (repeated local times)
===================  ================================  ==========================================
Europe/London        03-29 01:00Z: 01:00 → 02:00 BST   10-25 01:00Z: 02:00 BST → 01:00 GMT
Europe/Copenhagen    03-29 01:00Z: 02:00 → 03:00 CEST  10-25 01:00Z: 03:00 CEST → 02:00 CET
America/New_York     03-08 07:00Z: 02:00 → 03:00 EDT   11-01 06:00Z: 02:00 EDT → 01:00 EST
Australia/Lord_Howe  10-03 15:30Z: 02:00 → 02:30 +11   04-04 15:00Z: 02:00 +11 → 01:30 +10:30
Asia/Kolkata         none (+05:30 all year)            none
===================  ================================  ==========================================

Slots are written ``"MM-DDTHH:MMZ"`` (2026, UTC), followed by the occurrence's adjustment when
it has one, e.g. ``"03-29T01:00Z ShiftedForward"``.

Fixed-hour schedules obey the DST rules; wildcard-hour schedules follow real elapsed time.
"""

import itertools
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import slot_tables
from croniter import croniter

from punctual.scheduling import cron, dst
from punctual.scheduling.timeline import Adjustment, Occurrence

SHIFT = dst.Nonexistent.SHIFT_FORWARD
SKIP = dst.Nonexistent.SKIP
FIRST = dst.Ambiguous.FIRST
SECOND = dst.Ambiguous.SECOND
BOTH = dst.Ambiguous.BOTH

LONDON = "Europe/London"
COPENHAGEN = "Europe/Copenhagen"
NEW_YORK = "America/New_York"
LORD_HOWE = "Australia/Lord_Howe"
KOLKATA = "Asia/Kolkata"

ALL_RULES = [dst.DstRules(*pair) for pair in itertools.product(dst.Nonexistent, dst.Ambiguous)]


def at(text: str) -> datetime:
    """``"MM-DDTHH:MM[:SS]Z"`` in 2026, as an aware UTC datetime."""
    return datetime.fromisoformat(f"2026-{text}")


def render(occurrence: Occurrence) -> str:
    """An occurrence in the tables' notation (the year when it is not 2026)."""
    return slot_tables.render(occurrence, implied_year=2026)


def slots_after(
    expression: str, zone: str, after: datetime, count: int, rules: dst.DstRules = dst.DstRules()
) -> list[str]:
    """The next ``count`` slots after ``after``, each from the previous one, as the loop does."""
    return slot_tables.slots_after(
        expression, after, count, zone=zone, rules=rules, implied_year=2026
    )


class TestTheTablesRestOnTheRealTzDatabase:
    @pytest.mark.parametrize(
        ("zone", "transition", "minutes_before", "minutes_after"),
        [
            pytest.param(LONDON, "03-29T01:00Z", 0, 60, id="london-spring"),
            pytest.param(LONDON, "10-25T01:00Z", 60, 0, id="london-fall"),
            pytest.param(COPENHAGEN, "03-29T01:00Z", 60, 120, id="copenhagen-spring"),
            pytest.param(COPENHAGEN, "10-25T01:00Z", 120, 60, id="copenhagen-fall"),
            pytest.param(NEW_YORK, "03-08T07:00Z", -300, -240, id="new-york-spring"),
            pytest.param(NEW_YORK, "11-01T06:00Z", -240, -300, id="new-york-fall"),
            pytest.param(LORD_HOWE, "10-03T15:30Z", 630, 660, id="lord-howe-spring"),
            pytest.param(LORD_HOWE, "04-04T15:00Z", 660, 630, id="lord-howe-fall"),
        ],
    )
    def test_the_offset_changes_at_the_listed_instant(
        self, zone: str, transition: str, minutes_before: int, minutes_after: int
    ) -> None:
        tz = ZoneInfo(zone)
        instant = at(transition)
        just_before = (instant - timedelta(seconds=1)).astimezone(tz)
        assert just_before.utcoffset() == timedelta(minutes=minutes_before)
        assert instant.astimezone(tz).utcoffset() == timedelta(minutes=minutes_after)

    def test_kolkata_keeps_one_offset_all_year(self) -> None:
        tz = ZoneInfo(KOLKATA)
        days = (at("01-01T00:00Z") + timedelta(days=d) for d in range(365))
        assert {day.astimezone(tz).utcoffset() for day in days} == {timedelta(hours=5, minutes=30)}


class TestAFixedHourInASpringForwardGap:
    """The local time does not exist: ShiftForward runs at the end of the gap, Skip drops it."""

    @pytest.mark.parametrize(
        ("zone", "expression", "after", "nonexistent", "expected"),
        [
            pytest.param(
                COPENHAGEN, "30 2 * * *", "03-28T00:00Z", SHIFT,
                ["03-28T01:30Z", "03-29T01:00Z ShiftedForward", "03-30T00:30Z"],
                id="copenhagen-02:30-shifts-to-03:00-cest",
            ),
            pytest.param(
                COPENHAGEN, "30 2 * * *", "03-28T00:00Z", SKIP,
                ["03-28T01:30Z", "03-30T00:30Z"],
                id="copenhagen-02:30-skipped",
            ),
            pytest.param(
                LONDON, "30 1 * * *", "03-28T00:00Z", SHIFT,
                ["03-28T01:30Z", "03-29T01:00Z ShiftedForward", "03-30T00:30Z"],
                id="london-01:30-shifts-to-02:00-bst",
            ),
            pytest.param(
                LONDON, "30 1 * * *", "03-28T00:00Z", SKIP,
                ["03-28T01:30Z", "03-30T00:30Z"],
                id="london-01:30-skipped",
            ),
            pytest.param(
                NEW_YORK, "30 2 * * *", "03-07T00:00Z", SHIFT,
                ["03-07T07:30Z", "03-08T07:00Z ShiftedForward", "03-09T06:30Z"],
                id="new-york-02:30-shifts-to-03:00-edt",
            ),
            pytest.param(
                NEW_YORK, "30 2 * * *", "03-07T00:00Z", SKIP,
                ["03-07T07:30Z", "03-09T06:30Z"],
                id="new-york-02:30-skipped",
            ),
            pytest.param(
                LORD_HOWE, "15 2 * * *", "10-02T00:00Z", SHIFT,
                ["10-02T15:45Z", "10-03T15:30Z ShiftedForward", "10-04T15:15Z"],
                id="lord-howe-02:15-shifts-to-02:30-in-a-half-hour-gap",
            ),
            pytest.param(
                LORD_HOWE, "15 2 * * *", "10-02T00:00Z", SKIP,
                ["10-02T15:45Z", "10-04T15:15Z"],
                id="lord-howe-02:15-skipped",
            ),
            pytest.param(
                COPENHAGEN, "0 30 2 * * *", "03-29T00:00Z", SHIFT,
                ["03-29T01:00Z ShiftedForward", "03-30T00:30Z"],
                id="six-fields-shift-the-same-way",
            ),
            pytest.param(
                COPENHAGEN, "59 59 2 * * *", "03-29T00:00Z", SHIFT,
                ["03-29T01:00Z ShiftedForward", "03-30T00:59:59Z"],
                id="the-last-second-of-the-gap-shifts-to-its-end",
            ),
        ],
    )  # fmt: skip
    def test_the_nonexistent_rule_decides_and_the_ambiguous_rule_has_no_say(
        self,
        zone: str,
        expression: str,
        after: str,
        nonexistent: dst.Nonexistent,
        expected: list[str],
    ) -> None:
        under_each = {
            ambiguous: slots_after(
                expression, zone, at(after), len(expected), dst.DstRules(nonexistent, ambiguous)
            )
            for ambiguous in dst.Ambiguous
        }
        assert under_each == dict.fromkeys(dst.Ambiguous, expected)

    def test_a_shifted_slot_still_names_the_local_time_it_meant(self) -> None:
        schedule = cron.parse("30 2 * * *", zone=ZoneInfo(COPENHAGEN))
        occurrence = schedule.next_after(at("03-29T00:00Z"))
        assert occurrence.nominal == datetime(2026, 3, 29, 2, 30)
        local = occurrence.at.astimezone(ZoneInfo(COPENHAGEN))
        assert local.isoformat() == "2026-03-29T03:00:00+02:00"


class TestSlotsInsideOneGapCoalesceIntoOneRun:
    @pytest.mark.parametrize(
        ("zone", "expression", "after", "nonexistent", "expected"),
        [
            pytest.param(
                COPENHAGEN, "0,15,30,45 2 * * *", "03-29T00:00Z", SHIFT,
                ["03-29T01:00Z ShiftedForward", "03-30T00:00Z", "03-30T00:15Z"],
                id="copenhagen-four-quarter-hours-become-one-run-at-03:00",
            ),
            pytest.param(
                COPENHAGEN, "0,15,30,45 2 * * *", "03-29T00:00Z", SKIP,
                ["03-30T00:00Z", "03-30T00:15Z"],
                id="copenhagen-four-quarter-hours-all-skipped",
            ),
            pytest.param(
                NEW_YORK, "*/10 2 * * *", "03-08T06:00Z", SHIFT,
                ["03-08T07:00Z ShiftedForward", "03-09T06:00Z"],
                id="new-york-six-slots-become-one-run-at-03:00",
            ),
            pytest.param(
                LORD_HOWE, "0,10,20,40 2 * * *", "10-03T15:00Z", SHIFT,
                ["10-03T15:30Z ShiftedForward", "10-03T15:40Z"],
                id="lord-howe-three-slots-become-one-run-then-02:40-runs-as-usual",
            ),
            pytest.param(
                LORD_HOWE, "0,10,20,30 2 * * *", "10-03T15:00Z", SHIFT,
                ["10-03T15:30Z ShiftedForward", "10-04T15:00Z"],
                id="lord-howe-the-02:30-slot-at-the-end-of-the-gap-is-the-same-run",
            ),
            pytest.param(
                COPENHAGEN, "0 2,3 * * *", "03-29T00:00Z", SHIFT,
                ["03-29T01:00Z ShiftedForward", "03-30T00:00Z", "03-30T01:00Z"],
                id="copenhagen-02:00-shifted-onto-03:00-is-one-run",
            ),
        ],
    )  # fmt: skip
    def test_one_gap_one_run(
        self,
        zone: str,
        expression: str,
        after: str,
        nonexistent: dst.Nonexistent,
        expected: list[str],
    ) -> None:
        rules = dst.DstRules(nonexistent=nonexistent)
        assert slots_after(expression, zone, at(after), len(expected), rules) == expected

    def test_the_coalesced_run_names_the_first_local_time_of_the_gap(self) -> None:
        schedule = cron.parse("0,15,30,45 2 * * *", zone=ZoneInfo(COPENHAGEN))
        assert schedule.next_after(at("03-29T00:00Z")).nominal == datetime(2026, 3, 29, 2, 0)


class TestAFixedHourInAFallBackOverlap:
    """The local time happens twice: First, Second or Both of them run."""

    @pytest.mark.parametrize(
        ("zone", "expression", "after", "ambiguous", "expected"),
        [
            pytest.param(
                COPENHAGEN, "30 2 * * *", "10-24T00:00Z", FIRST,
                ["10-24T00:30Z", "10-25T00:30Z FirstOfRepeated", "10-26T01:30Z"],
                id="copenhagen-02:30-first-is-cest",
            ),
            pytest.param(
                COPENHAGEN, "30 2 * * *", "10-24T00:00Z", SECOND,
                ["10-24T00:30Z", "10-25T01:30Z SecondOfRepeated", "10-26T01:30Z"],
                id="copenhagen-02:30-second-is-cet",
            ),
            pytest.param(
                COPENHAGEN, "30 2 * * *", "10-24T00:00Z", BOTH,
                ["10-24T00:30Z", "10-25T00:30Z FirstOfRepeated",
                 "10-25T01:30Z SecondOfRepeated", "10-26T01:30Z"],
                id="copenhagen-02:30-both",
            ),
            pytest.param(
                LONDON, "30 1 * * *", "10-24T00:00Z", FIRST,
                ["10-24T00:30Z", "10-25T00:30Z FirstOfRepeated", "10-26T01:30Z"],
                id="london-01:30-first-is-bst",
            ),
            pytest.param(
                LONDON, "30 1 * * *", "10-24T00:00Z", SECOND,
                ["10-24T00:30Z", "10-25T01:30Z SecondOfRepeated", "10-26T01:30Z"],
                id="london-01:30-second-is-gmt",
            ),
            pytest.param(
                LONDON, "30 1 * * *", "10-24T00:00Z", BOTH,
                ["10-24T00:30Z", "10-25T00:30Z FirstOfRepeated",
                 "10-25T01:30Z SecondOfRepeated", "10-26T01:30Z"],
                id="london-01:30-both",
            ),
            pytest.param(
                NEW_YORK, "30 1 * * *", "10-31T00:00Z", FIRST,
                ["10-31T05:30Z", "11-01T05:30Z FirstOfRepeated", "11-02T06:30Z"],
                id="new-york-01:30-first-is-edt",
            ),
            pytest.param(
                NEW_YORK, "30 1 * * *", "10-31T00:00Z", SECOND,
                ["10-31T05:30Z", "11-01T06:30Z SecondOfRepeated", "11-02T06:30Z"],
                id="new-york-01:30-second-is-est",
            ),
            pytest.param(
                NEW_YORK, "30 1 * * *", "10-31T00:00Z", BOTH,
                ["10-31T05:30Z", "11-01T05:30Z FirstOfRepeated",
                 "11-01T06:30Z SecondOfRepeated", "11-02T06:30Z"],
                id="new-york-01:30-both",
            ),
            pytest.param(
                LORD_HOWE, "45 1 * * *", "04-03T00:00Z", FIRST,
                ["04-03T14:45Z", "04-04T14:45Z FirstOfRepeated", "04-05T15:15Z"],
                id="lord-howe-01:45-first-is-plus-11",
            ),
            pytest.param(
                LORD_HOWE, "45 1 * * *", "04-03T00:00Z", SECOND,
                ["04-03T14:45Z", "04-04T15:15Z SecondOfRepeated", "04-05T15:15Z"],
                id="lord-howe-01:45-second-is-plus-10:30",
            ),
            pytest.param(
                LORD_HOWE, "45 1 * * *", "04-03T00:00Z", BOTH,
                ["04-03T14:45Z", "04-04T14:45Z FirstOfRepeated",
                 "04-04T15:15Z SecondOfRepeated", "04-05T15:15Z"],
                id="lord-howe-01:45-both-half-an-hour-apart",
            ),
            pytest.param(
                COPENHAGEN, "0 0,30 2 * * *", "10-24T23:59Z", BOTH,
                ["10-25T00:00Z FirstOfRepeated", "10-25T00:30Z FirstOfRepeated",
                 "10-25T01:00Z SecondOfRepeated", "10-25T01:30Z SecondOfRepeated"],
                id="six-fields-two-slots-in-the-hour-run-twice-in-real-order",
            ),
        ],
    )  # fmt: skip
    def test_the_ambiguous_rule_decides_and_the_nonexistent_rule_has_no_say(
        self,
        zone: str,
        expression: str,
        after: str,
        ambiguous: dst.Ambiguous,
        expected: list[str],
    ) -> None:
        under_each = {
            nonexistent: slots_after(
                expression, zone, at(after), len(expected), dst.DstRules(nonexistent, ambiguous)
            )
            for nonexistent in dst.Nonexistent
        }
        assert under_each == dict.fromkeys(dst.Nonexistent, expected)


class TestTheNextSlotFromInsideARepeatedHour:
    """The loop may ask from any instant, also from the middle of a fall-back overlap.

    Copenhagen, daily 02:30: its first occurrence is 00:30Z (CEST), its second 01:30Z (CET).
    """

    @pytest.mark.parametrize(
        ("after", "ambiguous", "expected"),
        [
            pytest.param("10-25T00:10Z", FIRST, "10-25T00:30Z FirstOfRepeated",
                         id="first-pass-before-02:30-first"),
            pytest.param("10-25T00:45Z", FIRST, "10-26T01:30Z",
                         id="first-pass-after-02:30-first-waits-for-tomorrow"),
            pytest.param("10-25T00:45Z", SECOND, "10-25T01:30Z SecondOfRepeated",
                         id="first-pass-after-02:30-second-still-ahead"),
            pytest.param("10-25T00:45Z", BOTH, "10-25T01:30Z SecondOfRepeated",
                         id="first-pass-after-02:30-both-the-second-is-next"),
            pytest.param("10-25T00:30Z", BOTH, "10-25T01:30Z SecondOfRepeated",
                         id="exactly-at-the-first-both-the-second-is-next"),
            pytest.param("10-25T01:10Z", BOTH, "10-25T01:30Z SecondOfRepeated",
                         id="second-pass-before-02:30-both"),
            pytest.param("10-25T01:10Z", FIRST, "10-26T01:30Z",
                         id="second-pass-before-02:30-first-already-ran"),
            pytest.param("10-25T01:30Z", BOTH, "10-26T01:30Z",
                         id="exactly-at-the-second-both-waits-for-tomorrow"),
        ],
    )  # fmt: skip
    def test_copenhagen_02_30(self, after: str, ambiguous: dst.Ambiguous, expected: str) -> None:
        rules = dst.DstRules(ambiguous=ambiguous)
        assert slots_after("30 2 * * *", COPENHAGEN, at(after), 1, rules) == [expected]

    @pytest.mark.parametrize(
        "after",
        [
            pytest.param(datetime(2026, 10, 25, 2, 10, tzinfo=ZoneInfo(COPENHAGEN)),
                         id="local-first-pass"),
            pytest.param(datetime(2026, 10, 24, 20, 10, tzinfo=ZoneInfo(NEW_YORK)),
                         id="another-zone"),
            pytest.param(at("10-25T00:10Z"), id="utc"),
        ],
    )  # fmt: skip
    def test_an_instant_in_any_zone_means_the_same_instant(self, after: datetime) -> None:
        schedule = cron.parse("*/20 * * * *", zone=ZoneInfo(COPENHAGEN))
        assert render(schedule.next_after(after)) == "10-25T00:20Z FirstOfRepeated"


class TestATimeOutsideTheGapOrOverlapIsUntouched:
    @pytest.mark.parametrize(
        ("zone", "expression", "after", "expected"),
        [
            pytest.param(NEW_YORK, "30 1 * * *", "03-08T00:00Z", "03-08T06:30Z",
                         id="new-york-01:30-on-the-spring-day-is-before-the-gap"),
            pytest.param(NEW_YORK, "30 2 * * *", "11-01T00:00Z", "11-01T07:30Z",
                         id="new-york-02:30-on-the-fall-day-happens-once"),
            pytest.param(COPENHAGEN, "30 3 * * *", "03-29T00:00Z", "03-29T01:30Z",
                         id="copenhagen-03:30-on-the-spring-day-is-after-the-gap"),
            pytest.param(COPENHAGEN, "30 1 * * *", "10-24T22:00Z", "10-24T23:30Z",
                         id="copenhagen-01:30-on-the-fall-day-is-before-the-overlap"),
            pytest.param(LORD_HOWE, "45 2 * * *", "10-03T00:00Z", "10-03T15:45Z",
                         id="lord-howe-02:45-is-after-its-half-hour-gap"),
            pytest.param(LORD_HOWE, "15 1 * * *", "04-04T00:00Z", "04-04T14:15Z",
                         id="lord-howe-01:15-is-before-its-half-hour-overlap"),
        ],
    )  # fmt: skip
    def test_every_rule_gives_the_plain_slot(
        self, zone: str, expression: str, after: str, expected: str
    ) -> None:
        under_each = {
            rules: slots_after(expression, zone, at(after), 1, rules)[0] for rules in ALL_RULES
        }
        assert under_each == dict.fromkeys(ALL_RULES, expected)


class TestKolkataHasNoDst:
    @pytest.mark.parametrize(
        ("after", "expected"),
        [
            pytest.param("03-27T12:00Z", ["03-27T21:00Z", "03-28T21:00Z", "03-29T21:00Z"],
                         id="across-the-eu-spring-forward"),
            pytest.param("10-23T12:00Z", ["10-23T21:00Z", "10-24T21:00Z", "10-25T21:00Z"],
                         id="across-the-eu-fall-back"),
            pytest.param("03-06T12:00Z", ["03-06T21:00Z", "03-07T21:00Z", "03-08T21:00Z"],
                         id="across-the-us-spring-forward"),
        ],
    )  # fmt: skip
    def test_02_30_ist_is_21_00_utc_the_day_before_under_every_rule(
        self, after: str, expected: list[str]
    ) -> None:
        under_each = {
            rules: slots_after("30 2 * * *", KOLKATA, at(after), 3, rules) for rules in ALL_RULES
        }
        assert under_each == dict.fromkeys(ALL_RULES, expected)


class TestAWildcardHourFollowsRealElapsedTime:
    """Nothing runs in a gap, both copies of a repeated hour run, whatever the DST rules say."""

    @pytest.mark.parametrize(
        ("zone", "expression", "after", "expected"),
        [
            pytest.param(
                COPENHAGEN, "*/30 * * * *", "10-24T23:00Z",
                ["10-24T23:30Z",
                 "10-25T00:00Z FirstOfRepeated", "10-25T00:30Z FirstOfRepeated",
                 "10-25T01:00Z SecondOfRepeated", "10-25T01:30Z SecondOfRepeated",
                 "10-25T02:00Z"],
                id="copenhagen-half-hourly-through-the-repeated-hour",
            ),
            pytest.param(
                COPENHAGEN, "*/30 * * * *", "03-28T23:30Z",
                ["03-29T00:00Z", "03-29T00:30Z", "03-29T01:00Z", "03-29T01:30Z"],
                id="copenhagen-half-hourly-through-the-gap",
            ),
            pytest.param(
                COPENHAGEN, "0 * * * *", "10-24T22:30Z",
                ["10-24T23:00Z", "10-25T00:00Z FirstOfRepeated",
                 "10-25T01:00Z SecondOfRepeated", "10-25T02:00Z"],
                id="copenhagen-hourly-runs-02:00-twice",
            ),
            pytest.param(
                LONDON, "*/30 * * * *", "03-29T00:00Z",
                ["03-29T00:30Z", "03-29T01:00Z", "03-29T01:30Z"],
                id="london-half-hourly-through-the-gap",
            ),
            pytest.param(
                LONDON, "*/30 * * * *", "10-25T00:00Z",
                ["10-25T00:30Z FirstOfRepeated", "10-25T01:00Z SecondOfRepeated",
                 "10-25T01:30Z SecondOfRepeated", "10-25T02:00Z"],
                id="london-half-hourly-through-the-repeated-hour",
            ),
            pytest.param(
                NEW_YORK, "0 * * * *", "03-08T05:30Z",
                ["03-08T06:00Z", "03-08T07:00Z", "03-08T08:00Z"],
                id="new-york-hourly-has-no-02:00",
            ),
            pytest.param(
                NEW_YORK, "0 * * * *", "11-01T04:30Z",
                ["11-01T05:00Z FirstOfRepeated", "11-01T06:00Z SecondOfRepeated", "11-01T07:00Z"],
                id="new-york-hourly-runs-01:00-twice",
            ),
            pytest.param(
                LORD_HOWE, "*/30 * * * *", "04-04T13:45Z",
                ["04-04T14:00Z", "04-04T14:30Z FirstOfRepeated",
                 "04-04T15:00Z SecondOfRepeated", "04-04T15:30Z"],
                id="lord-howe-half-hourly-runs-01:30-twice",
            ),
            pytest.param(
                LORD_HOWE, "*/30 * * * *", "10-03T14:15Z",
                ["10-03T14:30Z", "10-03T15:00Z", "10-03T15:30Z", "10-03T16:00Z"],
                id="lord-howe-half-hourly-has-no-02:00",
            ),
            pytest.param(
                LORD_HOWE, "0 * * * *", "10-03T14:00Z",
                ["10-03T14:30Z", "10-03T16:00Z"],
                id="lord-howe-hourly-90-minutes-across-the-gap",
            ),
            pytest.param(
                LORD_HOWE, "0 * * * *", "04-04T13:30Z",
                ["04-04T14:00Z", "04-04T15:30Z"],
                id="lord-howe-hourly-90-minutes-across-the-overlap",
            ),
            pytest.param(
                COPENHAGEN, "0 */2 * * *", "03-28T22:30Z",
                ["03-28T23:00Z", "03-29T02:00Z"],
                id="copenhagen-every-two-hours-drops-02:00",
            ),
            pytest.param(
                COPENHAGEN, "0 0 * * * *", "10-25T00:30Z",
                ["10-25T01:00Z SecondOfRepeated", "10-25T02:00Z"],
                id="six-fields-hourly-runs-02:00-twice",
            ),
        ],
    )  # fmt: skip
    def test_the_slots_are_real_time_under_every_rule(
        self, zone: str, expression: str, after: str, expected: list[str]
    ) -> None:
        under_each = {
            rules: slots_after(expression, zone, at(after), len(expected), rules)
            for rules in ALL_RULES
        }
        assert under_each == dict.fromkeys(ALL_RULES, expected)

    @pytest.mark.parametrize(
        ("zone", "local_day", "expected_count"),
        [
            pytest.param(COPENHAGEN, date(2026, 10, 25), 50, id="copenhagen-25-hour-day"),
            pytest.param(COPENHAGEN, date(2026, 3, 29), 46, id="copenhagen-23-hour-day"),
            pytest.param(NEW_YORK, date(2026, 11, 1), 50, id="new-york-25-hour-day"),
            pytest.param(NEW_YORK, date(2026, 3, 8), 46, id="new-york-23-hour-day"),
            pytest.param(LORD_HOWE, date(2026, 4, 5), 49, id="lord-howe-24-and-a-half-hour-day"),
            pytest.param(LORD_HOWE, date(2026, 10, 4), 47, id="lord-howe-23-and-a-half-hour-day"),
            pytest.param(KOLKATA, date(2026, 10, 25), 48, id="kolkata-every-day-is-24-hours"),
        ],
    )
    def test_a_half_hourly_job_runs_every_half_hour_of_real_time_in_a_local_day(
        self, zone: str, local_day: date, expected_count: int
    ) -> None:
        tz = ZoneInfo(zone)
        start = datetime.combine(local_day, datetime.min.time(), tzinfo=tz)
        end = datetime.combine(local_day + timedelta(days=1), datetime.min.time(), tzinfo=tz)
        schedule = cron.parse("*/30 * * * *", zone=tz)
        due = schedule.due_between(
            after=start - timedelta(seconds=1), until=end - timedelta(seconds=1), keep=100
        )
        assert due.total == expected_count
        gaps = {later - earlier for earlier, later in itertools.pairwise(due.newest)}
        assert gaps == {timedelta(minutes=30)}


class TestADailyJobRunsOncePerLocalDay:
    """The key regression: a daily 02:30 in Copenhagen, with the default rules."""

    def test_on_the_fall_back_night_it_runs_once_in_cest(self) -> None:
        schedule = cron.parse("30 2 * * *", zone=ZoneInfo(COPENHAGEN))
        due = schedule.due_between(after=at("10-24T12:00Z"), until=at("10-25T12:00Z"), keep=10)
        assert due.newest == (at("10-25T00:30Z"),)
        occurrence = schedule.next_after(at("10-24T12:00Z"))
        assert occurrence.adjustment is Adjustment.FIRST_OF_REPEATED
        local = occurrence.at.astimezone(ZoneInfo(COPENHAGEN))
        assert local.isoformat() == "2026-10-25T02:30:00+02:00"

    def test_on_the_spring_forward_night_it_runs_once_at_03_00_cest(self) -> None:
        schedule = cron.parse("30 2 * * *", zone=ZoneInfo(COPENHAGEN))
        due = schedule.due_between(after=at("03-28T12:00Z"), until=at("03-29T12:00Z"), keep=10)
        assert due.newest == (at("03-29T01:00Z"),)
        occurrence = schedule.next_after(at("03-28T12:00Z"))
        assert occurrence.adjustment is Adjustment.SHIFTED_FORWARD
        local = occurrence.at.astimezone(ZoneInfo(COPENHAGEN))
        assert local.isoformat() == "2026-03-29T03:00:00+02:00"

    def test_raw_croniter_on_aware_datetimes_runs_it_twice_on_the_fall_back_night(self) -> None:
        """The contrast: why croniter only ever sees naive local times here."""
        raw = croniter("30 2 * * *", datetime(2026, 10, 24, 12, tzinfo=ZoneInfo(COPENHAGEN)))
        fires = [raw.get_next(datetime).astimezone(UTC) for _ in range(2)]
        assert fires == [at("10-25T00:30Z"), at("10-25T01:30Z")]

    @pytest.mark.parametrize(
        ("zone", "expression"),
        [
            pytest.param(LONDON, "30 1 * * *", id="london-01:30"),
            pytest.param(COPENHAGEN, "30 2 * * *", id="copenhagen-02:30"),
            pytest.param(NEW_YORK, "30 2 * * *", id="new-york-02:30-in-the-gap"),
            pytest.param(NEW_YORK, "30 1 * * *", id="new-york-01:30-in-the-overlap"),
            pytest.param(LORD_HOWE, "15 2 * * *", id="lord-howe-02:15-in-the-gap"),
            pytest.param(LORD_HOWE, "45 1 * * *", id="lord-howe-01:45-in-the-overlap"),
            pytest.param(KOLKATA, "30 2 * * *", id="kolkata-02:30"),
        ],
    )
    def test_every_local_day_of_2026_has_exactly_one_run(self, zone: str, expression: str) -> None:
        tz = ZoneInfo(zone)
        schedule = cron.parse(expression, zone=tz)
        start = datetime(2026, 1, 1, tzinfo=tz)
        end = datetime(2027, 1, 1, tzinfo=tz)
        due = schedule.due_between(after=start, until=end, keep=400)
        runs_per_day = Counter(instant.astimezone(tz).date() for instant in due.newest)
        assert due.total == 365
        assert set(runs_per_day.values()) == {1}

    @pytest.mark.parametrize(
        ("rules", "runs_on_the_spring_day", "runs_on_the_fall_day"),
        [
            pytest.param(dst.DstRules(SHIFT, FIRST), 1, 1, id="defaults"),
            pytest.param(dst.DstRules(SHIFT, SECOND), 1, 1, id="shift-forward-second"),
            pytest.param(dst.DstRules(SHIFT, BOTH), 1, 2, id="shift-forward-both"),
            pytest.param(dst.DstRules(SKIP, FIRST), 0, 1, id="skip-first"),
            pytest.param(dst.DstRules(SKIP, BOTH), 0, 2, id="skip-both"),
        ],
    )
    def test_other_rules_trade_that_away_on_purpose(
        self, rules: dst.DstRules, runs_on_the_spring_day: int, runs_on_the_fall_day: int
    ) -> None:
        tz = ZoneInfo(COPENHAGEN)
        spring, fall = date(2026, 3, 29), date(2026, 10, 25)
        schedule = cron.parse("30 2 * * *", zone=tz, rules=rules)
        due = schedule.due_between(after=at("03-01T00:00Z"), until=at("11-01T00:00Z"), keep=400)
        runs_per_day = Counter(instant.astimezone(tz).date() for instant in due.newest)
        assert runs_per_day[spring] == runs_on_the_spring_day
        assert runs_per_day[fall] == runs_on_the_fall_day
        assert {n for day, n in runs_per_day.items() if day not in (spring, fall)} == {1}
