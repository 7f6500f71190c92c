"""A stand-in for ``punctual.kube.status_api.StatusApi``: one ScheduledJob on a make-believe API
server, patched with JSON merge patches under the resourceVersion precondition, as the real one.

Faults are queued for the next patches: ``"conflict"`` (refused with 409 whatever the version),
``"unavailable"`` (refused with a 5xx, nothing written), ``"answer lost"`` (written, then the
answer never comes: a 5xx), ``"answer held"`` (written, then answered once ``release`` is set),
``"refusal held"`` (refused with 409 once ``release`` is set), ``"slow"`` (waits for ``release``,
then lands or not as it would). ``held`` is set when a patch
waits for ``release``. ``meddle`` is another replica writing in between.
"""

import asyncio
import copy
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from punctual.contracts import records
from punctual.kube import objects, status_api
from punctual.scheduling import slots
from punctual.stores import status as status_store

JOB = slots.JobRef(namespace="reports", name="nightly", uid="uid-1")


def scheduled_job(**status_fields: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": JOB.namespace,
            "name": JOB.name,
            "uid": JOB.uid,
            "generation": 1,
            "resourceVersion": "10",
        },
        "spec": {"every": "1s"},
        "status": dict(status_fields),
    }


class FakeStatusApi:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.landed: list[Mapping[str, Any]] = []
        """The status patches that were written, in order (``meddle`` excluded)."""
        self.refused = 0
        self.faults: list[str] = []
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    @property
    def status(self) -> dict[str, Any]:
        return dict(self.body.get("status") or {})

    async def read(self, ref: slots.JobRef) -> dict[str, Any]:
        return copy.deepcopy(self.body)

    async def patch(
        self, ref: slots.JobRef, patch: Mapping[str, Any], *, resource_version: str
    ) -> dict[str, Any]:
        fault = self.faults.pop(0) if self.faults else None
        if fault == "slow":  # on the wire until released; then it lands, or not, as it would
            await self._hold()
        if fault == "refusal held":
            await self._hold()
            fault = "conflict"
        if fault == "unavailable":
            raise status_api.UnavailableError("HTTP 503 Service Unavailable")
        if fault == "conflict" or resource_version != self.body["metadata"]["resourceVersion"]:
            self.refused += 1
            raise status_api.ConflictError("Conflict")
        self._write(patch)
        self.landed.append(copy.deepcopy(dict(patch)))
        if fault == "answer lost":
            raise status_api.UnavailableError("HTTP 504 Gateway Timeout")
        if fault == "answer held":
            await self._hold()
        return copy.deepcopy(self.body)

    async def _hold(self) -> None:
        self.held.set()
        await self.release.wait()

    def meddle(self, **status_fields: Any) -> None:
        """Another replica writes these status fields."""
        self._write(status_fields)

    def _write(self, patch: Mapping[str, Any]) -> None:
        version = str(int(self.body["metadata"]["resourceVersion"]) + 1)
        self.body = {
            **self.body,
            "metadata": {**self.body["metadata"], "resourceVersion": version},
            "status": _merge(self.body.get("status") or {}, patch),
        }


def _merge(target: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """RFC 7386 JSON merge patch."""
    merged = dict(target)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def store_on(
    api: FakeStatusApi,
    *,
    wall: Callable[[], datetime],
    clock: Callable[[], float] | None = None,
    cache: objects.ObjectCache | None = None,
) -> status_store.StatusStore:
    """One replica's status store writing through ``api``, its cache (``cache``, or a new one)
    knowing the object as ``api`` has it."""
    cache = objects.ObjectCache() if cache is None else cache
    cache.remember(api.body)
    return status_store.StatusStore(
        api=api,  # type: ignore[arg-type]
        cache=cache,
        replica="r1",
        wall=wall,
        clock=clock,
    )


def succeeded(slot: datetime) -> records.RunRecord:
    """A run of ``slot`` that succeeded in 40 ms on replica r1."""
    return records.RunRecord(
        slot=slot,
        scheduled_time=slot,
        result=records.RunResult.SUCCEEDED,
        started_at=slot,
        finished_at=slot + timedelta(milliseconds=40),
        message="HTTP 204",
        replica="r1",
    )
