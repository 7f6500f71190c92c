"""One timer for many waiters, toward wall-clock targets, on the loop's monotonic clock.

Every waiter parks a future in one heap; a single loop callback sleeps toward the earliest
target in bounded chunks (at most ``near_chunk`` when the target is under ``near`` away, at
most ``far_chunk`` otherwise) and re-reads the wall clock each time, so a wall-clock jump (NTP
step, VM resume) moves every wake-up with it. Thousands of jobs cost one pending timer, not one
per job.

The waiters due at once are woken in turns across their namespaces
(``scheduling.turns.FairTurns``), not in the order they parked, and ``WAKE_ROUND`` at a time
with a turn of the event loop in between. What a waiter does next (a slot's claim, its run)
queues behind the work of those woken before it: one tenant's thousand jobs due at the same
instant as another's twenty (``every`` slots are aligned to the epoch) must neither go first
nor be started all at once, their claims and runs filling the loop's queue ahead of the
other's. When waiters of several namespaces are due at once, the first round ends where only
the largest namespace has waiters left, and its rest waits ``HEAD_START``: the smaller
namespaces' claims, their answers and their runs take several turns of the loop each, and a
round of the larger one's woken between those turns would put its work ahead of theirs again.
"""

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta

from punctual.contracts import protocols
from punctual.scheduling import turns

WAKE_ROUND = 100
"""Waiters woken in one turn of the event loop at most: the first round's claims go out, and
their answers come back, before the rest of a burst is started."""

HEAD_START = timedelta(milliseconds=20)
"""How long the rest of the largest namespace's waiters due at once wait after the first round
took the other namespaces' waiters: enough for those to claim and start their runs on a busy
replica, little against the spread of a burst big enough to be split."""


class WallTimer:
    def __init__(
        self,
        *,
        wall: protocols.WallClock,
        near: timedelta = timedelta(minutes=1),
        near_chunk: timedelta = timedelta(seconds=1),
        far_chunk: timedelta = timedelta(minutes=1),
    ) -> None:
        self._wall = wall
        self._near = near
        self._near_chunk = near_chunk.total_seconds()
        self._far_chunk = far_chunk.total_seconds()
        self._waiters: list[tuple[datetime, int, str, asyncio.Future[None]]] = []
        self._sequence = itertools.count()
        self._handle: asyncio.TimerHandle | None = None
        self._turns = turns.FairTurns()
        self._due: dict[str, deque[asyncio.Future[None]]] = {}
        """Waiters due and not woken yet, by namespace, each namespace's in the order they
        parked."""
        self._releasing: asyncio.Handle | None = None

    async def wait_until(self, target: datetime, *, namespace: str = "") -> None:
        """Return once the wall clock reads ``target`` or later; among the waiters due at
        once, in turns across ``namespace``s."""
        if target <= self._wall():
            return
        waiter = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (target, next(self._sequence), namespace, waiter))
        if self._waiters[0][3] is waiter:
            self._rearm()
        await waiter

    def _rearm(self) -> None:
        while self._waiters and self._waiters[0][3].done():  # cancelled waiters leave lazily
            heapq.heappop(self._waiters)
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if not self._waiters:
            return
        remaining = self._waiters[0][0] - self._wall()
        limit = self._near_chunk if remaining < self._near else self._far_chunk
        delay = min(max(remaining.total_seconds(), 0.0), limit)
        self._handle = asyncio.get_running_loop().call_later(delay, self._wake)

    def _wake(self) -> None:
        self._handle = None
        now = self._wall()
        while self._waiters and self._waiters[0][0] <= now:
            _, _, namespace, waiter = heapq.heappop(self._waiters)
            self._due.setdefault(namespace, deque()).append(waiter)
        if self._due and self._releasing is None:  # else the round on its way takes them in turn
            self._release(first=True)
        self._rearm()

    def _release(self, *, first: bool = False) -> None:
        """Wake a round of the waiters due, in turns; the rest at the loop's next turn, or after
        ``HEAD_START`` when this first round took every namespace's waiters but the largest's."""
        self._releasing = None
        split = first and len(self._due) > 1
        limit = WAKE_ROUND
        if split:
            limit = min(limit, _until_one_namespace_is_left(self._due.values()))
        for waiter in self._turns.take(
            {namespace: _taking(waiters) for namespace, waiters in self._due.items()},
            limit=limit,
        ):
            waiter.set_result(None)
        self._due = {namespace: waiters for namespace, waiters in self._due.items() if waiters}
        if not self._due:
            return
        loop = asyncio.get_running_loop()
        if split and len(self._due) == 1:
            self._releasing = loop.call_later(HEAD_START.total_seconds(), self._release)
        else:
            self._releasing = loop.call_soon(self._release)


def _until_one_namespace_is_left(due: Iterable[deque[asyncio.Future[None]]]) -> int:
    """How many waiters turns take before only the namespace with the most is left: each
    namespace's all, but the largest's only as many as the next largest has."""
    sizes = sorted(len(waiters) for waiters in due)
    return sum(sizes[:-1]) + sizes[-2]


def _taking(waiters: deque[asyncio.Future[None]]) -> Iterator[asyncio.Future[None]]:
    """The waiters still waiting, each taken off ``waiters`` as it is read (cancelled ones are
    dropped on the way)."""
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            yield waiter
