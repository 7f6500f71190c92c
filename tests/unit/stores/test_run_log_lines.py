"""One structured log line per slot's fate (``punctual.runs``): namespace, name, slot, result,
lateness and duration in milliseconds, replica and attempt; slots given up are a line too."""

import logging
from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import records
from punctual.stores import logs
from status_api_double import JOB

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)


def fields(record: logging.LogRecord) -> dict[str, object]:
    passed: dict[str, object] = getattr(record, "fields")  # noqa: B009 (set by the call)
    return passed


class TestAFinishedRun:
    def test_is_one_line_with_every_field(self, caplog: pytest.LogCaptureFixture) -> None:
        record = records.RunRecord(
            slot=SLOT,
            scheduled_time=SLOT + timedelta(seconds=2),
            result=records.RunResult.FAILED,
            started_at=SLOT + timedelta(seconds=2, milliseconds=7),
            finished_at=SLOT + timedelta(seconds=3, milliseconds=257),
            message="HTTP 500",
            replica="r2",
            attempt=2,
        )

        with caplog.at_level("INFO", logger="punctual.runs"):
            logs.LogStore().run_finished(JOB, record)

        (line,) = caplog.records
        assert (line.name, line.levelname, line.getMessage()) == (
            "punctual.runs",
            "WARNING",
            "run finished",
        )
        assert fields(line) == {
            "namespace": JOB.namespace,
            "name": JOB.name,
            "slot": "2026-11-30T01:30:00Z",
            "result": "Failed",
            "latenessMillis": 7,
            "durationMillis": 1250,
            "replica": "r2",
            "attempt": 2,
            "detail": "HTTP 500",
        }

    def test_that_succeeded_is_logged_at_info(self, caplog: pytest.LogCaptureFixture) -> None:
        record = records.RunRecord(
            slot=SLOT,
            scheduled_time=SLOT,
            result=records.RunResult.SUCCEEDED,
            started_at=SLOT,
            finished_at=SLOT,
            replica="r1",
        )

        with caplog.at_level("INFO", logger="punctual.runs"):
            logs.LogStore().run_finished(JOB, record)

        assert [line.levelname for line in caplog.records] == ["INFO"]
        assert "detail" not in fields(caplog.records[0])

    def test_a_slot_that_never_started_has_no_lateness_nor_duration(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        record = records.RunRecord(
            slot=SLOT, scheduled_time=SLOT, result=records.RunResult.SKIPPED_OVERLAP, replica="r1"
        )

        with caplog.at_level("INFO", logger="punctual.runs"):
            logs.LogStore().run_finished(JOB, record)

        assert not {"latenessMillis", "durationMillis"} & set(fields(caplog.records[0]))


class TestSlotsGivenUp:
    def test_are_one_line_with_the_count_the_newest_and_why(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level("INFO", logger="punctual.runs"):
            logs.LogStore().slots_missed(
                JOB, count=3, newest=SLOT, reason=records.MissedReason.LOCK_FORGOT
            )

        (line,) = caplog.records
        assert (line.levelname, line.getMessage()) == ("WARNING", "slots missed")
        assert fields(line) == {
            "namespace": JOB.namespace,
            "name": JOB.name,
            "count": 3,
            "reason": "LockForgot",
            "newest": "2026-11-30T01:30:00Z",
        }
