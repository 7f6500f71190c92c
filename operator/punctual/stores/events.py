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
number of jobs, in turns across namespaces, and in each namespace new Events first, then the
updates waiting longest (the status writer's pacing, ``aio.pacing``): 10,000 jobs failing
together cost 10 writes a second, each Event then updated less often than once a minute, its
count exact, and another namespace's first Event still goes within a tick or two. What is not
written when the replica stops is dropped: the status keeps the counts.

Events of what is gone are dropped, never tried again: a job deleted before its Event was
written (the cache forgets it) gets none, and a namespace gone or being deleted (the API
server's 404 to a creation, or 403 ``NamespaceTerminating``) drops that Event and every Event
pending in that namespace. Other refusals are tried again a window later.

Pair it with the status and metrics stores through ``stores.fanout``.
"""

import asyncio
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final

from punctual.aio import pacing
from punctual.api import condition_models
from punctual.contracts import protocols, records
from punctual.kube import events, objects
from punctual.scheduling import slots, timeline, turns
from punctual.stores.status import ledger

logger = logging.getLogger(__name__)

IDLE: Final = 600.0
"""Seconds without an occurrence after which a job and reason are forgotten (a new Event
next time)."""

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
        self._turns = turns.FairTurns()
        self._series: dict[_Key, _Series] = {}
        self._new: pacing.Waiting[_Key] = pacing.Waiting(group=_namespace)
        """Series never written, each namespace's in the order they came."""
        self._changed: pacing.Waiting[_Key] = pacing.Waiting(group=_namespace)
        """Written series with occurrences since, each namespace's oldest change first."""
        self._swept = 0.0
        self._closing = False

    # The RunStore seam: called by the scheduler, never blocks. Other reports say nothing worth
    # an Event: the protocol's no-ops. Overlaps show in status and metrics.

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        if record.result.failed:
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
        if reason.missed:  # slots a suspension passed were asked for: nothing went wrong
            self.warn(
                job,
                reason=str(reason),
                message=ledger.missed_message(count=count, newest=newest, reason=reason),
            )

    def warm_start_checked(
        self, job: slots.JobRef, *, scheduled_time: datetime, not_ready: str | None
    ) -> None:
        if not_ready is not None:
            self.warn(
                job,
                reason=condition_models.WARM_START_NOT_READY,
                message=f"run due {timeline.rfc3339(scheduled_time)}: {not_ready}",
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
            self._new.add(key)
            return
        series.occurrence = replace(series.occurrence, count=series.occurrence.count + 1, last=at)
        series.seen = now
        if series.name is not None:
            self._changed.add(key)

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
        """Up to ``limit`` writes, in turns across namespaces (``turns.FairTurns``)."""
        namespaces = dict.fromkeys([*self._new.groups(), *self._changed.groups()])
        ready = {namespace: self._ready(namespace, now) for namespace in namespaces}
        return self._turns.take(ready, limit=limit)

    def _ready(self, namespace: str, now: float) -> Iterator[_Key]:
        """The writes of ``namespace`` that are due, in the order they go (lazily: only as
        far as its turns reach): new Events first, then the updates waiting longest."""
        for key in self._new.in_group(namespace):
            written_at = self._series[key].written_at
            if written_at is None or now - written_at >= self._window:
                yield key  # (a creation that failed is tried again a window later)
        for key in self._changed.in_group(namespace):
            written_at = self._series[key].written_at
            if written_at is not None and now - written_at < self._window:
                return  # oldest change first: the ones after it wait longer still
            yield key

    async def _write(self, key: _Key, now: float) -> None:
        series = self._series.get(key)
        if series is None:
            return  # dropped by another write of this tick: its namespace is gone
        self._new.discard(key)
        self._changed.discard(key)
        if self._cache.get(key[0]) is None:
            # The job was deleted meanwhile (the cache forgets it then): no one reads its Events.
            del self._series[key]
            return
        occurrence = series.occurrence
        series.written_at = now
        async with self._writers:
            try:
                if series.name is None:
                    series.name = await self._api.create(occurrence)
                else:
                    await self._api.recount(series.name, occurrence)
            except events.NamespaceGoneError:
                self._drop_namespace(key)
                return
            except events.EventGoneError:
                # Expired: what it had not shown yet starts a new Event, written at once.
                series.name, series.written_at = None, None
                unshown = series.occurrence.count - series.written
                series.occurrence = replace(series.occurrence, count=unshown)
                series.written = 0
                self._again(key, series)
                return
            except events.EventUnavailableError as error:
                logger.warning("Event %s of %s/%s not written: %s", key[1], *_names(key), error)
                self._again(key, series)
                return
            except Exception:  # a bug: this Event's write failed, the writer goes on
                logger.exception("Event %s of %s/%s not written", key[1], *_names(key))
                return
        series.written = occurrence.count
        if series.occurrence.count > series.written:  # more came while it was being written
            self._again(key, series)

    def _again(self, key: _Key, series: _Series) -> None:
        """Write ``series`` again: a creation (at once, or a window after one that failed) or
        an update (paced), unless it was dropped while its write was in flight."""
        if self._series.get(key) is series:
            (self._new if series.name is None else self._changed).add(key)

    def _drop_namespace(self, key: _Key) -> None:
        """Drop ``key``'s series and every Event pending in its namespace: the namespace is
        gone or being deleted, so writing them again would fail again, for ever."""
        namespace = _namespace(key)
        dropped = {key, *self._new.in_group(namespace), *self._changed.in_group(namespace)}
        for each in dropped:
            self._new.discard(each)
            self._changed.discard(each)
            self._series.pop(each, None)
        logger.info(
            "%d Event(s) dropped: namespace %s is gone or being deleted", len(dropped), namespace
        )

    def _forget_idle(self, now: float) -> None:
        for key, series in list(self._series.items()):
            idle = now - series.seen >= IDLE
            if idle and key not in self._new and key not in self._changed:
                del self._series[key]


def _namespace(key: _Key) -> str:
    return key[0].namespace


def _names(key: _Key) -> tuple[str, str]:
    return key[0].namespace, key[0].name
