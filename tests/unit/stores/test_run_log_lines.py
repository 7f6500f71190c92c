"""One structured log line per slot's fate (``punctual.runs``): namespace, name, slot, result,
lateness and duration in milliseconds, replica and attempt; slots given up are a line too. Above
a rate per job, a job's lines are kept back and summarized once a minute."""

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import records
from punctual.scheduling import slots
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

    def test_a_run_of_several_schedules_names_the_entries_that_fired_it(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        record = records.RunRecord(
            slot=SLOT,
            scheduled_time=SLOT,
            result=records.RunResult.SUCCEEDED,
            replica="r1",
            schedules=("hourly", "noon"),
        )

        with caplog.at_level("INFO", logger="punctual.runs"):
            logs.LogStore().run_finished(JOB, record)

        assert fields(caplog.records[0])["schedules"] == "hourly,noon"

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

    def test_slots_passed_while_suspended_are_a_line_at_info(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level("INFO", logger="punctual.runs"):
            logs.LogStore().slots_missed(
                JOB, count=3, newest=SLOT, reason=records.MissedReason.SUSPENDED
            )

        (line,) = caplog.records
        assert (line.levelname, line.getMessage()) == ("INFO", "slots passed while suspended")
        assert fields(line)["reason"] == "Suspended"


class TestTheLinesOfOneJobArePaced:
    """Above ``lines_per_second`` (after a burst), a job's lines are kept back and summarized."""

    @pytest.mark.parametrize(
        ("per_second", "burst", "line_at", "admitted"),
        [
            # A job within the rate logs every run.
            (1, 3, [0, 1, 2, 3, 4, 5], [True] * 6),
            # A burst, then one a second.
            (1, 3, [0, 0, 0, 0, 0.5, 1, 1], [True, True, True, False, False, True, False]),
            # What was not spent refills up to the burst, no further.
            (1, 2, [0, 0, 0, 10, 10, 10], [True, True, False, True, True, False]),
            (2, 1, [0, 0.25, 0.5, 0.75, 1], [True, False, True, False, True]),
        ],
    )
    def test_a_job_writes_its_burst_then_at_its_rate(
        self, per_second: int, burst: int, line_at: list[float], admitted: list[bool]
    ) -> None:
        pacer = logs.LinePacer(per_second=per_second, burst=burst)

        assert [pacer.admit(JOB, now) for now in line_at] == admitted

    def test_each_job_has_an_allowance_of_its_own(self) -> None:
        other = slots.JobRef(namespace=JOB.namespace, name="other", uid="uid-2")
        pacer = logs.LinePacer(per_second=1, burst=1)

        assert [pacer.admit(JOB, 0), pacer.admit(JOB, 0), pacer.admit(other, 0)] == [
            True,
            False,
            True,
        ]

    def test_what_was_kept_back_is_summarized_once_then_forgotten(self) -> None:
        pacer = logs.LinePacer(per_second=1, burst=1)
        pacer.admit(JOB, 0)
        for result in ["Succeeded", "Failed", "Succeeded"]:
            pacer.admit(JOB, 0)
            pacer.hold(JOB, records.RunResult(result))

        assert pacer.summaries(1) == [
            (JOB, {records.RunResult.SUCCEEDED: 2, records.RunResult.FAILED: 1})
        ]
        assert pacer.summaries(2) == []


def a_run(store: logs.LogStore, *, result: records.RunResult) -> None:
    store.run_finished(
        JOB, records.RunRecord(slot=SLOT, scheduled_time=SLOT, result=result, replica="r1")
    )


class TestAJobAboveTheRate:
    @pytest.mark.looptime(start=time.monotonic, noop_cycles=1)
    async def test_logs_its_burst_then_a_line_a_second_and_a_summary_a_minute(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        loop = asyncio.get_running_loop()
        store = logs.LogStore(lines_per_second=1, clock=loop.time)
        summaries = asyncio.create_task(store.run())
        start = loop.time()
        with caplog.at_level("INFO", logger="punctual.runs"):
            for index in range(12_000):  # every 10 ms for 120 s, one in 100 failed
                failed = index % 100 == 50
                result = records.RunResult.FAILED if failed else records.RunResult.SUCCEEDED
                a_run(store, result=result)
                await asyncio.sleep(0.01)
            summaries.cancel()
            await asyncio.gather(summaries, return_exceptions=True)

        lines = [line for line in caplog.records if line.getMessage() == "run finished"]
        summarized = [line for line in caplog.records if line.getMessage() == "runs summarized"]
        assert len(lines) <= logs.BURST + 120 + 1
        assert len(summarized) == 2  # a minute in, and at the stop (two minutes in)
        assert sum(fields(line)["runs"] for line in summarized) + len(lines) == 12_000
        first = fields(summarized[0])
        assert set(first) == {"namespace", "name", "runs", "succeeded", "failed", "linesPerSecond"}
        assert first["succeeded"] + first["failed"] == first["runs"]
        failed_lines = sum(fields(line)["result"] == "Failed" for line in lines)
        assert sum(fields(line)["failed"] for line in summarized) + failed_lines == 120
        assert (first["linesPerSecond"], summarized[0].levelname) == (1, "WARNING")
        assert loop.time() - start == pytest.approx(120, abs=1)

    @pytest.mark.looptime(start=time.monotonic, noop_cycles=1)
    async def test_a_job_within_the_rate_is_never_summarized(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        loop = asyncio.get_running_loop()
        store = logs.LogStore(lines_per_second=1, clock=loop.time)
        summaries = asyncio.create_task(store.run())
        with caplog.at_level("INFO", logger="punctual.runs"):
            for _ in range(130):  # every second
                a_run(store, result=records.RunResult.SUCCEEDED)
                await asyncio.sleep(1)
            summaries.cancel()
            await asyncio.gather(summaries, return_exceptions=True)

        assert {line.getMessage() for line in caplog.records} == {"run finished"}
        assert len(caplog.records) == 130

    def test_slots_missed_above_the_rate_are_summarized_as_missed(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        store = logs.LogStore(lines_per_second=1, clock=lambda: 0.0)
        with caplog.at_level("INFO", logger="punctual.runs"):
            for _ in range(logs.BURST + 2):
                store.slots_missed(JOB, count=5, newest=SLOT)
            store.summarize()

        *_, summary = caplog.records
        assert (summary.getMessage(), fields(summary)["missed"], fields(summary)["runs"]) == (
            "runs summarized",
            10,
            0,
        )
