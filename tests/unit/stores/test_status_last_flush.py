"""The status writer's last flush, at a replica's stop, is bounded in time: it writes what
matters most first (condition changes, then the jobs whose object still shows a run in
progress), then the others oldest first, and says how many it could not write. A replica with
10,000 jobs has nearly all of them pending: writing them all took longer than a stop may."""

import asyncio
import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from punctual.contracts import records
from punctual.kube import objects, status_api
from punctual.scheduling import slots
from punctual.stores import status as status_store

pytestmark = pytest.mark.looptime(start=time.monotonic)

EPOCH = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
WRITE_TAKES = 1.0
"""Seconds each status write takes."""
CONCURRENCY = 4
LAST_FLUSH = timedelta(seconds=2.5)
"""Room for two rounds of ``CONCURRENCY`` writes, not three."""
READY = status_store.Condition(type="Ready", status=True, reason="Scheduled", message="")


def job(index: int) -> slots.JobRef:
    return slots.JobRef(namespace="reports", name=f"job-{index:02d}", uid=f"uid-{index}")


def body(ref: slots.JobRef, **status: Any) -> dict[str, Any]:
    metadata = {"namespace": ref.namespace, "name": ref.name, "uid": ref.uid}
    return {"metadata": {**metadata, "resourceVersion": "1", "generation": 1}, "status": status}


class SlowStatusApi:
    """Every patch takes ``WRITE_TAKES``; the names of the jobs written, in order."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.hangs = False
        """Every patch waits for ever (the API server stalled)."""

    async def read(self, ref: slots.JobRef) -> dict[str, Any]:
        raise AssertionError("every body is cached")

    async def patch(
        self, ref: slots.JobRef, patch: Mapping[str, Any], *, resource_version: str
    ) -> dict[str, Any]:
        await asyncio.sleep(WRITE_TAKES)
        if self.hangs:
            await asyncio.Event().wait()
        self.written.append(ref.name)
        answer = body(ref, **patch.get("status", {}))
        answer["metadata"]["resourceVersion"] = "2"
        return answer


def ran(store: status_store.StatusStore, ref: slots.JobRef) -> None:
    store.run_finished(
        ref,
        records.RunRecord(
            slot=EPOCH,
            scheduled_time=EPOCH,
            result=records.RunResult.SUCCEEDED,
            started_at=EPOCH,
            finished_at=EPOCH,
            replica="r1",
        ),
    )


@pytest.fixture
def api() -> SlowStatusApi:
    return SlowStatusApi()


@pytest.fixture
def cache() -> objects.ObjectCache:
    return objects.ObjectCache()


@pytest.fixture
def store(api: SlowStatusApi, cache: objects.ObjectCache) -> status_store.StatusStore:
    return status_store.StatusStore(
        api=cast(status_api.StatusApi, api),
        cache=cache,
        replica="r1",
        wall=lambda: EPOCH,
        concurrency=CONCURRENCY,
        last_flush=LAST_FLUSH,
    )


async def stop(store: status_store.StatusStore) -> float:
    """Close the writer before its first tick (everything is left for the last flush); the
    seconds until it returned."""
    loop = asyncio.get_running_loop()
    writer = asyncio.create_task(store.run())
    store.close()
    started = loop.time()
    await writer
    return loop.time() - started


class TestTheLastFlush:
    async def test_writes_everything_pending_when_it_has_the_time(
        self, store: status_store.StatusStore, api: SlowStatusApi, cache: objects.ObjectCache
    ) -> None:
        for index in range(CONCURRENCY):
            cache.remember(body(job(index)))
            ran(store, job(index))

        await stop(store)

        assert sorted(api.written) == [job(index).name for index in range(CONCURRENCY)]

    async def test_stops_writing_at_its_bound_and_says_how_many_it_left(
        self,
        store: status_store.StatusStore,
        api: SlowStatusApi,
        cache: objects.ObjectCache,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        for index in range(20):
            cache.remember(body(job(index)))
            ran(store, job(index))

        took = await stop(store)

        assert took == pytest.approx(LAST_FLUSH.total_seconds())
        assert len(api.written) == 2 * CONCURRENCY
        [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert "the status of 12 of 20 jobs not written within 0:00:02.500000" in warning.message

    async def test_writes_condition_changes_first_then_the_jobs_shown_running(
        self, store: status_store.StatusStore, api: SlowStatusApi, cache: objects.ObjectCache
    ) -> None:
        for index in range(20):
            cache.remember(body(job(index)))
            ran(store, job(index))
        running = job(18)
        cache.remember(body(running, active=[{"slot": "2026-11-30T02:00:00Z"}]))
        changed = job(19)
        store.set_condition(changed, READY, generation=1)

        await stop(store)

        oldest = {job(index).name for index in range(2 * CONCURRENCY - 2)}
        assert {changed.name, running.name} <= set(api.written[:CONCURRENCY])
        assert set(api.written) == {changed.name, running.name, *oldest}

    async def test_counts_a_write_still_in_flight_at_the_close_against_its_bound(
        self,
        store: status_store.StatusStore,
        api: SlowStatusApi,
        cache: objects.ObjectCache,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        api.hangs = True
        changed = job(0)
        cache.remember(body(changed))
        store.set_condition(changed, READY, generation=1)
        loop = asyncio.get_running_loop()
        writer = asyncio.create_task(store.run())
        await asyncio.sleep(0.5)  # the condition's write is on the wire, and stays there
        ran(store, job(0))

        store.close()
        closed = loop.time()
        await writer

        assert loop.time() - closed == pytest.approx(LAST_FLUSH.total_seconds())
        assert api.written == []
        assert any("not written within" in r.message for r in caplog.records)
