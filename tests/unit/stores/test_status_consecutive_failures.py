"""``status.consecutiveFailures`` counts the runs in a row that did not succeed, for pause on
failure (``spec.suspendAfterFailures``): each run that started and failed (Failed, TimedOut,
Lost) adds one, a success sets it to 0, slots that never ran and runs the operator cancelled
leave it, a resume sets it to 0.
Counted onto what the object shows, whichever replica wrote it."""

from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import records
from status_api_double import JOB, FakeStatusApi, scheduled_job, store_on

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
R = records.RunResult


def run(result: records.RunResult, index: int = 0) -> records.RunRecord:
    slot = SLOT + timedelta(minutes=index)
    ran = result not in (R.SKIPPED_OVERLAP, R.MISSED)
    return records.RunRecord(
        slot=slot,
        scheduled_time=slot,
        result=result,
        started_at=slot if ran else None,
        finished_at=slot + timedelta(seconds=1) if ran else None,
        replica="r1",
    )


async def written(
    *results: records.RunResult, known: int | None = None, reset: bool = False
) -> object:
    api = FakeStatusApi(scheduled_job(**({} if known is None else {"consecutiveFailures": known})))
    store = store_on(api, wall=lambda: SLOT, clock=lambda: 0.0)
    if reset:
        store.reset_failures(JOB)
    for index, result in enumerate(results):
        store.run_finished(JOB, run(result, index))
    await store._flush(due_only=False)
    return api.status.get("consecutiveFailures")


class TestConsecutiveFailures:
    @pytest.mark.parametrize(
        ("known", "results", "expected"),
        [
            (None, [R.FAILED], 1),
            (None, [R.FAILED, R.TIMED_OUT, R.LOST], 3),
            (2, [R.FAILED], 3),
            (2, [R.SUCCEEDED], 0),
            (2, [R.FAILED, R.SUCCEEDED, R.FAILED], 1),
            (2, [R.SKIPPED_OVERLAP, R.MISSED], 2),
            (2, [R.CANCELLED], 2),
            (2, [R.FAILED, R.CANCELLED, R.FAILED], 4),
            (None, [R.CANCELLED], None),
            (None, [R.SKIPPED_OVERLAP], None),
            ("three", [R.FAILED], 1),
        ],
    )
    async def test_it_counts_the_runs_in_a_row_that_did_not_succeed(
        self, known: int | None, results: list[records.RunResult], expected: int | None
    ) -> None:
        assert await written(*results, known=known) == expected

    async def test_a_resume_sets_it_to_zero_then_counts_what_follows(self) -> None:
        assert await written(known=5, reset=True) == 0
        assert await written(R.FAILED, known=5, reset=True) == 1
