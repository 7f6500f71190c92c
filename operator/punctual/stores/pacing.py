"""The pacing of the writes one replica starts, shared by the status writer and the Event writer:
how many may start now (``Allowance``), and whose go first (``Waiting``, taken in turns by
``scheduling.turns.FairTurns``).

``Allowance`` is a token bucket refilled at ``rate`` per second up to one tick's worth (no
burst: every second starts ``rate`` writes at most, give or take one tick's). A writer asks it,
at each tick, how many writes may start now, and spends what it starts.

The writers are shared by every namespace, so the writes a tick may start are handed out in
turns across the namespaces with writes waiting (``turns.FairTurns``), not in the order they came: a
namespace with 10,000 writes waiting takes one turn in each round as a namespace with one does,
so it waits for its own writes, and the others do not wait behind them.
"""

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

_T = TypeVar("_T")


class Allowance:
    """Writes that may start now, at most ``rate`` a second, ``tick`` seconds apart."""

    def __init__(self, *, rate: float, tick: float) -> None:
        if rate <= 0:
            raise ValueError("the rate must be positive")
        self._rate = rate
        self._burst = max(1.0, rate * tick)
        self._left = self._burst
        self._refilled: float | None = None

    def allowed(self, now: float) -> int:
        """How many writes may start at ``now`` (a monotonic clock's seconds)."""
        if self._refilled is not None:
            refill = (now - self._refilled) * self._rate
            self._left = min(self._burst, self._left + refill)
        self._refilled = now
        return max(0, math.floor(self._left + 1e-9))  # 0.1 s × 10/s is 0.9999…

    def spend(self, writes: int) -> None:
        self._left -= writes


class Waiting(Generic[_T]):
    """Items waiting for a write, grouped by namespace, each namespace's in the order they came
    (an ordered set per namespace): what ``turns.FairTurns`` takes turns across. An item added again
    keeps its place; one discarded and added again goes to the back."""

    def __init__(self, *, namespace: Callable[[_T], str]) -> None:
        self._namespace = namespace
        self._by_namespace: dict[str, dict[_T, None]] = {}
        self._size = 0

    def add(self, item: _T) -> None:
        items = self._by_namespace.setdefault(self._namespace(item), {})
        if item not in items:
            items[item] = None
            self._size += 1

    def discard(self, item: _T) -> None:
        namespace = self._namespace(item)
        items = self._by_namespace.get(namespace)
        if items is None or item not in items:
            return
        del items[item]
        self._size -= 1
        if not items:
            del self._by_namespace[namespace]

    def namespaces(self) -> Iterable[str]:
        """The namespaces with items waiting (a live view: copy it before changing this)."""
        return self._by_namespace.keys()

    def in_namespace(self, namespace: str) -> Iterable[_T]:
        """The items of ``namespace``, in order (a live view: copy it before changing this)."""
        items = self._by_namespace.get(namespace)
        return () if items is None else items.keys()

    def __contains__(self, item: _T) -> bool:
        return item in self._by_namespace.get(self._namespace(item), {})

    def __iter__(self) -> Iterator[_T]:
        for items in self._by_namespace.values():
            yield from items

    def __len__(self) -> int:
        return self._size
