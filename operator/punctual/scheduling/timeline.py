"""What every schedule offers the scheduler: occurrences on the UTC timeline.

An *occurrence* is a slot: a nominal fire instant in UTC. Schedules compute them from the
previous slot, never from "now" or from when a run finished, which is what keeps them free of
drift.
"""

import enum
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Adjustment(enum.StrEnum):
    """Why an occurrence is not simply the local time the schedule names."""

    SHIFTED_FORWARD = "ShiftedForward"
    """The local time did not exist (spring forward); the slot runs at the end of the gap."""
    FIRST_OF_REPEATED = "FirstOfRepeated"
    """The local time happened twice (fall back); this is the first of the two."""
    SECOND_OF_REPEATED = "SecondOfRepeated"
    """The local time happened twice (fall back); this is the second of the two."""


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One slot: ``at`` in UTC, and the local wall-clock time the schedule meant by it."""

    at: datetime
    nominal: datetime
    """The local wall-clock time the schedule named (naive), before any DST adjustment."""
    adjustment: Adjustment | None = None


class Schedule(Protocol):
    """A source of slots.

    Implementations are immutable; they may share caches that are safe on one thread (the
    event loop's), not across threads.
    """

    @property
    def shortest_period(self) -> timedelta:
        """The smallest distance between two consecutive slots (caps the jitter)."""
        ...

    def next_after(self, instant: datetime) -> Occurrence:
        """The first slot strictly after ``instant`` (aware, any zone)."""
        ...

    def due_between(self, *, after: datetime, until: datetime, keep: int) -> "DueSlots":
        """Count the slots in ``(after, until]`` and keep the newest ``keep`` of them."""
        ...


@dataclass(frozen=True, slots=True)
class DueSlots:
    """The slots in a window ``(after, until]``: how many, and the newest of them."""

    total: int
    newest: tuple[datetime, ...]
    """At most the requested number of the newest slots, oldest first."""


def scan_due(schedule: Schedule, *, after: datetime, until: datetime, keep: int) -> DueSlots:
    """``Schedule.due_between`` by scanning forward slot by slot.

    For schedules without a closed form: the price of a long outage on a dense cron schedule
    is paid once, when the job is re-armed.
    """
    newest: deque[datetime] = deque(maxlen=max(keep, 0))
    total = 0
    occurrence = schedule.next_after(after)
    while occurrence.at <= until:
        total += 1
        newest.append(occurrence.at)
        occurrence = schedule.next_after(occurrence.at)
    return DueSlots(total=total, newest=tuple(newest))


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def unix_millis(instant: datetime) -> int:
    """Whole milliseconds since the Unix epoch; slot ids and the API use these."""
    return (instant - EPOCH) // _MILLISECOND


def rfc3339(instant: datetime) -> str:
    """UTC with a ``Z``, milliseconds only when there are any: ``2026-10-25T00:30:00.250Z``."""
    text = instant.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace(".000+00:00", "Z").replace("+00:00", "Z")


def parse_rfc3339(text: str) -> datetime:
    """An aware UTC datetime from an RFC 3339 timestamp (as the API server writes them).

    A timestamp without an offset is refused (ValueError): read in the host's zone, it would
    mean different instants on replicas in different zones. So is one whose instant is outside
    the years 1 to 9999 in UTC (``0001-01-01T00:00:00+01:00``, which anyone may write in an
    annotation): ValueError too, the one error callers expect, never an OverflowError.
    """
    instant = datetime.fromisoformat(text)
    if instant.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset")
    try:
        return instant.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{text!r} is out of range") from None
