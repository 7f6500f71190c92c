"""The places of one origin (its connections busy at once), shared fairly by the namespaces
calling it.

One operator serves every tenant, and tenants may call the same origin (a shared gateway, one
company service): a namespace whose target hangs, or that fires thousands of slots at once,
must not make another namespace's call wait behind its own. So:

- a namespace holds at most ``per_namespace`` of the origin's places (beneath the origin's own
  limit): however many it holds or wants, a place is left for the others at once;
- a place given back goes to the waiting namespace holding the fewest places, among equals the
  one served longest ago (round robin by namespace): a namespace over its share waits while
  another below it waits too;
- within a namespace, calls take places in the order they asked.

Taking a place is O(1); giving one back looks at each namespace waiting for the origin.
"""

import asyncio
import collections
from collections.abc import Iterable, Mapping


def may_take(*, held: int, free: int, per_namespace: int) -> bool:
    """Whether a namespace holding ``held`` places, none of its calls waiting, takes a place at
    once. Whenever a place is free, no waiting namespace could take it (a freed place goes to
    the waiting first), so taking it jumps no queue."""
    return free > 0 and held < per_namespace


def next_namespace(
    waiting: Iterable[str], held: Mapping[str, int], *, per_namespace: int
) -> str | None:
    """Which namespace a freed place goes to, among ``waiting`` (in round-robin order, the one
    served longest ago first): the one holding the fewest places, below ``per_namespace``;
    ``None`` when every one is at its cap."""
    chosen, fewest = None, per_namespace
    for namespace in waiting:
        holding = held.get(namespace, 0)
        if holding < fewest:
            chosen, fewest = namespace, holding
    return chosen


class OriginPlaces:
    """At most ``limit`` places of one origin held at once, at most ``per_namespace`` of them
    by one namespace; the others wait, served fairly by namespace.

    Not ``asyncio.Semaphore``: with many waiters (a burst of thousands of calls to one origin),
    its ``acquire`` scans them all on every call (Python 3.11's ``locked()``), and it knows
    nothing of namespaces.
    """

    def __init__(self, *, limit: int, per_namespace: int) -> None:
        self._per_namespace = min(per_namespace, limit)
        self._free = limit
        self._held: dict[str, int] = {}
        self._waiting: dict[str, collections.deque[asyncio.Future[None]]] = {}
        """Each namespace's waiting calls, oldest first; in round-robin order (insertion order:
        a namespace served is moved to the end)."""

    async def acquire(self, namespace: str) -> None:
        held = self._held.get(namespace, 0)
        if not self._still_waiting(namespace) and may_take(
            held=held, free=self._free, per_namespace=self._per_namespace
        ):
            self._free -= 1
            self._held[namespace] = held + 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(namespace, collections.deque()).append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(namespace)  # handed a place just as it was cancelled: pass it on
            raise

    def release(self, namespace: str) -> None:
        held = self._held[namespace] - 1
        if held:
            self._held[namespace] = held
        else:
            del self._held[namespace]
        self._forget_cancelled()
        chosen = next_namespace(self._waiting, self._held, per_namespace=self._per_namespace)
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
        for namespace in list(self._waiting):
            self._still_waiting(namespace)

    def _still_waiting(self, namespace: str) -> bool:
        """Whether a call of ``namespace`` waits, once the cancelled ones at the head of its
        queue are dropped (a future still waiting is never done), and the queue with them."""
        waiters = self._waiting.get(namespace)
        if waiters is None:
            return False
        while waiters and waiters[0].done():
            waiters.popleft()
        if not waiters:
            del self._waiting[namespace]
        return bool(waiters)
