"""What an executor builds for a run ahead of its slot (``protocols.PreparesRuns``), kept until the
run takes it: the slot's Job, its HTTP request."""

from collections.abc import Callable
from typing import Generic, TypeVar

from punctual.contracts import records

_T = TypeVar("_T")

KEPT = 2
"""Runs built ahead and kept until they are taken: the upcoming slot's, and the one before in
case its run has not started yet (a run started late builds its own)."""


class Prepared(Generic[_T]):
    """Slot id → what ``build`` made for it ahead; the newest ``KEPT`` only."""

    def __init__(self, build: Callable[[records.RunContext], _T]) -> None:
        self._build = build
        self._built: dict[str, _T] = {}

    def prepare(self, context: records.RunContext) -> None:
        """Build the run of an upcoming slot now, while the loop waits for it."""
        self._built[context.slot_id] = self._build(context)
        while len(self._built) > KEPT:
            del self._built[next(iter(self._built))]  # the oldest: its slot went by

    def take(self, context: records.RunContext) -> _T:
        """The run built ahead for ``context``'s slot, or built now if it was not."""
        built = self._built.pop(context.slot_id, None)
        return self._build(context) if built is None else built
