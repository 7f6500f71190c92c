"""Stopping a replica: kopf's cleanup handler stops it, before kopf cancels the tasks it finds
left (every run among them) and before anything the stop needs is closed. The stop ends every
run, records its fate and writes every pending status, letting a status write in flight finish;
``Replica.aclose`` calls it again after kopf returns, as a safety net.

The job runs ``every: 10s`` from 00:00:00: its first slot is 00:00:10.
"""

import asyncio
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import kopf
import pytest
from kopf._cogs.structs import ephemera
from kopf._core.engines import activities, indexing
from kopf._core.intents import causes

from punctual.contracts import records
from punctual.controller import handlers, reconciler
from punctual.kube import objects, status_api
from punctual.locks import memory
from punctual.replica import stopping as replica_stopping
from punctual.runtime import supervisor
from punctual.scheduling import interval, missed, overlap, plans, slots
from punctual.stores import status as status_store

pytestmark = pytest.mark.looptime(start=time.monotonic)

JOB = slots.JobRef(namespace="reports", name="nightly", uid="uid-1")
BASE = datetime(2026, 1, 1, tzinfo=UTC)
EVERY_10S = plans.JobPlan(
    schedule=interval.IntervalSchedule(every=timedelta(seconds=10)),
    offset=timedelta(),
    missed_runs=missed.MissedRuns(
        policy=missed.MissedRunPolicy.SKIP, max_catch_up=1, starting_deadline=None
    ),
    concurrency=overlap.ConcurrencyPolicy.FORBID,
    max_queued=1,
    timeout=timedelta(minutes=10),
)
WRITE_TAKES = 3.0
"""Seconds each status write takes (the API server is slow)."""
LAST_FLUSH = timedelta(seconds=10)
"""How long the last flush may write: three slow writes and more."""
READY = status_store.Condition(type="Ready", status=True, reason="Scheduled", message="ok")
SUSPENDED = status_store.Condition(type="Suspended", status=False, reason="Active", message="")


class SlowStatusApi:
    """The API server: each patch takes ``WRITE_TAKES``; counts the patches cut short."""

    def __init__(self) -> None:
        self.body: dict[str, Any] = {
            "metadata": {"namespace": JOB.namespace, "name": JOB.name, "uid": JOB.uid},
            "status": {},
        }
        self.version = 1
        self.written = 0
        self.cut = 0

    async def read(self, ref: slots.JobRef) -> dict[str, Any]:
        self.body["metadata"]["resourceVersion"] = str(self.version)
        return self.body

    async def patch(
        self, ref: slots.JobRef, patch: Mapping[str, Any], *, resource_version: str
    ) -> dict[str, Any]:
        try:
            await asyncio.sleep(WRITE_TAKES)
        except asyncio.CancelledError:
            self.cut += 1
            raise
        self.version += 1
        self.written += 1
        self.body = {
            "metadata": {**self.body["metadata"], "resourceVersion": str(self.version)},
            "status": {**self.body["status"], **patch},
        }
        return self.body

    @property
    def status(self) -> dict[str, Any]:
        return cast(dict[str, Any], self.body["status"])


async def forever() -> None:
    await asyncio.Event().wait()


async def hangs(context: records.RunContext) -> records.Outcome:
    await forever()
    raise AssertionError("never")


class Clock:
    """The wall clock reads 00:00:00 when the test starts, and advances with the loop's."""

    def __init__(self) -> None:
        self._start: float | None = None

    def _elapsed(self) -> float:
        now = asyncio.get_running_loop().time()
        if self._start is None:
            self._start = now
        return now - self._start

    def wall(self) -> datetime:
        return BASE + timedelta(seconds=self._elapsed())

    async def sleep_until(self, seconds: float) -> None:
        await asyncio.sleep(seconds - self._elapsed())


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def api() -> SlowStatusApi:
    return SlowStatusApi()


@pytest.fixture
def statuses(api: SlowStatusApi, clock: Clock) -> status_store.StatusStore:
    return status_store.StatusStore(
        api=cast(status_api.StatusApi, api),
        cache=objects.ObjectCache(),
        replica="r1",
        wall=clock.wall,
        interval=timedelta(seconds=1),
        last_flush=LAST_FLUSH,
    )


def replica(statuses: status_store.StatusStore, clock: Clock) -> replica_stopping.Stopping:
    """A replica's stop as ``Replica.start`` builds it (started inside the test: looptime's
    clock)."""
    clock.wall()
    scheduler = supervisor.Supervisor(
        wall=clock.wall, lock=memory.MemoryLock(), store=statuses, replica="r1"
    )
    return replica_stopping.Stopping(
        scheduler=scheduler,
        statuses=statuses,
        flusher=asyncio.create_task(statuses.run(), name="status writer"),
        prober=asyncio.create_task(forever(), name="lock health"),
        durable=None,
        durable_tasks=[],
    )


class Replica:
    def __init__(self, *, fails: bool = False) -> None:
        self.fails = fails
        self.stops = 0

    async def stop(self) -> None:
        self.stops += 1
        if self.fails:
            raise RuntimeError("the Redis of run leases is gone")


async def kopf_cleans_up(replica: Replica) -> None:
    """What kopf does on SIGTERM once its own tasks are stopped: run the cleanup activity, with
    its own runner (private, as called in kopf/_core/reactor/running.py; kopf is pinned)."""
    registry = kopf.OperatorRegistry()
    handlers.register(registry, cast(reconciler.Reconciler, None), replica)
    await activities.run_activity(
        lifecycle=kopf.lifecycles.all_at_once,
        registry=registry,
        settings=kopf.OperatorSettings(),
        activity=causes.Activity.CLEANUP,
        indices=indexing.OperatorIndexers().indices,
        memo=ephemera.AnyMemo(kopf.Memo()),
    )


class TestTheCleanupHandler:
    async def test_stops_the_replica(self) -> None:
        replica = Replica()

        await kopf_cleans_up(replica)

        assert replica.stops == 1

    async def test_a_stop_that_fails_is_not_tried_again(self) -> None:
        replica = Replica(fails=True)

        with pytest.raises(activities.ActivityError):
            await kopf_cleans_up(replica)

        assert replica.stops == 1


class TestTheStop:
    async def test_writes_the_fate_of_the_run_it_cancels_before_it_returns(
        self, statuses: status_store.StatusStore, clock: Clock, api: SlowStatusApi
    ) -> None:
        stopping = replica(statuses, clock)
        stopping.scheduler.arm(JOB, EVERY_10S, hangs, resume_after=BASE)
        await clock.sleep_until(15)  # the 00:00:10 run is in flight, and written active

        await stopping.stop()

        [run] = api.status["recentRuns"]
        assert (run["result"], run["message"]) == ("Cancelled", "cancelled: operator stopping")
        assert api.status["counts"]["cancelled"] == 1
        assert api.status["active"] == []
        assert stopping.flusher.done()
        assert not stopping.flusher.cancelled()

    async def test_lets_a_status_write_in_flight_finish_then_writes_what_came_meanwhile(
        self, statuses: status_store.StatusStore, clock: Clock, api: SlowStatusApi
    ) -> None:
        stopping = replica(statuses, clock)
        statuses.set_condition(JOB, READY, generation=1)
        await clock.sleep_until(1)  # Ready is being written
        statuses.set_condition(JOB, SUSPENDED, generation=1)

        await stopping.stop()

        assert api.cut == 0
        assert api.written == 2
        assert [c["type"] for c in api.status["conditions"]] == [
            "Ready",
            "LastRunSucceeded",  # stated with the first write, before any run
            "Suspended",
        ]

    async def test_a_second_stop_the_safety_net_does_nothing_more(
        self, statuses: status_store.StatusStore, clock: Clock, api: SlowStatusApi
    ) -> None:
        stopping = replica(statuses, clock)
        stopping.scheduler.arm(JOB, EVERY_10S, hangs, resume_after=BASE)
        await clock.sleep_until(15)
        await stopping.stop()
        written, before = api.written, asyncio.get_running_loop().time()

        await stopping.stop()

        assert api.written == written
        assert asyncio.get_running_loop().time() == before

    async def test_the_safety_net_finishes_a_stop_cut_short(
        self, statuses: status_store.StatusStore, clock: Clock, api: SlowStatusApi
    ) -> None:
        stopping = replica(statuses, clock)
        stopping.scheduler.arm(JOB, EVERY_10S, hangs, resume_after=BASE)
        await clock.sleep_until(15)
        cleanup = asyncio.create_task(stopping.stop(), name="kopf's cleanup")
        await clock.sleep_until(16)  # the run's fate is being written
        cleanup.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cleanup

        await stopping.stop()

        assert api.cut == 0
        assert api.status["counts"]["cancelled"] == 1
        assert stopping.flusher.done()
        assert not stopping.flusher.cancelled()
