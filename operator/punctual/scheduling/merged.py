"""Several named schedules of one job (``spec.schedules``) as one timeline.

The job has one slot per instant, whichever of its entries name it: two entries landing on the
same instant are one slot and one run, which says every entry that fired it (``fired_by``). A
slot's id is its instant, as for a single schedule, so adding or removing an entry changes no
other entry's slot ids, and a slot that ran does not run again.
"""

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from punctual.scheduling import timeline

MAX_ENTRIES = 16
"""The most entries one job may have: each slot of the merged timeline asks every entry for
its next slot, so the entries bound the work of each step."""
_TICK = timedelta(microseconds=1)
_SAMPLE_STARTS = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 7, 1, tzinfo=UTC))
"""Where the sample of the merged timeline's gaps starts: in winter and in summer, since
entries in zones with different DST rules come closer on one side of the year."""
_SAMPLE_SIZE = 64


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    schedule: timeline.Schedule


@dataclass(frozen=True, slots=True)
class Merged:
    """The slots of all ``entries``, each instant once. Built by ``merge``."""

    entries: tuple[Entry, ...]
    shortest_period: timedelta
    """The smallest gap between two slots of any entry, or between two consecutive slots of
    the merged timeline in a sample of it (as a cron schedule's is sampled): what caps the
    jitter and sizes a claim's lifetime, as for a single schedule."""

    def next_after(self, instant: datetime) -> timeline.Occurrence | None:
        """The earliest of the entries' next slots (the first entry's, on a tie); None when no
        entry has one within its search limit."""
        found: timeline.Occurrence | None = None
        for entry in self.entries:
            occurrence = entry.schedule.next_after(instant)
            if occurrence is not None and (found is None or occurrence.at < found.at):
                found = occurrence
        return found

    def due_between(
        self, *, after: datetime, until: datetime, keep: int, steps: int | None = None
    ) -> timeline.DueSlots:
        """Walked slot by slot, at most ``steps`` of them: coinciding slots count once, which
        no sum of the entries' own counts can tell."""
        return timeline.scan_due(self, after=after, until=until, keep=keep, steps=steps)

    def fired_by(self, at: datetime) -> tuple[str, ...]:
        """The names of the entries that have a slot at ``at``, in their order."""
        return tuple(
            entry.name
            for entry in self.entries
            if (occurrence := entry.schedule.next_after(at - _TICK)) is not None
            and occurrence.at == at
        )


def merge(entries: Sequence[Entry]) -> Merged:
    """One timeline of ``entries`` (at least one, at most ``MAX_ENTRIES``, names unique: the
    spec's models check that)."""
    shortest = min(entry.schedule.shortest_period for entry in entries)
    for start in _SAMPLE_STARTS:
        # The first slots of the merged timeline are among the first of each entry's.
        sample = sorted({at for entry in entries for at in _first_slots(entry.schedule, start)})
        gaps = [later - earlier for earlier, later in itertools.pairwise(sample[:_SAMPLE_SIZE])]
        shortest = min([shortest, *gaps])
    return Merged(tuple(entries), shortest_period=shortest)


def _first_slots(schedule: timeline.Schedule, start: datetime) -> list[datetime]:
    found: list[datetime] = []
    cursor = start
    while len(found) < _SAMPLE_SIZE and (occurrence := schedule.next_after(cursor)) is not None:
        found.append(occurrence.at)
        cursor = occurrence.at
    return found
