"""``every`` schedules: fixed intervals aligned to the UTC epoch.

Slots are the multiples of the interval since 1970-01-01T00:00:00Z, so every replica computes
the same slots without talking to the others, whenever it started.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual.scheduling import timeline

LONGEST = timedelta(days=3653)
"""Ten years: a longer interval is a mistake, and past year 9999 datetimes cannot follow."""


@dataclass(frozen=True, slots=True)
class IntervalSchedule:
    every: timedelta

    @property
    def shortest_period(self) -> timedelta:
        return self.every

    def next_after(self, instant: datetime) -> timeline.Occurrence:
        elapsed = instant - timeline.EPOCH
        at = timeline.EPOCH + (elapsed // self.every + 1) * self.every
        return timeline.Occurrence(at=at, nominal=at.replace(tzinfo=None))

    def due_between(
        self, *, after: datetime, until: datetime, keep: int, steps: int | None = None
    ) -> timeline.DueSlots:
        """Counted, not walked: ``steps`` never binds."""
        first = (after - timeline.EPOCH) // self.every + 1
        last = (until - timeline.EPOCH) // self.every
        total = max(last - first + 1, 0)
        newest = range(max(first, last - keep + 1), last + 1)
        return timeline.DueSlots(
            total=total,
            newest=tuple(timeline.EPOCH + index * self.every for index in newest),
        )
