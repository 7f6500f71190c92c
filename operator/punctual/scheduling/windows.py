"""The active window of a job (``spec.startsAt``, ``spec.endsAt``) and its one-off run.

A window is half-open, ``[startsAt, endsAt)``: a slot exactly at ``startsAt`` runs, one exactly
at ``endsAt`` does not, so a job ending at 12:00 and its successor starting at 12:00 never both
run the 12:00 slot. The bounds are instants (RFC 3339 with an offset), so no DST rule applies
to them; they bound the nominal slot times, before any jitter. With ``startsAt`` and neither
``schedule`` nor ``every``, the job has one slot, at ``startsAt`` (``OneOff``).
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual.scheduling import exclusions, interval, timeline

_TICK = timedelta(microseconds=1)
"""The smallest step of a datetime: the search for a slot at or after an instant starts one
tick before it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    """Exclusive: the first instant with no slot."""


@dataclass(frozen=True, slots=True)
class OneOff:
    """A schedule with one slot: ``at``."""

    at: datetime

    @property
    def shortest_period(self) -> timedelta:
        """No second slot: it counts as the longest ``every`` accepted, for its jitter's cap
        and its claim's lifetime (``JobPlan.lock_ttl``), like any slot that may run late."""
        return interval.LONGEST

    def next_after(self, instant: datetime) -> timeline.Occurrence | None:
        if self.at <= instant:
            return None
        return timeline.Occurrence(at=self.at, nominal=self.at.replace(tzinfo=None))

    def due_between(
        self, *, after: datetime, until: datetime, keep: int, steps: int | None = None
    ) -> timeline.DueSlots:
        due = after < self.at <= until
        return timeline.DueSlots(total=int(due), newest=(self.at,) if due and keep > 0 else ())


@dataclass(frozen=True, slots=True)
class Windowed:
    """``schedule``'s slots within ``window``, and no others."""

    schedule: timeline.Schedule
    window: Window

    @property
    def shortest_period(self) -> timedelta:
        return self.schedule.shortest_period

    def next_after(self, instant: datetime) -> timeline.Occurrence | None:
        starts_at, ends_at = self.window.starts_at, self.window.ends_at
        if ends_at is not None and instant >= ends_at:
            return None
        if starts_at is not None:
            instant = max(instant, starts_at - _TICK)
        found = self.schedule.next_after(instant)
        if found is None or (ends_at is not None and found.at >= ends_at):
            return None
        return found

    def due_between(
        self, *, after: datetime, until: datetime, keep: int, steps: int | None = None
    ) -> timeline.DueSlots:
        if self.window.starts_at is not None:
            after = max(after, self.window.starts_at - _TICK)
        if self.window.ends_at is not None:
            until = min(until, self.window.ends_at - _TICK)
        if after >= until:
            return timeline.DueSlots(total=0, newest=())
        return self.schedule.due_between(after=after, until=until, keep=keep, steps=steps)


def within(schedule: timeline.Schedule, window: Window) -> timeline.Schedule:
    """``schedule`` limited to ``window`` (itself when the window is open at both ends)."""
    if window == Window():
        return schedule
    return Windowed(schedule, window)


def has_ended(schedule: timeline.Schedule, *, after: datetime) -> bool:
    """Whether a schedule with no slot after ``after`` has ended, rather than run out: its
    window closes within the search for that slot (``timeline.search_limit``), so no slot
    is left to find. Otherwise the search gave up short of the window's end: ``NoFutureSlots``.
    Exclusions do not end a schedule: the one they leave out is looked at.
    """
    if isinstance(schedule, exclusions.Excluding):
        schedule = schedule.schedule
    if isinstance(schedule, OneOff):
        return True
    if isinstance(schedule, Windowed) and schedule.window.ends_at is not None:
        return schedule.window.ends_at <= timeline.search_limit(after)
    return False
