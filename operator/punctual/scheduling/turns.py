"""Turns across namespaces: one tenant's many items never go ahead of another's few.

The operator is shared by every namespace it watches. Wherever one replica hands out something
scarce among items of many namespaces (the status and Event writes a tick may start, the slots
due at one instant), it hands it out in turns (``FairTurns``): round robin across the
namespaces, not in the order the items came.
"""

from collections.abc import Iterable, Mapping
from typing import TypeVar

_T = TypeVar("_T")


class FairTurns:
    """Which namespace's items go next: round robin across the namespaces with items ready.

    ``take`` hands out one item per namespace per round, rounds after rounds, until it has
    ``limit`` or none is left. Namespaces that have waited longest since their last turn come
    first in each round (one never served, before any served), so a cap of one item a take
    still reaches every namespace in turn. Namespaces with nothing ready are forgotten: it
    holds no more than the namespaces with items waiting.
    """

    def __init__(self) -> None:
        self._served: dict[str, None] = {}
        """Namespaces that had turns, the least recently served first."""

    def take(self, ready: Mapping[str, Iterable[_T]], *, limit: int) -> list[_T]:
        """Up to ``limit`` of ``ready`` (each namespace's items, in the order it would have
        them go; iterated lazily, only as far as its turns reach), in turns."""
        self._served = {namespace: None for namespace in self._served if namespace in ready}
        order = [namespace for namespace in ready if namespace not in self._served]
        order += self._served
        queues = {namespace: iter(ready[namespace]) for namespace in order}
        taken: list[_T] = []
        while queues and len(taken) < limit:
            for namespace in list(queues):
                if len(taken) >= limit:
                    break
                try:
                    item = next(queues[namespace])
                except StopIteration:
                    del queues[namespace]
                    continue
                taken.append(item)
                self._served.pop(namespace, None)
                self._served[namespace] = None
        return taken
