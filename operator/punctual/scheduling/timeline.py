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


SEARCH_HORIZON = timedelta(days=3660)
"""How far past an instant a schedule looks for the next slot: ten years of 366 days. A
schedule with no slot that near has none for this operator (``next_after`` says None): no
search walks on toward year 9999. Covers the longest ``every`` and the eight years between two
29 Februarys across a century that is not a leap year (2096 to 2104)."""
_LATEST_LIMIT = datetime(9000, 1, 1, tzinfo=UTC)
"""The search never looks past this: instants come from annotations and flags too, and a
calendar past year 9999 does not exist."""


def search_limit(instant: datetime) -> datetime:
    """The last instant the search for the slot after ``instant`` considers."""
    return min(instant, _LATEST_LIMIT - SEARCH_HORIZON) + SEARCH_HORIZON


class Schedule(Protocol):
    """A source of slots.

    Implementations are immutable; they may share caches that are safe on one thread (the
    event loop's), not across threads.
    """

    @property
    def shortest_period(self) -> timedelta:
        """The smallest distance between two consecutive slots (caps the jitter)."""
        ...

    def next_after(self, instant: datetime) -> Occurrence | None:
        """The first slot strictly after ``instant`` (aware, any zone); None when there is none
        up to ``search_limit(instant)`` (the schedule has run out, or never fires)."""
        ...

    def due_between(
        self, *, after: datetime, until: datetime, keep: int, steps: int | None = None
    ) -> "DueSlots":
        """Count the slots in ``(after, until]`` and keep the newest ``keep`` of them; a
        schedule that walks its slots one by one walks at most ``steps`` of them (None: all),
        and says where to go on from (``DueSlots.resume_after``)."""
        ...


@dataclass(frozen=True, slots=True)
class DueSlots:
    """The slots in a window ``(after, until]``: how many, and the newest of them."""

    total: int
    newest: tuple[datetime, ...]
    """At most the requested number of the newest slots, oldest first."""
    resume_after: datetime | None = None
    """None when the whole window is counted; otherwise the count stopped at its step limit,
    and the slots after this instant are still to be counted."""


def scan_due(
    schedule: Schedule, *, after: datetime, until: datetime, keep: int, steps: int | None = None
) -> DueSlots:
    """``Schedule.due_between`` by scanning forward slot by slot, at most ``steps`` slots.

    For schedules without a closed form. A long outage on a dense cron schedule has many slots
    to count: the caller counts them a bounded number at a time, so that the event loop serves
    the other jobs in between.
    """
    newest: deque[datetime] = deque(maxlen=max(keep, 0))
    total = 0
    cursor = after
    while (occurrence := schedule.next_after(cursor)) is not None and occurrence.at <= until:
        if total == steps:
            return DueSlots(total=total, newest=tuple(newest), resume_after=cursor)
        total += 1
        newest.append(occurrence.at)
        cursor = occurrence.at
    return DueSlots(total=total, newest=tuple(newest))


class CountsWindow(Protocol):
    """How many slots of a schedule are in ``(after, until]``, counted without walking them."""

    def __call__(self, *, after: datetime, until: datetime) -> int: ...


def counted_due(
    schedule: Schedule, *, count: CountsWindow, after: datetime, until: datetime, keep: int
) -> DueSlots:
    """``Schedule.due_between`` for a schedule that counts its slots without walking them.

    Only the newest ``keep`` are walked: from the latest whole second with ``keep`` slots after
    it, found by counting back from ``until`` over a span doubled, then halved down to the
    second. Counting costs the same whatever the slots of a span, so a dense schedule's newest
    slots are found in as many counts as a sparse one's.
    """
    total = count(after=after, until=until)
    if keep <= 0 or total == 0:
        return DueSlots(total=total, newest=())
    start = after if total <= keep else _latest_start(count, after=after, until=until, keep=keep)
    return DueSlots(
        total=total, newest=scan_due(schedule, after=start, until=until, keep=keep).newest
    )


def _latest_start(count: CountsWindow, *, after: datetime, until: datetime, keep: int) -> datetime:
    """The latest of ``until`` less whole seconds with at least ``keep`` slots after it (not
    before ``after``, which has more than ``keep`` after it)."""

    def start(seconds: int) -> datetime:
        return max(after, until - seconds * _SECOND)

    short, long = (
        0,
        1,
    )  # fewer than ``keep`` slots after ``start(short)``, enough after ``start(long)``
    while count(after=start(long), until=until) < keep:
        short, long = long, 2 * long
    while long - short > 1:
        middle = (short + long) // 2
        if count(after=start(middle), until=until) < keep:
            short = middle
        else:
            long = middle
    return start(long)


_SECOND = timedelta(seconds=1)


def combine(earlier: DueSlots, later: DueSlots, *, keep: int) -> DueSlots:
    """The count of two consecutive windows (``later`` goes on where ``earlier`` stopped)."""
    joined = earlier.newest + later.newest
    return DueSlots(
        total=earlier.total + later.total,
        newest=joined[max(len(joined) - keep, 0) :] if keep > 0 else (),
        resume_after=later.resume_after,
    )


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
