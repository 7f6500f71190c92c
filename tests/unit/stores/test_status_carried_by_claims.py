"""What the status store has pending rides along a status write made anyway (the kubernetes
lock's claim), and is then written by nobody else; what such a write fails to deliver is
written later exactly once, whether it failed before landing or only its answer was lost.

Counts are sums: a run written twice would be counted twice.
"""

import asyncio
import contextlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import status_api_double
from punctual.contracts import records
from punctual.kube import status_api
from punctual.stores import status as status_store
from status_api_double import JOB, FakeStatusApi, scheduled_job, store_on

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
READY = status_store.Condition(
    type="Ready", status=True, reason="Scheduled", message="scheduling slots"
)


def succeeded(slot: datetime = SLOT) -> records.RunRecord:
    return status_api_double.succeeded(slot)


def on_api(api: FakeStatusApi) -> status_store.StatusStore:
    return store_on(api, wall=lambda: SLOT, clock=lambda: 0.0)


async def a_claim(
    api: FakeStatusApi,
    store: status_store.StatusStore,
    *,
    fault: str | None = None,
    meanwhile: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    """A claim's write of what it carries, on the version it was composed on, as the lock
    makes it: its failure (``fault``) goes through the carrier, then the lock handles it."""
    api.faults.extend([fault] if fault else [])
    version = api.body["metadata"]["resourceVersion"]
    with (
        contextlib.suppress(status_api.ConflictError, status_api.UnavailableError),
        store.carry(JOB, api.status) as patch,
    ):
        meanwhile()
        await api.patch(JOB, patch, resource_version=version)
    return patch


async def counted(api: FakeStatusApi, store: status_store.StatusStore) -> int:
    """Succeeded runs on the object once the writer has written everything left."""
    await store._flush(due_only=False)
    return int(api.status.get("counts", {}).get("succeeded", 0))


async def test_a_claim_carries_what_the_replica_has_to_say_and_the_writer_has_nothing_left() -> (
    None
):
    api = FakeStatusApi(scheduled_job())
    store = on_api(api)
    store.set_condition(JOB, READY, generation=1)
    store.run_finished(JOB, succeeded())

    patch = await a_claim(api, store)

    assert patch["counts"]["succeeded"] == 1
    assert [run["slot"] for run in patch["recentRuns"]] == ["2026-11-30T01:30:00Z"]
    assert [condition["reason"] for condition in patch["conditions"]] == [
        "Scheduled",
        "Succeeded",  # LastRunSucceeded, from the run the claim carries
    ]
    assert await counted(api, store) == 1
    assert len(api.landed) == 1


async def test_with_nothing_pending_a_claim_carries_nothing() -> None:
    api = FakeStatusApi(scheduled_job())

    assert await a_claim(api, on_api(api)) == {}


async def test_what_a_refused_claim_carried_is_written_later_once() -> None:
    api = FakeStatusApi(scheduled_job())
    store = on_api(api)
    store.run_finished(JOB, succeeded())

    await a_claim(api, store, fault="conflict")

    assert await counted(api, store) == 1
    assert await counted(api, store) == 1


async def test_a_claim_that_failed_before_landing_loses_nothing() -> None:
    api = FakeStatusApi(scheduled_job())
    store = on_api(api)
    store.run_finished(JOB, succeeded())

    await a_claim(api, store, fault="unavailable")

    assert await counted(api, store) == 1


async def test_a_claim_that_landed_but_whose_answer_was_lost_is_not_counted_twice() -> None:
    api = FakeStatusApi(scheduled_job())
    store = on_api(api)
    store.run_finished(JOB, succeeded())

    await a_claim(api, store, fault="answer lost")

    assert await counted(api, store) == 1
    assert len(api.landed) == 1  # the writer saw the run on the object: nothing left to say


async def test_what_is_in_doubt_rides_the_next_claim_only_if_the_object_does_not_show_it() -> None:
    api = FakeStatusApi(scheduled_job())
    store = on_api(api)
    store.run_finished(JOB, succeeded())
    await a_claim(api, store, fault="unavailable")
    store.run_finished(JOB, succeeded(SLOT + timedelta(seconds=1)))

    patch = await a_claim(api, store)

    assert patch["counts"]["succeeded"] == 2
    assert await counted(api, store) == 2


@pytest.mark.parametrize(
    "fault", [None, "conflict", "unavailable", "answer lost"], ids=lambda f: f or "delivered"
)
async def test_runs_recorded_while_a_claim_is_on_its_way_wait_for_the_next_write(
    fault: str | None,
) -> None:
    api = FakeStatusApi(scheduled_job())
    store = on_api(api)
    store.run_finished(JOB, succeeded())

    await a_claim(
        api,
        store,
        fault=fault,
        meanwhile=lambda: store.run_finished(JOB, succeeded(SLOT + timedelta(seconds=1))),
    )

    assert await counted(api, store) == 2


async def test_a_status_write_cancelled_after_it_landed_is_not_counted_again() -> None:
    api = FakeStatusApi(scheduled_job())
    store = on_api(api)
    store.run_finished(JOB, succeeded())
    api.faults.append("answer held")
    writing = asyncio.create_task(store._flush(due_only=False))
    await api.held.wait()

    writing.cancel()
    await asyncio.gather(writing, return_exceptions=True)

    assert await counted(api, store) == 1
