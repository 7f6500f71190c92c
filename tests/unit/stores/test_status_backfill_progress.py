"""``status.backfill``: how far the newest backfill has come, written by the replica carrying it
out; a backfill that waits for a place in its namespace says why until it runs."""

import dataclasses
from datetime import UTC, datetime, timedelta

from punctual.contracts import records
from status_api_double import JOB, FakeStatusApi, scheduled_job, store_on

NOW = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
PROGRESS = records.BackfillProgress(
    request=records.BackfillRequest(
        token="t1", start=NOW - timedelta(hours=5), end=NOW - timedelta(hours=1)
    ),
    replica="r1",
    total=5,
)
WAITING = "2 backfill(s) of namespace reports going on replica r1, ..."


class TestABackfillThatWaits:
    async def test_shows_why_and_no_longer_once_it_runs(self) -> None:
        api = FakeStatusApi(scheduled_job())
        store = store_on(api, wall=lambda: NOW, clock=lambda: 0.0)

        store.backfill_progressed(JOB, dataclasses.replace(PROGRESS, waiting=WAITING))
        await store._flush(due_only=False)
        shown_waiting = dict(api.status["backfill"])
        store.backfill_progressed(JOB, PROGRESS)
        await store._flush(due_only=False)

        assert (shown_waiting["waiting"], shown_waiting["done"]) == (WAITING, 0)
        assert "waiting" not in api.status["backfill"]
        assert api.status["backfill"]["total"] == 5
