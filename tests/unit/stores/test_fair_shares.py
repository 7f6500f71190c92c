"""One namespace's writes never hold up another's: the status and Event writers hand out the
writes a tick may start in turns across the namespaces with writes waiting, not in the order
they came. A namespace over its share waits for its own writes; the others go at once."""

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import pytest

from punctual.aio import pacing
from punctual.contracts import records
from punctual.kube import events, objects
from punctual.scheduling import slots
from punctual.stores import events as event_store
from punctual.stores import status as status_store

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)


class TestWhatWaits:
    def test_each_namespace_keeps_the_order_items_came_in(self) -> None:
        waiting = pacing.Waiting[str](group=lambda item: item[0])
        for item in ["a1", "b1", "a2", "a1", "b2"]:
            waiting.add(item)

        assert list(waiting.groups()) == ["a", "b"]
        assert (list(waiting.in_group("a")), list(waiting.in_group("b"))) == (
            ["a1", "a2"],
            ["b1", "b2"],
        )
        assert (len(waiting), "a2" in waiting, "c1" in waiting) == (4, True, False)

    def test_an_item_discarded_and_added_again_goes_to_the_back(self) -> None:
        waiting = pacing.Waiting[str](group=lambda item: item[0])
        for item in ["a1", "a2", "b1"]:
            waiting.add(item)

        waiting.discard("a1")
        waiting.add("a1")
        waiting.discard("b1")

        assert list(waiting) == ["a2", "a1"]
        assert list(waiting.groups()) == ["a"]  # none left in b: forgotten


# The writers: namespace A has 10,000 writes waiting, B one that came after them.

LOOPTIME = pytest.mark.looptime(start=time.monotonic, noop_cycles=1)

A_JOBS = [slots.JobRef(namespace="tenant-a", name=f"job-{i}", uid=f"a-{i}") for i in range(10_000)]
B_JOB = slots.JobRef(namespace="tenant-b", name="report", uid="b-1")


def body_of(job: slots.JobRef) -> dict[str, Any]:
    return {
        "apiVersion": "punctual.dev/v1",
        "kind": "ScheduledJob",
        "metadata": {
            "namespace": job.namespace,
            "name": job.name,
            "uid": job.uid,
            "generation": 1,
            "resourceVersion": "1",
        },
        "spec": {"every": "1s"},
        "status": {},
    }


class Writer(Protocol):
    async def run(self) -> None: ...

    def close(self) -> None: ...


@contextlib.asynccontextmanager
async def writing(writer: Writer) -> AsyncIterator[None]:
    """The writer, started in the test itself: on looptime's fast clock."""
    task = asyncio.create_task(writer.run())
    try:
        yield
    finally:
        writer.close()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class StatusesWritten:
    """The API server's side of status writes: when each job's was written."""

    def __init__(self) -> None:
        self.at: dict[slots.JobRef, list[float]] = {}

    async def read(self, ref: slots.JobRef) -> dict[str, Any]:
        return body_of(ref)

    async def patch(
        self, ref: slots.JobRef, patch: Mapping[str, Any], *, resource_version: str
    ) -> dict[str, Any]:
        self.at.setdefault(ref, []).append(asyncio.get_running_loop().time())
        return body_of(ref)

    def per_second(self, *, start: float, until: float) -> dict[int, int]:
        counted: dict[int, int] = {}
        for times in self.at.values():
            for at in times:
                if at < until:
                    counted[int(at - start)] = counted.get(int(at - start), 0) + 1
        return counted


def failed(replica: str = "r1") -> records.RunRecord:
    return records.RunRecord(
        slot=SLOT,
        scheduled_time=SLOT,
        result=records.RunResult.FAILED,
        started_at=SLOT,
        finished_at=SLOT + timedelta(seconds=1),
        message="HTTP 500",
        replica=replica,
    )


@LOOPTIME
class TestStatusWrites:
    async def test_one_write_of_b_goes_within_a_tick_of_its_interval_behind_a_s_10000(
        self,
    ) -> None:
        api = StatusesWritten()
        store = status_store.StatusStore(
            api=api,  # type: ignore[arg-type]  # the double has StatusApi's two methods
            cache=objects.ObjectCache(),
            replica="r1",
            wall=lambda: SLOT,
            interval=timedelta(seconds=5),
            writes_per_second=100,
            last_flush=timedelta(),  # the stop's last writes are another test's
        )
        start = asyncio.get_running_loop().time()
        async with writing(store):
            for job in A_JOBS:
                store.run_finished(job, failed())
            await asyncio.sleep(1)
            store.run_finished(B_JOB, failed())  # after all of A's: the back of a FIFO
            await asyncio.sleep(10)
            end = asyncio.get_running_loop().time()

        [b_written] = api.at[B_JOB]
        assert b_written - (start + 1) <= 5 + 0.5  # its interval, then a tick or two
        per_second = api.per_second(start=start, until=end)
        assert max(per_second.values()) <= 100  # the cap still holds
        assert sum(per_second.values()) >= 500  # A is written meanwhile, at the cap


class EventsWritten:
    """The API server's side of Event writes: when each job's was created."""

    def __init__(self) -> None:
        self.created: dict[str, float] = {}

    async def create(self, occurrence: events.Occurrence) -> str:
        name = f"{occurrence.regarding['namespace']}/{occurrence.regarding['name']}"
        self.created[name] = asyncio.get_running_loop().time()
        return name

    async def recount(self, name: str, occurrence: events.Occurrence) -> None:
        pass


@LOOPTIME
class TestEventWrites:
    async def test_b_s_first_warning_goes_within_a_tick_or_two_behind_a_s_failing_jobs(
        self,
    ) -> None:
        cache = objects.ObjectCache()
        for job in [*A_JOBS, B_JOB]:
            cache.remember(body_of(job))
        api = EventsWritten()
        store = event_store.EventStore(
            cache=cache,
            api=api,  # type: ignore[arg-type]  # the double has EventsApi's two methods
            wall=lambda: SLOT,
            writes_per_second=10,
        )
        start = asyncio.get_running_loop().time()
        async with writing(store):
            for job in A_JOBS:
                store.run_finished(job, failed())
            await asyncio.sleep(1)
            store.run_finished(B_JOB, failed())
            await asyncio.sleep(5)

        assert api.created["tenant-b/report"] - (start + 1) <= 0.5
        assert len(api.created) <= 6 * 10 + 1  # A's go on at the cap, no faster
