"""The one reader of a ScheduledJob's own status (``status_reader``): what it cannot read (a
field missing, of another type, a timestamp Python does not read) counts as absent, never as
an error, since anyone allowed to write ``scheduledjobs/status`` may have put it there."""

from datetime import UTC, datetime
from typing import Any

import pytest

from punctual.api import status_reader

SLOT = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
SHOWN = "2026-03-02T12:00:00Z"


class TestTheStatusOfABody:
    @pytest.mark.parametrize(
        ("body", "status"),
        [
            (None, {}),
            ({}, {}),
            ({"status": None}, {}),
            ({"status": "Ready"}, {}),
            ({"status": {"consecutiveFailures": 1}}, {"consecutiveFailures": 1}),
        ],
    )
    def test_is_its_status_object_or_nothing(self, body: Any, status: dict[str, Any]) -> None:
        assert status_reader.of(body) == status


class TestTheHighWaterMark:
    @pytest.mark.parametrize(
        ("value", "mark"),
        [
            (SHOWN, SLOT),
            ("2026-03-02T13:00:00+01:00", SLOT),
            (None, None),
            (7, None),
            ("2026-03-02t12:00:00z", None),
            ("0001-01-01T00:00:00+01:00", None),
            ("2026-03-02T12:00:00", None),
        ],
    )
    def test_is_the_last_schedule_time_when_it_reads(self, value: Any, mark: Any) -> None:
        assert status_reader.high_water({"lastScheduleTime": value}) == mark


class TestTheFailureCount:
    @pytest.mark.parametrize(
        ("value", "count"), [(3, 3), (0, 0), (None, 0), ("3", 0), (True, 0), (-1, 0), (2.0, 0)]
    )
    def test_is_a_whole_number_or_none(self, value: Any, count: int) -> None:
        assert status_reader.consecutive_failures({"consecutiveFailures": value}) == count


class TestRequestsTaken:
    @pytest.mark.parametrize(
        ("status", "taken"),
        [
            ({"lastRunNowToken": "t1"}, True),
            ({"lastRunNowToken": "t2", "recentRuns": [{"runNowToken": "t1"}]}, True),
            ({"lastRunNowToken": "t2", "recentRuns": ["t1", None]}, False),
            ({"recentRuns": {"runNowToken": "t1"}}, False),
            ({}, False),
        ],
    )
    def test_a_run_now_token_is_taken_when_the_status_names_it(
        self, status: dict[str, Any], taken: bool
    ) -> None:
        assert status_reader.run_now_taken(status, "t1") is taken

    @pytest.mark.parametrize(
        ("status", "taken"),
        [
            ({"backfill": {"token": "b1", "done": 2}}, True),
            ({"backfill": {"token": "b0"}}, False),
            ({"backfill": "b1"}, False),
            ({}, False),
        ],
    )
    def test_a_backfill_is_taken_when_its_progress_names_it(
        self, status: dict[str, Any], taken: bool
    ) -> None:
        assert status_reader.backfill_taken(status, "b1") is taken


class TestRunsOfASlot:
    @pytest.mark.parametrize(
        ("status", "started"),
        [
            ({"recentRuns": [{"slot": SHOWN, "result": "Succeeded"}]}, True),
            ({"recentRuns": [{"slot": SHOWN, "result": "Lost"}]}, True),
            ({"recentRuns": [{"slot": SHOWN, "result": "Cancelled"}]}, False),
            ({"recentRuns": [{"slot": SHOWN, "result": "SkippedOverlap"}]}, False),
            ({"recentRuns": [{"slot": SHOWN, "result": "Exploded"}]}, False),
            ({"active": [{"slot": SHOWN}]}, True),
            ({"active": ["nonsense"], "recentRuns": 3}, False),
        ],
    )
    def test_a_slot_started_when_a_verdict_or_a_run_in_progress_shows_it(
        self, status: dict[str, Any], started: bool
    ) -> None:
        assert status_reader.slot_started(status, SLOT) is started

    def test_the_run_of_a_token_is_the_first_with_a_known_result(self) -> None:
        status = {
            "lastRun": {"runNowToken": "t1", "result": "Unheard"},
            "recentRuns": ["junk", {"runNowToken": "t1", "result": "Failed"}],
        }
        assert status_reader.run_of_token(status, "t1") == {"runNowToken": "t1", "result": "Failed"}
        assert status_reader.run_of_token(status, "t2") is None


class TestTheSuspendedCondition:
    @pytest.mark.parametrize(
        ("conditions", "since"),
        [
            ([{"type": "Suspended", "status": "True", "lastTransitionTime": SHOWN}], SLOT),
            ([{"type": "Suspended", "status": "False", "lastTransitionTime": SHOWN}], None),
            ([{"type": "Suspended", "status": "True"}], None),
            ([{"type": "Ready", "status": "True", "lastTransitionTime": SHOWN}], None),
            ("Suspended", None),
        ],
    )
    def test_says_since_when_while_it_is_true(self, conditions: Any, since: Any) -> None:
        assert status_reader.suspended_since({"conditions": conditions}) == since
