"""The fan-out store: every report reaches every store, even when one of them fails."""

import logging
from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import records
from punctual.scheduling import slots
from punctual.stores import fanout, memory

JOB = slots.JobRef(namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-00000000abcd")
SLOT = datetime(2026, 1, 1, 2, 30, tzinfo=UTC)
RUN = records.ActiveRun(slot=SLOT, scheduled_time=SLOT, started_at=SLOT, replica="replica-a")
RECORD = records.RunRecord(
    slot=SLOT,
    scheduled_time=SLOT,
    result=records.RunResult.SUCCEEDED,
    started_at=SLOT,
    finished_at=SLOT + timedelta(seconds=1),
)


class BrokenStore:
    """A store whose every call raises (the signatures are the RunStore protocol's)."""

    def slot_upcoming(self, job: slots.JobRef, *, scheduled_time: datetime) -> None:
        raise RuntimeError("status patch queue is gone")

    def run_started(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        raise RuntimeError("status patch queue is gone")

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        raise RuntimeError("status patch queue is gone")

    def slots_missed(
        self,
        job: slots.JobRef,
        *,
        count: int,
        newest: datetime,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        raise RuntimeError("status patch queue is gone")


class TestEveryStoreHearsEverything:
    def test_each_report_reaches_each_store(self) -> None:
        first, second = memory.MemoryStore(), memory.MemoryStore()
        store = fanout.FanoutStore(first, second)

        store.slot_upcoming(JOB, scheduled_time=SLOT)
        store.slot_armed(JOB, RUN)
        store.run_started(JOB, RUN)
        store.run_finished(JOB, RECORD)
        store.slots_missed(JOB, count=2, newest=SLOT, reason=records.MissedReason.LOCK_FORGOT)

        for target in (first, second):
            history = target.jobs[JOB]
            assert history.upcoming == SLOT
            assert history.armed == [RUN]
            assert history.started == [RUN]
            assert history.finished == [RECORD]
            assert (history.missed, history.newest_missed) == (2, SLOT)
            assert history.missed_by_reason == {records.MissedReason.LOCK_FORGOT: 2}

    def test_no_stores_is_fine(self) -> None:
        fanout.FanoutStore().run_finished(JOB, RECORD)


class TestAFailingStoreDoesNotSilenceTheOthers:
    def test_the_stores_after_a_broken_one_still_hear_the_run(self) -> None:
        healthy = memory.MemoryStore()
        store = fanout.FanoutStore(BrokenStore(), healthy)

        store.run_started(JOB, RUN)
        store.run_finished(JOB, RECORD)
        store.slots_missed(JOB, count=1, newest=SLOT)
        store.slot_upcoming(JOB, scheduled_time=SLOT)

        assert healthy.jobs[JOB].finished == [RECORD]
        assert healthy.jobs[JOB].missed == 1

    def test_the_failure_is_logged_with_the_job(self, caplog: pytest.LogCaptureFixture) -> None:
        store = fanout.FanoutStore(BrokenStore())

        with caplog.at_level(logging.ERROR):
            store.run_finished(JOB, RECORD)

        [entry] = caplog.records
        assert "run_finished of reports/nightly failed" in entry.getMessage()
        assert entry.exc_info is not None
