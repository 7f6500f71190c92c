"""Places (of a pool: its connections busy at once), shared fairly by groups of callers.

When groups share a pool, one group that holds its places for long or asks for thousands at
once must not make another group's caller wait behind its own. So:

- a group holds at most ``per_group`` of the places (beneath the pool's own limit): however many
  it holds or wants, a place is left for the others at once;
- a place given back goes to the waiting group holding the fewest places, among equals the one
  served longest ago (round robin by group): a group over its share waits while another below
  it waits too;
- within a group, callers take places in the order they asked.

Taking a place is O(1); giving one back looks at each group waiting.
"""

import asyncio
import collections
from collections.abc import Iterable, Mapping


def may_take(*, held: int, free: int, per_group: int) -> bool:
    """Whether a group holding ``held`` places, none of its calls waiting, takes a place at
    once. Whenever a place is free, no waiting group could take it (a freed place goes to
    the waiting first), so taking it jumps no queue."""
    return free > 0 and held < per_group


def next_group(waiting: Iterable[str], held: Mapping[str, int], *, per_group: int) -> str | None:
    """Which group a freed place goes to, among ``waiting`` (in round-robin order, the one
    served longest ago first): the one holding the fewest places, below ``per_group``;
    ``None`` when every one is at its cap."""
    chosen, fewest = None, per_group
    for group in waiting:
        holding = held.get(group, 0)
        if holding < fewest:
            chosen, fewest = group, holding
    return chosen


class FairPlaces:
    """At most ``limit`` places held at once, at most ``per_group`` of them by one group; the
    others wait, served fairly by group.

    Not ``asyncio.Semaphore``: with many waiters (a burst of thousands of callers), its
    ``acquire`` scans them all on every call (Python 3.11's ``locked()``), and it knows nothing
    of groups.
    """

    def __init__(self, *, limit: int, per_group: int) -> None:
        self._per_group = min(per_group, limit)
        self._free = limit
        self._held: dict[str, int] = {}
        self._waiting: dict[str, collections.deque[asyncio.Future[None]]] = {}
        """Each group's waiting calls, oldest first; in round-robin order (insertion order:
        a group served is moved to the end)."""

    def try_acquire(self, group: str) -> bool:
        """Take a place for ``group`` if it may have one at once (see ``may_take``), never
        waiting: whether it took one. A caller that must tell why it waits asks this first."""
        held = self._held.get(group, 0)
        if self._still_waiting(group) or not may_take(
            held=held, free=self._free, per_group=self._per_group
        ):
            return False
        self._free -= 1
        self._held[group] = held + 1
        return True

    async def acquire(self, group: str) -> None:
        if self.try_acquire(group):
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(group, collections.deque()).append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(group)  # handed a place just as it was cancelled: pass it on
            raise

    def release(self, group: str) -> None:
        held = self._held[group] - 1
        if held:
            self._held[group] = held
        else:
            del self._held[group]
        self._forget_cancelled()
        chosen = next_group(self._waiting, self._held, per_group=self._per_group)
        if chosen is None:
            self._free += 1
            return
        waiters = self._waiting.pop(chosen)
        waiter = waiters.popleft()
        if waiters:
            self._waiting[chosen] = waiters  # to the end: served last among those waiting
        self._held[chosen] = self._held.get(chosen, 0) + 1
        waiter.set_result(None)

    def _forget_cancelled(self) -> None:
        for group in list(self._waiting):
            self._still_waiting(group)

    def _still_waiting(self, group: str) -> bool:
        """Whether a call of ``group`` waits, once the cancelled ones at the head of its
        queue are dropped (a future still waiting is never done), and the queue with them."""
        waiters = self._waiting.get(group)
        if waiters is None:
            return False
        while waiters and waiters[0].done():
            waiters.popleft()
        if not waiters:
            del self._waiting[group]
        return bool(waiters)
