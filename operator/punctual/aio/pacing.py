"""Pacing work started at each tick of a loop: how much may start now (``Allowance``), and
what waits, grouped so that the groups can be served in turns (``Waiting``).

``Allowance`` is a token bucket refilled at ``rate`` per second up to one tick's worth (no
burst: every second starts ``rate`` items at most, give or take one tick's). A loop asks it, at
each tick, how many may start now, and spends what it starts.

``Waiting`` keeps each group's items in the order they came, so that a loop taking one item per
group in turn never makes a group with one item wait behind a group with thousands.
"""

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

_T = TypeVar("_T")


class Allowance:
    """Items that may start now, at most ``rate`` a second, ``tick`` seconds apart."""

    def __init__(self, *, rate: float, tick: float) -> None:
        if rate <= 0:
            raise ValueError("the rate must be positive")
        self._rate = rate
        self._burst = max(1.0, rate * tick)
        self._left = self._burst
        self._refilled: float | None = None

    def allowed(self, now: float) -> int:
        """How many items may start at ``now`` (a monotonic clock's seconds)."""
        if self._refilled is not None:
            refill = (now - self._refilled) * self._rate
            self._left = min(self._burst, self._left + refill)
        self._refilled = now
        return max(0, math.floor(self._left + 1e-9))  # 0.1 s × 10/s is 0.9999…

    def spend(self, started: int) -> None:
        self._left -= started


class Waiting(Generic[_T]):
    """Items waiting, grouped by ``group``, each group's in the order they came (an ordered set
    per group). An item added again keeps its place; one discarded and added again goes to the
    back."""

    def __init__(self, *, group: Callable[[_T], str]) -> None:
        self._group = group
        self._by_group: dict[str, dict[_T, None]] = {}
        self._size = 0

    def add(self, item: _T) -> None:
        items = self._by_group.setdefault(self._group(item), {})
        if item not in items:
            items[item] = None
            self._size += 1

    def discard(self, item: _T) -> None:
        group = self._group(item)
        items = self._by_group.get(group)
        if items is None or item not in items:
            return
        del items[item]
        self._size -= 1
        if not items:
            del self._by_group[group]

    def groups(self) -> Iterable[str]:
        """The groups with items waiting (a live view: copy it before changing this)."""
        return self._by_group.keys()

    def in_group(self, group: str) -> Iterable[_T]:
        """The items of ``group``, in order (a live view: copy it before changing this)."""
        items = self._by_group.get(group)
        return () if items is None else items.keys()

    def __contains__(self, item: _T) -> bool:
        return item in self._by_group.get(self._group(item), {})

    def __iter__(self) -> Iterator[_T]:
        for items in self._by_group.values():
            yield from items

    def __len__(self) -> int:
        return self._size
