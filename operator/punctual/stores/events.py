"""A run store that tells users, as Warning Events on the ScheduledJob, what went wrong.

A run that failed, timed out or was lost raises ``Run<result>`` (``RunFailed``,
``RunTimedOut``, ``RunLost``) with the slot and the run's message; slots given up raise
``SlotsMissed`` with the words of the status's Missed record. Nothing else about runs is said:
successes and skips show in status and metrics. The controller's Warnings (``InvalidSpec``, a
refused run-now or backfill request, ``SuspendedAfterFailures``) come through ``warn`` too, so
every Event the operator writes is aggregated and capped alike, before kopf runs as after.

Aggregated per job and reason: the first occurrence is written at once (at the next tick), as
an events.k8s.io/v1 Event; the ones after it update that Event's ``series`` (count, newest time)
at most once per ``window`` (a minute). The note stays the first occurrence's (the API server
refuses to change it): the newest messages are in the status's recent runs. A failing
``every: 250ms`` job therefore costs one Event write a minute, not four a second. A job and
reason silent for ``IDLE`` start a new Event at their next occurrence, as does an Event that
expired meanwhile.

And one replica starts at most ``writes_per_second`` Event writes (default 10), whatever the
number of jobs, new Events first, then the updates waiting longest (the status writer's pacing,
``stores.pacing``): 10,000 jobs failing together cost 10 writes a second, each Event then
updated less often than once a minute, its count exact. What is not written when the replica
stops is dropped: the status keeps the counts.

Pair it with the status and metrics stores through ``stores.fanout``.
"""

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final

from punctual.contracts import protocols, records
from punctual.kube import events, objects
from punctual.scheduling import slots, timeline
from punctual.stores import pacing
from punctual.stores.status import ledger

logger = logging.getLogger(__name__)

IDLE: Final = 600.0
"""Seconds without an occurrence after which a job and reason are forgotten (a new Event
next time)."""

_WARNED = {records.RunResult.FAILED, records.RunResult.TIMED_OUT, records.RunResult.LOST}
_Key = tuple[slots.JobRef, str]


@dataclass(slots=True)
class _Series:
    """One job and reason: the Event written for them, and what happened since."""

    occurrence: events.Occurrence
    seen: float
    """When the newest occurrence came (the pacing clock)."""
    name: str | None = None
    """The Event's, once written."""
    written: int = 0
    """The count the Event shows."""
    written_at: float | None = None
    """When it was last written (or tried)."""


class EventStore(protocols.RunStore):
    """``protocols.RunStore`` writing aggregated Warning Events on the bodies ``cache`` knows;
    ``run`` writes them, ``close`` (or cancelling ``run``) ends it."""

    def __init__(
        self,
        *,
        cache: objects.ObjectCache,
        api: events.EventsApi,
        wall: protocols.WallClock,
        writes_per_second: int = 10,
        window: timedelta = timedelta(minutes=1),
        tick: timedelta = timedelta(milliseconds=250),
        concurrency: int = 8,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if writes_per_second < 1:
            raise ValueError("writes_per_second must be at least 1")
        self._cache = cache
        self._api = api
        self._wall = wall
        self._window = window.total_seconds()
        self._tick = tick.total_seconds()
        self._allowance = pacing.Allowance(rate=writes_per_second, tick=self._tick)
        self._writers = asyncio.Semaphore(concurrency)
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self._series: dict[_Key, _Series] = {}
        self._new: dict[_Key, None] = {}
        """Series never written, in the order they came (an ordered set)."""
        self._changed: dict[_Key, None] = {}
        """Written series with occurrences since, oldest change first."""
        self._swept = 0.0
        self._closing = False

    # The RunStore seam: called by the scheduler, never blocks. Other reports say nothing worth
    # an Event: the protocol's no-ops. Overlaps show in status and metrics.

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        if record.result in _WARNED:
            self.warn(
                job,
                reason=f"Run{record.result}",
                message=f"slot {timeline.rfc3339(record.slot)}: {record.message}",
            )

    def slots_missed(
        self,
        job: slots.JobRef,
        *,
        count: int,
        newest: datetime,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        self.warn(
            job,
            reason=str(reason),
            message=ledger.missed_message(count=count, newest=newest, reason=reason),
        )

    def warn(self, job: slots.JobRef, *, reason: str, message: str) -> None:
        """``protocols.Warnings``: the runs' Events above, and the controller's (an invalid
        spec, a refused request, a pause), all through the same aggregation and cap."""
        # An Event needs the object it is about; one this replica never saw (or forgot) gets none.
        body = self._cache.get(job)
        if body is None:
            return
        key, now, at = (job, reason), self._clock(), self._wall()
        series = self._series.get(key)
        if series is None:
            occurrence = events.Occurrence(
                regarding=events.regarding(body),
                type="Warning",
                reason=reason,
                action="Run" if reason.startswith("Run") else "Schedule",
                note=message,
                count=1,
                first=at,
                last=at,
            )
            self._series[key] = _Series(occurrence, seen=now)
            self._new[key] = None
            return
        series.occurrence = replace(series.occurrence, count=series.occurrence.count + 1, last=at)
        series.seen = now
        if series.name is not None:
            self._changed.setdefault(key, None)

    # The writer.

    async def run(self) -> None:
        """Write what is due, every tick, until closed or cancelled."""
        while not self._closing:
            await asyncio.sleep(self._tick)
            await self._flush()

    def close(self) -> None:
        """End ``run`` after the writes of its current tick."""
        self._closing = True

    @property
    def pending(self) -> int:
        """Series with occurrences not written yet."""
        return len(self._new) + len(self._changed)

    async def _flush(self) -> None:
        now = self._clock()
        if now - self._swept >= IDLE:
            self._swept = now
            self._forget_idle(now)
        due = self._due(now, limit=self._allowance.allowed(now))
        self._allowance.spend(len(due))
        await asyncio.gather(*(self._write(key, now) for key in due))

    def _due(self, now: float, *, limit: int) -> list[_Key]:
        due: list[_Key] = []
        for waiting, paced in ((self._new, False), (self._changed, True)):
            for key in waiting:
                if len(due) >= limit:
                    return due
                written_at = self._series[key].written_at
                if paced and written_at is not None and now - written_at < self._window:
                    break  # oldest change first: the ones after it wait longer still
                if not paced and written_at is not None and now - written_at < self._window:
                    continue  # a creation that failed: tried again a window later
                due.append(key)
        return due

    async def _write(self, key: _Key, now: float) -> None:
        series = self._series[key]
        occurrence = series.occurrence
        self._new.pop(key, None)
        self._changed.pop(key, None)
        series.written_at = now
        async with self._writers:
            try:
                if series.name is None:
                    series.name = await self._api.create(occurrence)
                else:
                    await self._api.recount(series.name, occurrence)
            except events.EventGoneError:
                # Expired: what it had not shown yet starts a new Event, written at once.
                series.name, series.written_at = None, None
                unshown = series.occurrence.count - series.written
                series.occurrence = replace(series.occurrence, count=unshown)
                series.written = 0
                self._new[key] = None
                return
            except events.EventUnavailableError as error:
                logger.warning("Event %s of %s/%s not written: %s", key[1], *_names(key), error)
                (self._new if series.name is None else self._changed)[key] = None
                return
            except Exception:  # a bug: this Event's write failed, the writer goes on
                logger.exception("Event %s of %s/%s not written", key[1], *_names(key))
                return
        series.written = occurrence.count
        if series.occurrence.count > series.written:  # more came while it was being written
            self._changed.setdefault(key, None)

    def _forget_idle(self, now: float) -> None:
        for key, series in list(self._series.items()):
            idle = now - series.seen >= IDLE
            if idle and key not in self._new and key not in self._changed:
                del self._series[key]


def _names(key: _Key) -> tuple[str, str]:
    return key[0].namespace, key[0].name
