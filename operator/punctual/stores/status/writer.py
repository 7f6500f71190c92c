"""The status writer: ``StatusStore``, when each job's status is written, and how.

Pacing: a job's status is written only when there is something new to say (a run, a skip, a
miss, a condition change), at most once per ``interval`` per job (default 5 s); condition
changes go at the next tick. ``LastRunSucceeded`` is not such a change: ``conditions`` derives it
from the runs a write carries, so it goes out with them, paced as they are (a flapping job's every
run would otherwise be an urgent write). A 1-second job therefore costs one status write per 5
seconds per replica that ran it, not one per run. And one replica writes at most
``writes_per_second`` statuses (default 100), whatever the number of jobs: the API server's load
(and every replica's, which sees each write as a watch event) is bounded. With more jobs than
that rate allows, each job's status is written less often than ``interval`` (10,000 jobs: every
100 s), condition changes first; what is pending meanwhile is coalesced by the ledger. The
writes a tick starts are handed out in turns across namespaces (``turns.FairTurns``), so a
namespace with 10,000 jobs waits for its own writes, and another's job is written within a
tick of its interval.

The kubernetes slot lock's claim is a status write of its own, one per slot: it carries what
this replica has pending for the job (``carry``), so with that backend status rides along at
claim rate and this writer only writes what no claim took (a job whose slots other replicas
win, a condition set between slots).

Writes are merges onto the newest known body, with its resourceVersion as a precondition. On a
conflict the merge starts again from a fresh read. A write that may have landed although it
failed (a 5xx, a cancellation) is kept *in doubt*: the next write looks whether the object
shows its run records before it adds its counts again. That look is exact, as every write names
the version it merges onto as its precondition, but for one case: none of its runs is among the
newest ``history`` that recentRuns keeps (runs reported long after they ran), and then it is
written again. (The kubernetes lock waits for the answer to a claim cancelled in flight, so
only a failed answer leaves its status in doubt.)
"""

import asyncio
import collections
import contextlib
import functools
import logging
import math
from collections.abc import Callable, Coroutine, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from punctual.aio import pacing
from punctual.api import status_models, status_reader
from punctual.contracts import protocols, records
from punctual.kube import objects, status_api
from punctual.scheduling import plans, slots, timeline, turns
from punctual.stores.status import conditions, ledger, patch

logger = logging.getLogger(__name__)

MIN_BATCH = 4
"""Writes a tick may start whatever the spread (a few writes at once cost nothing)."""
ACTIVE_HEARTBEAT = 30.0
"""Seconds: a run in progress is stated again at least this often, with a fresh
``heartbeatTime``, so that a heartbeat older than this tells users its replica stopped."""
LAST_FLUSH = timedelta(seconds=3)
"""How long the last flush, at a replica's stop, may write: a replica with 10,000 jobs has
nearly all of them pending (each written every 100 s at 100 writes a second), more than the
API server takes in the few seconds a stop may last."""
AT_GATE_MESSAGE = "the newest warm run checked had its pod at its gate at its scheduled time"
"""WarmStartReady's message when True: the same every time, so a job whose warm runs are all
ready costs no write for it after the first."""


class StatusStore(protocols.RunStore):
    """``protocols.RunStore`` and ``protocols.StatusCarrier`` writing ScheduledJob status."""

    def __init__(
        self,
        *,
        api: status_api.StatusApi,
        cache: objects.ObjectCache,
        replica: str,
        wall: protocols.WallClock,
        interval: timedelta = timedelta(seconds=5),
        tick: timedelta = timedelta(milliseconds=250),
        concurrency: int = 16,
        writes_per_second: int = 100,
        last_flush: timedelta = LAST_FLUSH,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if writes_per_second < 1:
            raise ValueError("writes_per_second must be at least 1")
        self._api = api
        self._cache = cache
        self._replica = replica
        self._wall = wall
        self._interval = interval.total_seconds()
        self._tick = tick.total_seconds()
        self._last_flush = last_flush.total_seconds()
        self._concurrency = concurrency
        self._writers = asyncio.Semaphore(concurrency)
        self._allowance = pacing.Allowance(rate=writes_per_second, tick=self._tick)
        self._turns = turns.FairTurns()
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self._ledger = ledger.Ledger(replica=replica, clock=self._clock)
        self._stated: dict[slots.JobRef, float] = {}
        """When each job's runs in progress were last written (``_clock``)."""
        self._next_heartbeat = 0.0
        self._closing = False
        self._writing: set[asyncio.Task[None]] = set()
        """The writes in flight (each tick's, the last flush's)."""
        self._cutting: asyncio.TimerHandle | None = None
        """Cuts every write still in flight ``last_flush`` after the close."""
        self._cut_passed = False
        self.backlog = 0
        """Jobs with a status write pending, as of the last second's tick (for metrics: read
        from any thread)."""
        self.lag = 0.0
        """Seconds since the oldest pending write became pending, as of the same tick (0: none
        is)."""

    # The RunStore seam: called by the scheduler, never blocks.

    def slot_upcoming(self, job: slots.JobRef, *, scheduled_time: datetime) -> None:
        self._ledger.upcoming[job] = scheduled_time  # written along with the next change, if any

    def run_started(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        self._ledger.started(job, run)

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        self._ledger.finished(job, record)

    def slots_missed(
        self,
        job: slots.JobRef,
        *,
        count: int,
        newest: datetime,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        self._ledger.missed(job, count=count, newest=newest, reason=reason)

    def backfill_progressed(self, job: slots.JobRef, progress: records.BackfillProgress) -> None:
        self._ledger.backfill(job, progress)

    def warm_start_checked(
        self, job: slots.JobRef, *, scheduled_time: datetime, not_ready: str | None
    ) -> None:
        """``WarmStartReady``: False (``WarmStartNotReady``, the pod's reason) for a warm run
        whose pod was not at its gate at its time, True again at the next one that was; written
        only where the object does not say it already (a job warm and ready says it once)."""
        if not_ready is None:
            condition = ledger.Condition(
                type=status_models.WARM_START_READY,
                status=True,
                reason=status_models.AT_GATE,
                message=AT_GATE_MESSAGE,
            )
        else:
            condition = ledger.Condition(
                type=status_models.WARM_START_READY,
                status=False,
                reason=status_models.WARM_START_NOT_READY,
                message=f"run due {timeline.rfc3339(scheduled_time)}: {not_ready}",
            )
        pending = self._ledger.pending.get(job)
        if (pending is None or condition.type not in pending.conditions) and conditions.has(
            self._known_status(job), condition
        ):
            return
        self._ledger.reported(job, condition)

    # slot_overlapped: the protocol's no-op; what the policy did shows in the run records, and
    # overlaps are counted in metrics.

    # Called by the controller.

    def configure(self, job: slots.JobRef, *, history: plans.History) -> None:
        self._ledger.history[job] = history

    def set_condition(
        self, job: slots.JobRef, condition: ledger.Condition, *, generation: int
    ) -> None:
        """Write ``condition`` at the next tick, unless the object already says exactly that.

        An operator restart re-observes every object and sets the conditions it had: writing
        them again would cost one API write per object (and one watch event per object on
        every replica) to say nothing new.
        """
        pending = self._ledger.pending.get(job)
        if (pending is None or condition.type not in pending.conditions) and conditions.says(
            self._known_status(job), condition, generation=generation
        ):
            return
        self._ledger.condition(job, condition, generation=generation)

    def show_schedule(self, job: slots.JobRef, text: str | None) -> None:
        """Show ``text`` as ``status.schedule`` (None: remove it, the spec is invalid) at the
        next tick, unless the object already shows it: as for conditions, an operator restart
        must not cost one write per object to say nothing new."""
        shown = text or ""
        pending = self._ledger.pending.get(job)
        if (pending is None or pending.schedule is None) and patch.shows_schedule(
            self._known_status(job), shown
        ):
            return
        self._ledger.schedule(job, shown)

    def reset_failures(self, job: slots.JobRef) -> None:
        """Write ``consecutiveFailures: 0`` at the next tick (the job was resumed)."""
        self._ledger.reset_failures(job)

    def forget(self, job: slots.JobRef) -> None:
        self._ledger.forget(job)
        self._stated.pop(job, None)

    async def run(self) -> None:
        """Write what is due, every tick, until closed or cancelled; then write everything left,
        until ``last_flush`` after the close (the writes of the tick in flight then included)."""
        try:
            while not self._closing:
                await asyncio.sleep(self._tick)
                await self._flush(due_only=True)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._flush_last())

    def close(self) -> None:
        """End ``run`` gracefully: after the writes of its current tick, it writes everything
        left and returns, ``last_flush`` after this call at the latest (any write still in
        flight then is cut). Await ``run`` (its task) for that final flush to be done.

        Cancelling ``run`` instead would cut the writes in flight; closing lets them finish.
        """
        self._closing = True
        self._cut_later()

    def _cut_later(self) -> None:
        if self._cutting is None:
            self._cutting = asyncio.get_running_loop().call_later(self._last_flush, self._cut)

    def _cut(self) -> None:
        self._cut_passed = True
        for write in self._writing:
            write.cancel()

    async def _flush_last(self) -> None:
        """Everything pending, what matters most first, until the cut: condition changes, then
        the jobs whose object still shows runs in progress (ended by the stop), then the
        others, oldest first. What the writes cut carried is not written by anyone (the next
        replica counts the runs it sees from then on)."""
        self._cut_later()
        pending = self._ledger.pending
        urgent = [job for job in self._ledger.urgent if job in pending]
        shown_active = [
            job
            for job in pending
            if job not in self._ledger.urgent and self._known_status(job).get("active")
        ]
        first = {*urgent, *shown_active}
        order = [*urgent, *shown_active, *(job for job in pending if job not in first)]
        if self._cut_passed:  # a write of the last tick held it up so long: nothing more starts
            left = len(order)
        else:
            # As many writers as may write at once, each taking the next job: a task per job
            # (28,000 at 30,000 jobs), nearly all cut unstarted, cost seconds past the cut.
            queue = collections.deque(order)

            async def write_in_order() -> None:
                while queue:
                    await self._write(queue.popleft())

            writers = [
                self._track(write_in_order()) for _ in range(min(self._concurrency, len(queue)))
            ]
            if writers:
                await asyncio.wait(writers)
            left = len(queue) + sum(writer.cancelled() for writer in writers)
        if left:
            logger.warning(
                "stopping: the status of %d of %d jobs not written within %s; their runs since "
                "their last write go unrecorded in status",
                left,
                len(order),
                timedelta(seconds=self._last_flush),
            )

    async def _flush(self, *, due_only: bool) -> None:
        now = self._clock()
        if due_only and now >= self._next_heartbeat:
            self._next_heartbeat = now + 1.0
            self._restate_active(now)
            self._measure(now)
        limit = self._allowance.allowed(now)
        due = self._due(now, limit=limit) if due_only else list(self._ledger.pending)
        self._allowance.spend(len(due))
        # Exceptions as results: a write cut at a stop must not end the tick's others.
        await asyncio.gather(*(self._start_write(job) for job in due), return_exceptions=True)

    def _start_write(self, job: slots.JobRef) -> "asyncio.Task[None]":
        return self._track(self._write(job))

    def _track(self, writing: Coroutine[Any, Any, None]) -> "asyncio.Task[None]":
        """``writing`` as a task among those in flight (the cut cancels them)."""
        write = asyncio.ensure_future(writing)
        self._writing.add(write)
        write.add_done_callback(self._writing.discard)
        return write

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

    async def _write(self, job: slots.JobRef) -> None:
        pending = self._ledger.take(job)
        if pending is None:
            return
        async with self._writers:
            try:
                body = self._cache.get(job) or await self._api.read(job)
                for _ in range(5):
                    current = status_reader.of(body)
                    settled = pending.settled(landed=functools.partial(patch.shows, current))
                    if settled.empty:
                        return  # what was in doubt had landed: nothing left to say
                    try:
                        body = await self._api.patch(
                            job,
                            self._compose(job, current, settled),
                            resource_version=body["metadata"]["resourceVersion"],
                        )
                    except status_api.ConflictError:
                        body = await self._api.read(job)
                        continue
                    self._cache.remember(body)
                    return
            except status_api.GoneError:
                return
            except status_api.UnavailableError as error:
                logger.warning("status of %s/%s not written: %s", job.namespace, job.name, error)
                pending = pending.doubted()
            except asyncio.CancelledError:
                self._ledger.keep(job, pending.doubted())  # for the final flush at shutdown
                raise
            except Exception:  # a bug: this job's write failed, the writer (every job's) goes on
                logger.exception("status of %s/%s not written", job.namespace, job.name)
                pending = pending.doubted()
        self._ledger.keep(job, pending)

    @contextlib.contextmanager
    def carry(self, job: slots.JobRef, current: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """The StatusCarrier seam: what is pending for ``job``, composed onto ``current``, for
        a status write made anyway (the kubernetes lock's claim), whose precondition must be
        the version ``current`` is the status of. Taken from this writer meanwhile; given
        back if the block raises (in doubt, unless it was a conflict)."""
        pending = self._ledger.take(job) or ledger.Pending()
        settled = pending.settled(landed=functools.partial(patch.shows, current))
        if settled.empty:
            yield {}  # nothing to say (or only what was in doubt, and it had landed)
            return
        try:
            yield self._compose(job, current, settled)
        except status_api.ConflictError:
            self._ledger.keep(job, pending)  # refused as a whole: nothing of it landed
            raise
        except status_api.GoneError:
            raise
        except BaseException:
            self._ledger.keep(job, pending.doubted())
            raise

    def _compose(
        self, job: slots.JobRef, current: Mapping[str, Any], pending: ledger.Pending
    ) -> dict[str, Any]:
        composed = patch.compose(
            current,
            pending,
            replica=self._replica,
            history=self._ledger.history.get(job, plans.History()),
            active=self._ledger.active.get(job, {}).values(),
            upcoming=self._ledger.upcoming.get(job),
            now=self._wall(),
        )
        self._stated[job] = self._clock()
        return composed

    def _known_status(self, job: slots.JobRef) -> Mapping[str, Any]:
        """The status of the newest body this replica knows ({} when none)."""
        return status_reader.of(self._cache.get(job))
