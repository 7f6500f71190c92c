"""Backfill: the slots of a past window, oldest first, at most a bounded number of them."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual.scheduling import timeline

MAX_SLOTS = 1000
"""The most slots one backfill runs."""


@dataclass(frozen=True, slots=True)
class Window:
    slots: tuple[datetime, ...]
    """The slots in ``[start, end]``, oldest first, at most the limit asked for."""
    more: bool
    """Whether the window holds more slots than that."""


def window(
    schedule: timeline.Schedule, *, start: datetime, end: datetime, limit: int = MAX_SLOTS
) -> Window:
    """The slots of ``schedule`` in ``[start, end]`` (both included), oldest first."""
    found: list[datetime] = []
    # Slots are whole milliseconds: the first slot after this instant is the first at or after
    # ``start``.
    cursor = start - timedelta(microseconds=1)
    while True:
        occurrence = schedule.next_after(cursor)
        if occurrence is None or occurrence.at > end:
            return Window(slots=tuple(found), more=False)
        slot = occurrence.at
        if len(found) == limit:
            return Window(slots=tuple(found), more=True)
        found.append(slot)
        cursor = slot
