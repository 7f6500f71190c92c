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
forward, so a newer slot landing first would make the older ones unclaimable. Slots given up
are claimed all at once, only to be counted (``CountedMissed``): the claims of one job waiting
meanwhile are one write, of the newest of them, and each is won if it is past the mark that
write replaced. Claimed one write each, a loop that fell behind wrote up to 16 slots given up
before the slot it runs, and so fell further behind.

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
import dataclasses
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime
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
    counting: dict[datetime, "asyncio.Future[bool]"] = field(default_factory=dict)
    """The slots claimed to be counted missed that wait for their answer: the first of them to
    take the turn claims them all in one write."""


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
            if isinstance(claim.purpose, records.CountedMissed) and claim.slot not in turn.counting:
                return await self._count(claim, turn)
            async with turn.lock:  # first come, first served
                return await self._claim(claim)
        finally:
            turn.users -= 1
            if not turn.users:
                del self._turns[claim.job]

    async def _count(self, claim: records.Claim, turn: _Turn) -> bool:
        """``claim``'s answer, from the one write that claims every slot of the job waiting to
        be counted when the first of them takes the turn. That write goes to its end even when
        its claimer is cancelled meanwhile: the others' answers are in it."""
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        turn.counting[claim.slot] = answer
        try:
            async with turn.lock:
                if not answer.done():
                    await asyncio.sleep(0)  # the claims made together with this one join it
                    waiting = {slot: a for slot, a in turn.counting.items() if not a.done()}
                    await _to_the_end(self._answer(claim, waiting))
            return await answer
        finally:
            del turn.counting[claim.slot]
            if answer.done() and not answer.cancelled():
                answer.exception()  # retrieved, also when this claim was cancelled
            else:
                answer.cancel()

    async def _answer(
        self, claim: records.Claim, waiting: dict[datetime, "asyncio.Future[bool]"]
    ) -> None:
        """Each of ``waiting``'s answers, or the one error of their claim."""
        try:
            won = await self._claim_past_mark(claim, waiting)
        except protocols.LockUnavailableError as error:
            for answer in waiting.values():
                if not answer.done():
                    answer.set_exception(protocols.LockUnavailableError(str(error)))
            return
        for slot, answer in waiting.items():
            if not answer.done():
                answer.set_result(slot in won)

    async def _claim_past_mark(
        self, claim: records.Claim, candidates: Collection[datetime]
    ) -> frozenset[datetime]:
        """Which of ``candidates`` are won by one write of the newest of those past the
        high-water mark (``claim`` is one of them, to be counted missed)."""

        def newest_past(status: status_reader.Status) -> records.Claim | None:
            won = past_mark(candidates, high_water=status_reader.high_water(status))
            return dataclasses.replace(claim, slot=max(won)) if won else None

        replaced = await self._swap(claim, newest_past)
        if replaced is None:
            return frozenset()
        return past_mark(candidates, high_water=status_reader.high_water(replaced))

    async def _claim(self, claim: records.Claim) -> bool:
        if isinstance(claim.purpose, records.BackfilledSlot):
            try:
                body = self._cache.get(claim.job) or await self._read(claim)
            except status_api.GoneError:
                return False
            except status_api.UnavailableError as error:
                raise protocols.LockUnavailableError(str(error)) from error
            return not _has_run(claim, body)
        ahead = await self._swap(claim, lambda status: claim if _is_ahead(claim, status) else None)
        return ahead is not None

    async def _swap(
        self,
        claim: records.Claim,
        decide: Callable[[status_reader.Status], records.Claim | None],
    ) -> status_reader.Status | None:
        """The status that the write of what ``decide`` makes of the object's status replaced
        (None: ``decide`` wrote nothing, or the object is gone). A conflict only says the
        object changed: decide again on a fresh read."""
        try:
            body = self._cache.get(claim.job) or await self._read(claim)
            for _ in range(self._attempts):
                status = status_reader.of(body)
                writing = decide(status)
                if writing is None:
                    return None
                try:
                    body = await self._write(writing, body)
                except status_api.ConflictError:
                    body = await self._read(claim)
                    continue
                self._cache.remember(body)
                return status
        except status_api.GoneError:
            return None
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


def past_mark(
    candidates: Collection[datetime], *, high_water: datetime | None
) -> frozenset[datetime]:
    """The slots a write moving the high-water mark from ``high_water`` to the newest of them
    wins: those past it (all of them when there is no mark)."""
    return frozenset(slot for slot in candidates if high_water is None or slot > high_water)


def _has_run(claim: records.Claim, body: resources.Body) -> bool:
    """Whether the status shows a run of the claim's slot that started, or one in progress."""
    return status_reader.slot_started(status_reader.of(body), claim.slot)


def _is_ahead(claim: records.Claim, status: status_reader.Status) -> bool:
    """Whether the slot is newer than the object's high-water mark.

    A mark this operator cannot read (written by hand, in a form the API server accepts but
    Python does not read, such as a lowercase ``z``) is no mark: the claim goes ahead and its
    write, under the version it read as precondition, replaces it with a readable one. Refusing
    instead would stop the job's slots for good, with nothing in its status to say why.
    """
    match claim.purpose:
        case records.WholeBackfill(token=token) | records.BackfilledSlot(token=token):
            return not status_reader.backfill_taken(status, token)
        case records.RunNow(token=token):
            return not status_reader.run_now_taken(status, token)
        case records.ScheduledSlot() | records.CountedMissed():
            pass
        case _:
            assert_never(claim.purpose)
    return bool(past_mark((claim.slot,), high_water=status_reader.high_water(status)))
