"""A status is outside input: whoever may write ``scheduledjobs/status`` can put there any
timestamp the API server's date-time check accepts, including forms this operator cannot read
(a lowercase ``z``) or hold in UTC (year 1 with an offset). The writer reads them as absent and
writes over them; and whatever goes wrong with one job's write, it goes on writing every job's.
"""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import status_api_double
from punctual.contracts import records
from punctual.scheduling import timeline
from status_api_double import JOB, FakeStatusApi, scheduled_job, store_on

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
UNREADABLE = [
    pytest.param("2026-11-30T01:00:00z", id="a-lowercase-z"),
    pytest.param("0001-01-01T00:00:00+01:00", id="before-year-one-in-utc"),
]


def succeeded(slot: datetime = SLOT) -> records.RunRecord:
    return status_api_double.succeeded(slot)


def run_at(slot: str) -> dict[str, Any]:
    return {"slot": slot, "scheduledTime": slot, "result": "Succeeded"}


async def write_a_run(api: FakeStatusApi) -> None:
    store = store_on(api, wall=lambda: SLOT, clock=lambda: 0.0)
    store.run_finished(JOB, succeeded())
    await store._flush(due_only=False)


class TestAnUnreadableTimestampInStatus:
    @pytest.mark.parametrize("text", UNREADABLE)
    async def test_as_the_high_water_mark_is_replaced_by_the_slot_claimed(self, text: str) -> None:
        api = FakeStatusApi(scheduled_job(lastScheduleTime=text))

        await write_a_run(api)

        assert api.status["lastScheduleTime"] == timeline.rfc3339(SLOT)
        assert api.status["counts"]["succeeded"] == 1

    @pytest.mark.parametrize("text", UNREADABLE)
    async def test_as_a_recent_runs_slot_drops_that_entry(self, text: str) -> None:
        earlier = timeline.rfc3339(SLOT - timedelta(minutes=1))
        api = FakeStatusApi(scheduled_job(recentRuns=[run_at(text), run_at(earlier)]))

        await write_a_run(api)

        slots = [run["slot"] for run in api.status["recentRuns"]]
        assert slots == [timeline.rfc3339(SLOT), earlier]

    @pytest.mark.parametrize("text", UNREADABLE)
    async def test_as_the_last_run_and_last_success_gives_way_to_the_new_run(
        self, text: str
    ) -> None:
        api = FakeStatusApi(scheduled_job(lastRun=run_at(text), lastSuccessfulTime=text))

        await write_a_run(api)

        assert api.status["lastRun"]["slot"] == timeline.rfc3339(SLOT)
        assert api.status["lastSuccessfulTime"] == timeline.rfc3339(
            SLOT + timedelta(milliseconds=40)
        )


class TestAnEntryThatIsNoObject:
    @pytest.mark.parametrize("field", ["recentRuns", "active", "conditions"])
    async def test_is_dropped_and_the_run_written(self, field: str) -> None:
        api = FakeStatusApi(scheduled_job(**{field: ["Succeeded", 7]}))

        await write_a_run(api)

        assert api.status["recentRuns"][0]["slot"] == timeline.rfc3339(SLOT)
        assert api.status["counts"]["succeeded"] == 1


class TestOneJobsFailedWrite:
    async def test_a_bug_in_one_write_keeps_its_status_and_stops_no_writer(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        api = FakeStatusApi(scheduled_job())
        store = store_on(api, wall=lambda: SLOT, clock=lambda: 0.0)
        store.run_finished(JOB, succeeded())

        def broken(*args: object, **kwargs: object) -> dict[str, Any]:
            raise KeyError("a bug")

        with monkeypatch.context() as patched:
            patched.setattr(store, "_compose", broken)
            await store._flush(due_only=False)  # does not raise

        assert api.landed == []
        await store._flush(due_only=False)
        assert api.status["counts"]["succeeded"] == 1
