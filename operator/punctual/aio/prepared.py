"""What a loop builds ahead of the moment it is needed, kept until it is taken: built while the
loop waits, so that the moment itself only uses it."""

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

_A = TypeVar("_A")
_T = TypeVar("_T")

KEPT = 2
"""Things built ahead and kept until they are taken: the upcoming one, and the one before in case
it has not been taken yet (taken late, it is built then)."""


class Prepared(Generic[_A, _T]):
    """``key(argument)`` → what ``build(argument)`` made for it ahead; the newest ``KEPT`` only."""

    def __init__(self, build: Callable[[_A], _T], *, key: Callable[[_A], Hashable]) -> None:
        self._build = build
        self._key = key
        self._built: dict[Hashable, _T] = {}

    def prepare(self, argument: _A) -> None:
        """Build for an upcoming ``argument`` now, while the loop waits for it."""
        self._built[self._key(argument)] = self._build(argument)
        while len(self._built) > KEPT:
            del self._built[next(iter(self._built))]  # the oldest: its moment went by

    def take(self, argument: _A) -> _T:
        """What was built ahead for ``argument``, or built now if it was not."""
        built = self._built.pop(self._key(argument), None)
        return self._build(argument) if built is None else built
