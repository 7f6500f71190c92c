"""A job's timing and policies, resolved from its spec: everything the slot loop obeys, and how
many of its finished runs are remembered."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from punctual.scheduling import exclusions, merged, missed, overlap, timeline

LOST_RUN_NOTICE = timedelta(seconds=20)
"""How long after its replica's last heartbeat a lost run is taken over (the run lease's TTL and
one scan, ``runtime.leases.LeaseRules``): the wait before a lost run's retry."""
LONGEST_SLOT_SPAN = timedelta(days=1)
"""The longest a slot key is kept for its queue, its retry or its starting deadline beyond its
timeout: each second of TTL is a key per second of period held in the lock's Redis."""
CLAIM_MARGIN = timedelta(seconds=60)
"""How much longer than its slot can be in play a claim lives: clocks, late claims."""
KEPT_BY_DEFAULT = 3
"""How many successful runs, and how many others, a job remembers unless its spec says."""
MOST_KEPT = 100
"""The most runs of each kind a job may ask to remember: each is a ``recentRuns`` entry in its
object, and a Job of the job target in the cluster."""

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class History:
    """How many finished runs of a job are remembered (``spec.history``): in
    ``status.recentRuns``, and as the job target's finished Jobs."""

    succeeded: int = KEPT_BY_DEFAULT
    failed: int = KEPT_BY_DEFAULT

    def shown(
        self,
        newest_first: Iterable[_T],
        *,
        succeeded: Callable[[_T], bool],
        key: Callable[[_T], str] | None = None,
    ) -> list[_T]:
        """Of ``newest_first``, what a status shows: the first ``succeeded`` successes and
        ``failed`` others (and, with ``key``, the first of each key only)."""
        seen: set[str] = set()
        room = {True: self.succeeded, False: self.failed}
        kept: list[_T] = []
        for item in newest_first:
            success = succeeded(item)
            if room[success] <= 0:
                continue
            if key is not None:
                name = key(item)
                if name in seen:
                    continue
                seen.add(name)
            room[success] -= 1
            kept.append(item)
        return kept


@dataclass(frozen=True, slots=True, kw_only=True)
class JobPlan:
    schedule: timeline.Schedule
    offset: timedelta = timedelta()
    """This job's jitter offset: every slot fires at its nominal time plus this."""
    missed_runs: missed.MissedRuns = missed.MissedRuns()
    concurrency: overlap.ConcurrencyPolicy = overlap.ConcurrencyPolicy.FORBID
    max_queued: int = 1
    max_runs_in_flight: int = overlap.MAX_RUNS_IN_FLIGHT
    """The platform's cap on this job's runs in flight at once, whatever its policy."""
    timeout: timedelta = timedelta(minutes=10)
    retry_lost_runs: bool = False
    """Run a slot once more (same slot id) when its first run is recorded Lost."""
    warm_lead: timedelta | None = None
    """The job target's warm start (``spec.target.job.warmStart.lead``): its slot is claimed
    and its Job created this long before the slot. None: claimed at the slot."""
    entries: merged.Merged | None = None
    """The job's several schedules (``spec.schedules``), merged into ``schedule``: what names
    the entries that fired a slot. None: the job has one schedule."""
    history: History = History()
    """How many finished runs are remembered: the status writer's and the job target's limit."""
    _lock_ttl: timedelta = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Once per plan, not once per claim: read on every slot's claim.
        in_play = min(
            max(self.starting_deadline, self.run_span), max(self.timeout, LONGEST_SLOT_SPAN)
        )
        # An armed slot is claimed its lead ahead of its time: its claim lives that much longer.
        ahead = self.warm_lead or timedelta()
        ttl = max(2 * self.schedule.shortest_period, in_play + ahead + CLAIM_MARGIN)
        object.__setattr__(self, "_lock_ttl", ttl)

    @property
    def starting_deadline(self) -> timedelta:
        """How long after its time a slot may still be claimed to run (0: no deadline; then
        ``2 × period`` covers the newest slot due, the one ``RunOnce`` runs)."""
        return self.missed_runs.starting_deadline or timedelta()

    @property
    def run_span(self) -> timedelta:
        """The longest a claimed slot may take to start and end: the runs queued before it and
        its own (``Queue``), and a lost run's wait and retry (``retryLostRuns``)."""
        queued = self.max_queued if self.concurrency is overlap.ConcurrencyPolicy.QUEUE else 0
        span = (1 + queued) * self.timeout
        if self.retry_lost_runs:
            span += LOST_RUN_NOTICE + self.timeout
        return span

    def nominal(self, fires_at: datetime) -> datetime:
        """The nominal time of a slot firing at ``fires_at``: a time on the job's slot timeline.
        Where scheduling starts "from now" (a job new to a replica: its first sight, a spec
        change, a membership change), now is this: a slot whose nominal time has passed may still
        be ahead, up to the offset, and the replica that ran the job before may have let it go."""
        return fires_at - self.offset

    @property
    def lock_ttl(self) -> timedelta:
        """How long a slot claim outlives its holder: as long as its slot can still be claimed
        to run or its run still start or end, ``max(starting deadline, run span)`` capped at
        ``max(timeout, LONGEST_SLOT_SPAN)``, plus the warm lead and ``CLAIM_MARGIN``; at least
        ``2 × period``."""
        return self._lock_ttl

    def fired_by(self, slot: datetime) -> tuple[str, ...]:
        """The names of the entries of ``spec.schedules`` with a slot at ``slot``; none for a
        job with one schedule."""
        return () if self.entries is None else self.entries.fired_by(slot)

    def excluded_between(
        self, *, after: datetime, until: datetime, keep: int, steps: int | None = None
    ) -> timeline.DueSlots:
        """The slots in ``(after, until]`` its exclusions leave out (``spec.exclude``, skipped
        occurrences): what ``exclusions.Excluding.excluded_between`` says; none without."""
        if isinstance(self.schedule, exclusions.Excluding):
            return self.schedule.excluded_between(after=after, until=until, keep=keep, steps=steps)
        return timeline.DueSlots(total=0, newest=())

    def first_excluded(self, *, after: datetime, until: datetime) -> datetime | None:
        """The first slot in ``(after, until]`` its exclusions leave out; None without."""
        if isinstance(self.schedule, exclusions.Excluding):
            return self.schedule.first_excluded(after=after, until=until)
        return None
