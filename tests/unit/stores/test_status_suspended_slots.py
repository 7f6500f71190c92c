"""Slots due while the job was suspended are no slots missed: ``counts.suspended`` counts
them, with no record in ``recentRuns`` (nothing went wrong), and the high-water mark moves past
them, so that they never run, on resume either."""

from datetime import UTC, datetime

from punctual.contracts import records
from status_api_double import JOB, FakeStatusApi, scheduled_job, store_on

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)


class TestSlotsPassedWhileSuspended:
    """Counted apart (``counts.suspended``), not missed: no record in recentRuns, the
    high-water mark moved past them all the same."""

    async def test_are_counted_suspended_and_move_the_high_water_mark(self) -> None:
        api = FakeStatusApi(scheduled_job())
        store = store_on(api, wall=lambda: SLOT, clock=lambda: 0.0)
        store.slots_missed(JOB, count=3, newest=SLOT, reason=records.MissedReason.SUSPENDED)
        await store._flush(due_only=False)

        assert api.status["counts"]["suspended"] == 3
        assert api.status["counts"]["missed"] == 0
        assert api.status.get("recentRuns", []) == []
        assert api.status["lastScheduleTime"] == "2026-11-30T01:30:00Z"
        assert api.status.get("consecutiveFailures") is None
