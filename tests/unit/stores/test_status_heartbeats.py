"""A run in progress is stated in ``status.active`` with a heartbeat that its replica keeps
fresh while the run goes on: a heartbeat older than that says the replica stopped."""

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import records
from punctual.scheduling import timeline
from punctual.stores import status as status_store
from status_api_double import JOB, FakeStatusApi, scheduled_job, store_on

pytestmark = pytest.mark.looptime(start=time.monotonic, noop_cycles=1)

EPOCH = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)


def wall() -> datetime:
    return EPOCH + timedelta(seconds=asyncio.get_running_loop().time())


@pytest.fixture
def api() -> FakeStatusApi:
    return FakeStatusApi(scheduled_job())


@pytest.fixture
def store(api: FakeStatusApi) -> status_store.StatusStore:
    return store_on(api, wall=wall)


@contextlib.asynccontextmanager
async def writing(store: status_store.StatusStore) -> AsyncIterator[None]:
    """The store's writer, started in the test itself: on looptime's fast clock."""
    writer = asyncio.create_task(store.run())
    try:
        yield
    finally:
        store.close()
        await writer


def heartbeats(api: FakeStatusApi) -> list[str]:
    return [run["heartbeatTime"] for patch in api.landed for run in patch.get("active", [])]


def start_a_run(store: status_store.StatusStore) -> None:
    store.run_started(
        JOB,
        records.ActiveRun(slot=EPOCH, scheduled_time=EPOCH, started_at=wall(), replica="r1"),
    )


class TestARunInProgress:
    async def test_is_stated_with_its_replica_and_a_heartbeat(
        self, store: status_store.StatusStore, api: FakeStatusApi
    ) -> None:
        async with writing(store):
            start_a_run(store)
            await asyncio.sleep(6)

        [active] = api.status["active"]
        assert active["replica"] == "r1"
        assert timeline.parse_rfc3339(active["heartbeatTime"]) >= EPOCH

    async def test_gets_a_fresh_heartbeat_every_thirty_seconds_while_it_runs(
        self, store: status_store.StatusStore, api: FakeStatusApi
    ) -> None:
        async with writing(store):
            start_a_run(store)
            await asyncio.sleep(100)

        beats = [timeline.parse_rfc3339(beat) for beat in heartbeats(api)]
        assert len(beats) == 3  # the first statement (at 5 s), then one every 30 s or so
        assert all(
            timedelta(seconds=30) <= later - earlier <= timedelta(seconds=36)
            for earlier, later in itertools.pairwise(beats)
        )

    async def test_costs_no_write_once_it_is_over(
        self, store: status_store.StatusStore, api: FakeStatusApi
    ) -> None:
        async with writing(store):
            start_a_run(store)
            await asyncio.sleep(6)
            store.run_finished(
                JOB,
                records.RunRecord(
                    slot=EPOCH,
                    scheduled_time=EPOCH,
                    result=records.RunResult.SUCCEEDED,
                    started_at=EPOCH,
                    finished_at=wall(),
                    replica="r1",
                ),
            )
            await asyncio.sleep(100)

        assert len(api.landed) == 2
        assert api.status["active"] == []


class TestARunRecordedByAnotherReplica:
    """A slot recorded here is over wherever it ran: a run this replica took over (recorded
    Lost, or followed to its end after its replica stopped) leaves ``active``."""

    @pytest.mark.parametrize("result", [records.RunResult.LOST, records.RunResult.SUCCEEDED])
    async def test_drops_the_other_replicas_entry_of_its_slot_and_keeps_the_others(
        self, result: records.RunResult
    ) -> None:
        later = EPOCH + timedelta(minutes=1)
        entries = [
            {"slot": timeline.rfc3339(slot), "startedAt": timeline.rfc3339(slot), "replica": "r2"}
            for slot in (EPOCH, later)
        ]
        api = FakeStatusApi(scheduled_job(active=entries))
        store = store_on(api, wall=wall)
        async with writing(store):
            store.run_finished(
                JOB,
                records.RunRecord(
                    slot=EPOCH,
                    scheduled_time=EPOCH,
                    result=result,
                    started_at=EPOCH,
                    finished_at=wall(),
                    replica="r1",
                ),
            )
            await asyncio.sleep(6)

        assert [entry["slot"] for entry in api.status["active"]] == [timeline.rfc3339(later)]
