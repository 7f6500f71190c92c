"""The pacing of the status writer: which jobs each tick writes, and how many.

A job's status is written only when there is something new to say (a run, a skip, a miss, a
condition change), at most once per ``interval`` per job (default 5 s); condition changes go at
the next tick. ``LastRunSucceeded`` is not such a change: ``conditions`` derives it from the
runs a write carries, so it goes out with them, paced as they are (a flapping job's every run
would otherwise be an urgent write). A 1-second job therefore costs one status write per 5
seconds per replica that ran it, not one per run. And one replica writes at most
``writes_per_second`` statuses (default 100), whatever the number of jobs: the API server's load
(and every replica's, which sees each write as a watch event) is bounded. With more jobs than
that rate allows, each job's status is written less often than ``interval`` (10,000 jobs: every
100 s), condition changes first; what is pending meanwhile is coalesced by the ledger. The
writes a tick starts are handed out in turns across namespaces (``turns.FairTurns``), so a
namespace with 10,000 jobs waits for its own writes, and another's job is written within a tick
of its interval.

Apart from the writer (``writer``), which carries out the writes this hands it (preconditions,
conflicts, writes in doubt, the last flush at a stop): when to write and how to write change
for different reasons.
"""

import math
from collections.abc import Iterator

from punctual.aio import pacing
from punctual.scheduling import slots, turns
from punctual.stores.status import ledger as ledger_

MIN_BATCH = 4
"""Writes a tick may start whatever the spread (a few writes at once cost nothing)."""
ACTIVE_HEARTBEAT = 30.0
"""Seconds: a run in progress is stated again at least this often, with a fresh
``heartbeatTime``, so that a heartbeat older than this tells users its replica stopped."""


class WritePacing:
    """Chooses the jobs a tick of the status writer writes, from its ``ledger``."""

    def __init__(
        self, *, ledger: ledger_.Ledger, interval: float, tick: float, writes_per_second: int
    ) -> None:
        """``interval``: seconds between two writes of one job's status, at least; ``tick``:
        seconds between two ticks; ``writes_per_second``: the most writes of all jobs."""
        self._ledger = ledger
        self._interval = interval
        self._tick = tick
        self._allowance = pacing.Allowance(rate=writes_per_second, tick=tick)
        self._turns = turns.FairTurns()
        self._stated: dict[slots.JobRef, float] = {}
        """When each job's runs in progress were last written (the writer's clock)."""
        self._next_heartbeat = 0.0
        self.backlog = 0
        """Jobs with a status write pending, as of the last second's tick."""
        self.lag = 0.0
        """Seconds since the oldest pending write became pending, as of the same tick (0: none
        is)."""

    def take(self, now: float, *, due_only: bool) -> list[slots.JobRef]:
        """The jobs to write at ``now``: those due (``due_only``), or all that are pending;
        once a second, the runs in progress due again and the backlog measured first."""
        if due_only and now >= self._next_heartbeat:
            self._next_heartbeat = now + 1.0
            self._restate_active(now)
            self._measure(now)
        limit = self._allowance.allowed(now)
        due = self._due(now, limit=limit) if due_only else list(self._ledger.pending)
        self._allowance.spend(len(due))
        return due

    def stated(self, job: slots.JobRef, *, at: float) -> None:
        """``job``'s runs in progress were written at ``at``."""
        self._stated[job] = at

    def forget(self, job: slots.JobRef) -> None:
        self._stated.pop(job, None)

    def _measure(self, now: float) -> None:
        # A write kept after a failure goes back at the end, with its old ``since``: the oldest
        # is not always the first.
        pending = self._ledger.pending
        self.backlog = len(pending)
        self.lag = max((now - news.since for news in pending.values()), default=0.0)

    def _restate_active(self, now: float) -> None:
        """Runs in progress whose last statement is older than ``ACTIVE_HEARTBEAT`` are due
        again (a Job running for hours: its heartbeat shows this replica still has it)."""
        for job in self._ledger.active:
            stated = self._stated.get(job, now)
            if job not in self._ledger.pending and now - stated >= ACTIVE_HEARTBEAT:
                self._ledger.note(job).heartbeat = True

    def _due(self, now: float, *, limit: int) -> list[slots.JobRef]:
        """What the tick writes, in turns across namespaces (``turns.FairTurns``): in each
        namespace its urgent jobs, then the others whose interval is over, oldest first; at
        most a tick's share of all that is pending besides the urgent ones (and at least
        ``MIN_BATCH``), and ``limit`` in all.

        Jobs that became pending together (armed together, runs on the same second) would
        otherwise be written together every interval, for ever: a bunch of writes, and as many
        watch events on every replica, all ready on the event loop at once while timers wait.
        Spread evenly, the writes keep the same average rate. The ledger keeps each
        namespace's jobs in the order of ``since`` (a write that failed goes back at the end
        and waits at most one more interval).
        """
        pending = self._ledger.pending
        share = max(MIN_BATCH, math.ceil(len(pending) * self._tick / self._interval))
        namespaces = self._ledger.waiting.groups()
        ready = {namespace: self._ready(namespace, now) for namespace in namespaces}
        return self._turns.take(ready, limit=min(limit, len(self._ledger.urgent) + share))

    def _ready(self, namespace: str, now: float) -> Iterator[slots.JobRef]:
        """The jobs of ``namespace`` a tick may write, in the order they go (lazily: only as
        far as its turns reach)."""
        yield from self._ledger.urgent.in_group(namespace)
        pending = self._ledger.pending
        for job in self._ledger.waiting.in_group(namespace):
            news = pending[job]
            if now - news.since < self._interval:
                return
            if not news.urgent:
                yield job
