"""One timer for many waiters, toward wall-clock targets, on the loop's monotonic clock.

Every waiter parks a future in one heap; a single loop callback sleeps toward the earliest
target in bounded chunks (at most ``near_chunk`` when the target is under ``near`` away, at
most ``far_chunk`` otherwise) and re-reads the wall clock each time, so a wall-clock jump (NTP
step, VM resume) moves every wake-up with it. Thousands of jobs cost one pending timer, not one
per job.
"""

import asyncio
import heapq
import itertools
from datetime import datetime, timedelta

from punctual.contracts import protocols


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
        self._waiters: list[tuple[datetime, int, asyncio.Future[None]]] = []
        self._sequence = itertools.count()
        self._handle: asyncio.TimerHandle | None = None

    async def wait_until(self, target: datetime) -> None:
        """Return once the wall clock reads ``target`` or later."""
        if target <= self._wall():
            return
        waiter = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (target, next(self._sequence), waiter))
        if self._waiters[0][2] is waiter:
            self._rearm()
        await waiter

    def _rearm(self) -> None:
        while self._waiters and self._waiters[0][2].done():  # cancelled waiters leave lazily
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
            _, _, waiter = heapq.heappop(self._waiters)
            if not waiter.done():
                waiter.set_result(None)
        self._rearm()
