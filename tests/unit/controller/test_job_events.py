"""The ScheduledJob watch's events to the reconciler: an echo of a status write taken in at once,
without a task; any other version observed by a task of its job's, in the order the versions
came; a deletion forgotten; jobs independent of each other; a failure logged, the next version
observed all the same."""

import asyncio
from typing import Any

import pytest

from punctual.controller import job_events
from punctual.kube import resources


def version(name: str, resource_version: int, *, echo: bool = True) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "default",
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": str(resource_version),
        },
        "echo": echo,
    }


class Observer:
    """Takes in at once what is marked ``echo``; observing ``slow`` jobs waits for ``release``;
    a version marked ``fails`` raises."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.release = asyncio.Event()
        self.release.set()

    def took_in(self, body: resources.Body) -> bool:
        if body["echo"]:
            self.calls.append(_call("took_in", body))
        return bool(body["echo"])

    async def observe(self, body: resources.Body) -> None:
        self.calls.append(_call("observe", body))
        if body.get("slow"):
            await self.release.wait()
        if body.get("fails"):
            raise RuntimeError("the API server did not answer")

    async def forget(self, body: resources.Body) -> None:
        self.calls.append(_call("forget", body))


def _call(what: str, body: resources.Body) -> tuple[str, str, str]:
    metadata = body["metadata"]
    return what, metadata["name"], metadata["resourceVersion"]


def held_at(name: str) -> tuple[Observer, job_events.JobEvents]:
    """Events whose first version, of ``name``, is being observed until ``release`` is set."""
    observer = Observer()
    observer.release.clear()
    events = job_events.JobEvents(observer)
    events.on_event("MODIFIED", version(name, 2, echo=False) | {"slow": True})
    return observer, events


async def settled() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_an_echo_is_taken_in_at_once_without_a_task() -> None:
    observer = Observer()
    events = job_events.JobEvents(observer)
    events.on_event("MODIFIED", version("report", 2))
    assert observer.calls == [("took_in", "report", "2")]
    assert not asyncio.all_tasks() - {asyncio.current_task()}


async def test_other_versions_and_a_deletion_are_observed_in_the_order_they_came() -> None:
    observer, events = held_at("report")
    events.on_event("MODIFIED", version("report", 3))  # an echo, but after the version before it
    events.on_event("DELETED", version("report", 4))
    await settled()
    assert observer.calls == [("observe", "report", "2")]
    observer.release.set()
    await settled()
    assert observer.calls == [
        ("observe", "report", "2"),
        ("observe", "report", "3"),
        ("forget", "report", "4"),
    ]


async def test_a_job_at_work_does_not_hold_another() -> None:
    observer, events = held_at("slow")
    events.on_event("MODIFIED", version("quick", 3, echo=False))
    await settled()
    events.on_event("MODIFIED", version("quick", 4))
    assert observer.calls == [
        ("observe", "slow", "2"),
        ("observe", "quick", "3"),
        ("took_in", "quick", "4"),
    ]
    await events.stop()


async def test_a_failed_version_is_logged_and_the_next_one_observed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    observer = Observer()
    events = job_events.JobEvents(observer)
    events.on_event("MODIFIED", version("report", 2, echo=False) | {"fails": True})
    events.on_event("MODIFIED", version("report", 3, echo=False))
    await settled()
    assert observer.calls == [("observe", "report", "2"), ("observe", "report", "3")]
    (failed,) = [record for record in caplog.records if record.exc_info is not None]
    assert failed.getMessage().startswith("observing")
    assert "report" in failed.getMessage()


async def test_stopping_cancels_what_is_at_work() -> None:
    observer, events = held_at("report")
    events.on_event("MODIFIED", version("report", 3, echo=False))
    await settled()
    await events.stop()
    assert observer.calls == [("observe", "report", "2")]
    events.on_event("MODIFIED", version("report", 5, echo=False))  # the job is free again
    await settled()
    assert observer.calls[-1] == ("observe", "report", "5")
