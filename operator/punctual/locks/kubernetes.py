"""A slot lock with no extra infrastructure: compare-and-swap on the object's status.

Claiming a slot writes ``status.lastScheduleTime = slot`` with the object's resourceVersion as
precondition; the replica whose write lands owns the slot. A conflict only says the object
changed (a status write, another claim): re-read, and the slot belongs to another replica only
if ``lastScheduleTime`` has reached it; otherwise try again.

The claim is a status write made anyway, so it carries what this replica has yet to write
about the job (a ``StatusCarrier``: runs, counts, conditions), in the same patch and under the
same precondition. Status then rides along at claim rate, and the coalesced status writer is
left only what no claim carried: about one API write per run instead of two that race. A claim
cancelled in flight waits for its answer before it stops: only the answer tells whether what
it carried landed (counts are sums: neither lost nor written twice).

Claims of one job take turns, in the order they were made: the high-water mark only moves
forward, so a newer slot landing first would make the older ones unclaimable (slots given up
are claimed oldest first, all at once, to be counted).

A run asked for by hand (``punctual.dev/run-now``) is no slot of the schedule and moves no
high-water mark: its claim is the same compare-and-swap of ``status.lastRunNowToken``, won by
the replica that writes its token there first (and by none once it is there, or while a run of
``recentRuns`` carries it). A backfill (``punctual.dev/backfill``) is claimed as a whole the same
way, on ``status.backfill.token``; each past slot it runs is then the one claimer's to run
unless the status shows it ran already (``recentRuns``) or runs now (``active``): nothing is
written for it, and it moves no high-water mark.
"""

import asyncio
import contextlib
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar, assert_never

from punctual.api import status_reader
from punctual.contracts import protocols, records
from punctual.kube import objects, resources, status_api
from punctual.scheduling import slots, timeline


@dataclass(slots=True)
class _Turn:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0
    """Claims holding or waiting for ``lock``: the turn is dropped when none is left."""


class KubernetesLock:
    def __init__(
        self,
        *,
        api: status_api.StatusApi,
        cache: objects.ObjectCache,
        carrier: protocols.StatusCarrier | None = None,
        attempts: int = 8,
    ) -> None:
        self._api = api
        self._cache = cache
        self._carrier = carrier
        self._attempts = attempts
        self._turns: dict[slots.JobRef, _Turn] = {}

    async def claim(self, claim: records.Claim) -> bool:
        turn = self._turns.setdefault(claim.job, _Turn())
        turn.users += 1
        try:
            async with turn.lock:  # first come, first served
                return await self._claim(claim)
        finally:
            turn.users -= 1
            if not turn.users:
                del self._turns[claim.job]

    async def _claim(self, claim: records.Claim) -> bool:
        try:
            body = self._cache.get(claim.job) or await self._read(claim)
            if isinstance(claim.purpose, records.BackfilledSlot):
                return not _has_run(claim, body)
            for _ in range(self._attempts):
                if not _is_ahead(claim, body):
                    return False
                try:
                    body = await self._write(claim, body)
                except status_api.ConflictError:
                    body = await self._read(claim)
                    continue
                self._cache.remember(body)
                return True
        except status_api.GoneError:
            return False
        except status_api.UnavailableError as error:
            raise protocols.LockUnavailableError(str(error)) from error
        raise protocols.LockUnavailableError(f"{self._attempts} conflicting writes in a row")

    async def _write(self, claim: records.Claim, body: resources.Body) -> resources.Body:
        """One compare-and-swap on ``body``'s version: the slot, and whatever status rides."""
        return await _to_the_end(self._carrying_write(claim, body))

    async def _carrying_write(self, claim: records.Claim, body: resources.Body) -> resources.Body:
        current = status_reader.of(body)
        carried: contextlib.AbstractContextManager[dict[str, Any]] = (
            self._carrier.carry(claim.job, current)
            if self._carrier is not None
            else contextlib.nullcontext({})
        )
        with carried as patch:
            return await self._api.patch(
                claim.job,
                _with_claim(patch, claim),
                resource_version=body["metadata"]["resourceVersion"],
            )

    async def _read(self, claim: records.Claim) -> resources.Body:
        body = await self._api.read(claim.job)
        self._cache.remember(body)
        return body


_T = TypeVar("_T")


async def _to_the_end(work: Awaitable[_T]) -> _T:
    """``work``'s result, awaited to its end even when the caller is cancelled meanwhile; the
    cancellation is raised once it is over."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        if not task.cancelled():
            task.exception()  # retrieved: the carrier has dealt with it
        raise asyncio.CancelledError
    return task.result()


def _with_claim(patch: dict[str, Any], claim: records.Claim) -> dict[str, Any]:
    """``patch`` moving the high-water mark to the claim's slot (or past it, if it moves it
    further), or, for a run asked for by hand or a backfill, stating its token."""
    match claim.purpose:
        case records.RunNow(token=token):
            return {**patch, "lastRunNowToken": token}
        case records.WholeBackfill(token=token) | records.BackfilledSlot(token=token):
            return {**patch, "backfill": {"token": token}}
        case records.ScheduledSlot() | records.CountedMissed():
            slot = claim.slot
            carried = patch.get("lastScheduleTime")
            if carried is not None and timeline.parse_rfc3339(carried) > slot:
                return patch
            return {**patch, "lastScheduleTime": timeline.rfc3339(slot)}
        case _:
            assert_never(claim.purpose)


def _has_run(claim: records.Claim, body: resources.Body) -> bool:
    """Whether the status shows a run of the claim's slot that started, or one in progress."""
    return status_reader.slot_started(status_reader.of(body), claim.slot)


def _is_ahead(claim: records.Claim, body: resources.Body) -> bool:
    """Whether the slot is newer than the object's high-water mark.

    A mark this operator cannot read (written by hand, in a form the API server accepts but
    Python does not read, such as a lowercase ``z``) is no mark: the claim goes ahead and its
    write, under the version it read as precondition, replaces it with a readable one. Refusing
    instead would stop the job's slots for good, with nothing in its status to say why.
    """
    status = status_reader.of(body)
    match claim.purpose:
        case records.WholeBackfill(token=token) | records.BackfilledSlot(token=token):
            return not status_reader.backfill_taken(status, token)
        case records.RunNow(token=token):
            return not status_reader.run_now_taken(status, token)
        case records.ScheduledSlot() | records.CountedMissed():
            pass
        case _:
            assert_never(claim.purpose)
    high_water = status_reader.high_water(status)
    return high_water is None or claim.slot > high_water
