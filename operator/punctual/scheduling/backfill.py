"""Backfill: the slots of a past window, oldest first, at most a bounded number of them."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual.scheduling import timeline

MAX_SLOTS = 1000
"""The most slots one backfill runs."""
MAX_BACKFILLS_PER_NAMESPACE = 2
"""The most backfills of one namespace's jobs going at once on one replica, by default
(``punctual run --max-backfills-per-namespace``): one backfill at a time per job keeps a job's
windows from running side by side, but a tenant's many jobs, each asked for one, would still run
their windows side by side, back to back, taking the replica's runs from every other namespace.
One more waits for one of them to end."""


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
