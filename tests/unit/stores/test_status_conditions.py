"""The status store writes a condition, or the schedule and target it shows (``status.schedule``,
``status.target``), only when the object does not already say it.

An operator restart re-observes every object and sets the conditions it had; writing them again
would cost an API write per object, and a watch event per object on every replica, for nothing.
"""

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual.contracts import records
from punctual.kube import objects
from punctual.scheduling import slots
from punctual.stores import status

JOB = slots.JobRef(namespace="reports", name="nightly", uid="uid-1")
NOW = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
READY = status.Condition(type="Ready", status=True, reason="Scheduled", message="scheduling slots")


class FakeStatusApi:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.patches: list[Mapping[str, Any]] = []
        self.written: list[str] = []

    async def read(self, ref: slots.JobRef) -> dict[str, Any]:
        return self.body

    async def patch(
        self, ref: slots.JobRef, patch: Mapping[str, Any], *, resource_version: str
    ) -> dict[str, Any]:
        self.patches.append(patch)
        self.written.append(ref.name)
        version = str(int(resource_version) + 1)
        self.body = {
            **self.body,
            "metadata": {**self.body["metadata"], "resourceVersion": version},
            "status": {**(self.body.get("status") or {}), **patch},
        }
        return self.body


def body(*, generation: int, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {
        "metadata": {
            "namespace": JOB.namespace,
            "name": JOB.name,
            "uid": JOB.uid,
            "generation": generation,
            "resourceVersion": "10",
        },
        "spec": {"every": "10s"},
    }
    if conditions is not None:
        found["status"] = {"observedGeneration": generation, "conditions": conditions}
    return found


def ready_as_written(generation: int, **changes: str) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": "True",
        "reason": "Scheduled",
        "message": "scheduling slots",
        "lastTransitionTime": "2026-11-29T00:00:00Z",
        "observedGeneration": generation,
        **changes,
    }


async def writes_after(
    known: dict[str, Any], condition: status.Condition, *, generation: int
) -> list[Mapping[str, Any]]:
    api = FakeStatusApi(known)
    cache = objects.ObjectCache()
    cache.remember(known)
    store = status.StatusStore(
        api=api,  # type: ignore[arg-type]
        cache=cache,
        replica="r1",
        wall=lambda: NOW,
        tick=timedelta(milliseconds=1),
    )
    store.set_condition(JOB, condition, generation=generation)
    writer = asyncio.create_task(store.run())
    await asyncio.sleep(0.05)
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)
    return api.patches


async def test_a_condition_the_object_already_has_is_not_written_again() -> None:
    known = body(generation=3, conditions=[ready_as_written(3)])

    assert await writes_after(known, READY, generation=3) == []


async def test_a_new_generation_is_written_at_once() -> None:
    known = body(generation=4, conditions=[ready_as_written(3)])

    patches = await writes_after(known, READY, generation=4)

    assert len(patches) == 1
    assert patches[0]["observedGeneration"] == 4


async def test_a_changed_reason_or_message_is_written() -> None:
    for changes in ({"reason": "InvalidSpec", "status": "False"}, {"message": "older words"}):
        known = body(generation=3, conditions=[ready_as_written(3, **changes)])

        patches = await writes_after(known, READY, generation=3)

        assert [c["reason"] for c in patches[0]["conditions"]] == ["Scheduled", "NoRunYet"]


async def test_an_object_without_status_gets_its_conditions() -> None:
    patches = await writes_after(body(generation=1), READY, generation=1)

    assert len(patches) == 1
    assert patches[0]["conditions"][0]["type"] == "Ready"


async def warm_start_writes_after(
    known: dict[str, Any], *not_ready: str | None
) -> list[Mapping[str, Any]]:
    """The patches after the job target's checks at warm slots said ``not_ready``, in turn."""
    api = FakeStatusApi(known)
    cache = objects.ObjectCache()
    cache.remember(known)
    store = status.StatusStore(
        api=api,  # type: ignore[arg-type]
        cache=cache,
        replica="r1",
        wall=lambda: NOW,
        tick=timedelta(milliseconds=1),
    )
    for each in not_ready:
        store.warm_start_checked(JOB, scheduled_time=NOW, not_ready=each)
    writer = asyncio.create_task(store.run())
    await asyncio.sleep(0.05)
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)
    return api.patches


def warm_start_ready(patch: Mapping[str, Any]) -> dict[str, Any]:
    [condition] = [c for c in patch["conditions"] if c["type"] == "WarmStartReady"]
    return {key: condition[key] for key in ("status", "reason", "message")}


class TestWarmStartReady:
    async def test_a_pod_not_at_its_gate_is_false_with_its_reason(self) -> None:
        [patch] = await warm_start_writes_after(
            body(generation=3), "pod p: ErrImagePull (container c)"
        )

        assert warm_start_ready(patch) == {
            "status": "False",
            "reason": "WarmStartNotReady",
            "message": "run due 2026-11-30T01:30:00Z: pod p: ErrImagePull (container c)",
        }
        assert "observedGeneration" not in patch  # of no spec: the controller states that

    async def test_the_next_pod_at_its_gate_makes_it_true_again(self) -> None:
        [patch] = await warm_start_writes_after(body(generation=3), "pod p: Unschedulable", None)

        assert warm_start_ready(patch) == {
            "status": "True",
            "reason": "AtGate",
            "message": status.AT_GATE_MESSAGE,
        }

    async def test_ready_again_and_again_is_written_once(self) -> None:
        said = {
            "type": "WarmStartReady",
            "status": "True",
            "reason": "AtGate",
            "message": status.AT_GATE_MESSAGE,
            "lastTransitionTime": "2026-11-29T00:00:00Z",
        }
        known = body(generation=3, conditions=[ready_as_written(3), said])

        assert await warm_start_writes_after(known, None, None) == []


def ticking_store(
    api: FakeStatusApi, clock: list[float], *, writes_per_second: int = 100
) -> status.StatusStore:
    """A store whose interval is 1 s and tick 100 ms, on the test's clock (``clock[0]``)."""
    return status.StatusStore(
        api=api,  # type: ignore[arg-type]
        cache=objects.ObjectCache(),
        replica="r1",
        wall=lambda: NOW,
        interval=timedelta(seconds=1),
        tick=timedelta(milliseconds=100),
        writes_per_second=writes_per_second,
        clock=lambda: clock[0],
    )


class TestWritesAreSpreadOverTheInterval:
    """Jobs that became pending together are not all written in the same tick."""

    async def test_a_tick_writes_its_share_of_what_is_pending_oldest_first(self) -> None:
        jobs = [
            slots.JobRef(namespace="ns", name=f"job-{i:02d}", uid=f"uid-{i}") for i in range(40)
        ]
        api = FakeStatusApi(body(generation=1))
        clock = [0.0]
        store = ticking_store(api, clock)
        for job in jobs:
            store.slots_missed(job, count=1, newest=NOW)  # something new to say about each
        written: list[list[str]] = []
        for tick in range(1, 13):
            clock[0] = tick / 10
            before = len(api.written)
            await store._flush(due_only=True)
            written.append(api.written[before:])

        per_tick = [len(batch) for batch in written]
        assert per_tick[:9] == [0] * 9  # nothing before the interval is over
        assert written[9] == ["job-00", "job-01", "job-02", "job-03"]  # oldest first
        assert max(per_tick) <= max(status.MIN_BATCH, 40 * 100 // 1000)
        assert per_tick[9:] == [4, 4, 4]  # once due: 40 writes spread over 10 ticks

    async def test_a_condition_change_is_not_held_back_by_the_spread(self) -> None:
        api = FakeStatusApi(body(generation=2))
        store = status.StatusStore(
            api=api,  # type: ignore[arg-type]
            cache=objects.ObjectCache(),
            replica="r1",
            wall=lambda: NOW,
            clock=lambda: 0.0,
        )
        for i in range(10):
            job = slots.JobRef(namespace="ns", name=f"job-{i}", uid=f"uid-{i}")
            store.set_condition(job, READY, generation=2)

        await store._flush(due_only=True)

        assert len(api.patches) == 10


class TestWritesPerSecondAreCapped:
    """One replica writes at most ``writes_per_second`` statuses, whatever the number of jobs."""

    async def test_no_second_starts_more_writes_than_the_cap(self) -> None:
        api, clock = FakeStatusApi(body(generation=1)), [0.0]
        store = ticking_store(api, clock, writes_per_second=10)
        for i in range(100):
            job = slots.JobRef(namespace="ns", name=f"job-{i:02d}", uid=f"uid-{i}")
            store.slots_missed(job, count=1, newest=NOW)
        per_second = []
        for second in range(1, 5):
            before = len(api.written)
            for tick in range(10):
                clock[0] = second + tick / 10
                await store._flush(due_only=True)
            per_second.append(len(api.written) - before)

        assert per_second == [10, 10, 10, 10]

    async def test_condition_changes_go_first(self) -> None:
        api, clock = FakeStatusApi(body(generation=2)), [5.0]
        store = ticking_store(api, clock, writes_per_second=10)
        for i in range(20):
            job = slots.JobRef(namespace="ns", name=f"missed-{i:02d}", uid=f"uid-m{i}")
            store.slots_missed(job, count=1, newest=NOW)
        clock[0] = 10.0
        for i in range(12):
            job = slots.JobRef(namespace="ns", name=f"changed-{i:02d}", uid=f"uid-c{i}")
            store.set_condition(job, READY, generation=2)

        for tick in range(10):
            clock[0] = 10.0 + tick / 10
            await store._flush(due_only=True)

        assert len(api.written) == 10
        assert all(name.startswith("changed-") for name in api.written)

    async def test_a_status_written_rarely_counts_every_run_and_shows_the_newest(self) -> None:
        api, clock = FakeStatusApi(body(generation=1)), [0.0]
        store = ticking_store(api, clock, writes_per_second=10)
        for second in range(50):
            slot = NOW + timedelta(seconds=second)
            store.run_finished(
                JOB,
                records.RunRecord(
                    slot=slot,
                    scheduled_time=slot,
                    result=records.RunResult.FAILED
                    if second == 10
                    else records.RunResult.SUCCEEDED,
                    started_at=slot,
                    finished_at=slot,
                    replica="r1",
                ),
            )
        clock[0] = 2.0

        await store._flush(due_only=True)

        [patch] = api.patches
        assert patch["counts"]["succeeded"] == 49
        assert patch["counts"]["failed"] == 1
        assert [run["slot"][17:19] for run in patch["recentRuns"]] == ["49", "48", "47", "10"]


async def schedule_writes_after(
    known: dict[str, Any], shown: status.Shown, *, with_ready: bool = False
) -> list[Mapping[str, Any]]:
    api = FakeStatusApi(known)
    cache = objects.ObjectCache()
    cache.remember(known)
    store = status.StatusStore(
        api=api,  # type: ignore[arg-type]
        cache=cache,
        replica="r1",
        wall=lambda: NOW,
        tick=timedelta(milliseconds=1),
    )
    store.show(JOB, shown)
    if with_ready:
        store.set_condition(JOB, READY, generation=1)
    writer = asyncio.create_task(store.run())
    await asyncio.sleep(0.05)
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)
    return api.patches


def showing(schedule: str | None, target: str | None = "http") -> dict[str, Any]:
    known = body(generation=1)
    if schedule is not None:
        known["status"] = {"schedule": schedule, "target": target}
    return known


EVERY_10S = status.Shown(schedule="every 10s", target="http")


@pytest.mark.parametrize(
    ("known", "shown", "written"),
    [
        (showing(None), EVERY_10S, [("every 10s", "http")]),
        (showing("30 2 * * *"), EVERY_10S, [("every 10s", "http")]),
        (showing("every 10s", "queue:celery"), EVERY_10S, [("every 10s", "http")]),
        (showing("every 10s"), EVERY_10S, []),
        (showing("every 10s"), status.NOTHING_SHOWN, [(None, None)]),
        (showing(None), status.NOTHING_SHOWN, []),
    ],
    ids=[
        "a new schedule and target are written",
        "a changed schedule is written",
        "a changed target is written",
        "what the object shows is not written again",
        "an invalid spec removes both",
        "nothing to remove: no write",
    ],
)
async def test_the_schedule_and_target_are_written_when_the_object_does_not_show_them(
    known: dict[str, Any], shown: status.Shown, written: list[tuple[str | None, str | None]]
) -> None:
    patches = await schedule_writes_after(known, shown)

    assert [(patch["schedule"], patch["target"]) for patch in patches] == written


async def test_they_go_out_in_the_same_write_as_the_ready_condition() -> None:
    shown = status.Shown(schedule="30 2 * * *", target="queue:rq")
    patches = await schedule_writes_after(showing(None), shown, with_ready=True)

    assert len(patches) == 1
    assert (patches[0]["schedule"], patches[0]["target"]) == ("30 2 * * *", "queue:rq")
    assert patches[0]["conditions"][0]["type"] == "Ready"
