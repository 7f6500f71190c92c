"""The status writer: ``StatusStore``, how each job's status is written.

Pacing: which jobs each tick writes, and how many, is ``write_pacing``'s.

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
from collections.abc import Callable, Coroutine, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from punctual.api import status_reader
from punctual.contracts import protocols, records
from punctual.kube import objects, status_api
from punctual.scheduling import plans, slots
from punctual.stores.status import conditions, ledger, patch, write_pacing

logger = logging.getLogger(__name__)

LAST_FLUSH = timedelta(seconds=3)
"""How long the last flush, at a replica's stop, may write: a replica with 10,000 jobs has
nearly all of them pending (each written every 100 s at 100 writes a second), more than the
API server takes in the few seconds a stop may last."""


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
        self._tick = tick.total_seconds()
        self._last_flush = last_flush.total_seconds()
        self._concurrency = concurrency
        self._writers = asyncio.Semaphore(concurrency)
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self._ledger = ledger.Ledger(replica=replica, clock=self._clock)
        self._pacing = write_pacing.WritePacing(
            ledger=self._ledger,
            interval=interval.total_seconds(),
            tick=self._tick,
            writes_per_second=writes_per_second,
        )
        self._closing = False
        self._writing: set[asyncio.Task[None]] = set()
        """The writes in flight (each tick's, the last flush's)."""
        self._cutting: asyncio.TimerHandle | None = None
        """Cuts every write still in flight ``last_flush`` after the close."""
        self._cut_passed = False

    @property
    def backlog(self) -> int:
        """Jobs with a status write pending, as of the last second's tick (for metrics: read
        from any thread)."""
        return self._pacing.backlog

    @property
    def lag(self) -> float:
        """Seconds since the oldest pending write became pending, as of the same tick (0: none
        is)."""
        return self._pacing.lag

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
        condition = conditions.warm_start_ready(scheduled_time, not_ready=not_ready)
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

    def show(self, job: slots.JobRef, shown: ledger.Shown) -> None:
        """Show ``shown`` as ``status.schedule`` and ``status.target`` (``NOTHING_SHOWN``:
        remove them, the spec is invalid) at the next tick, unless the object already shows
        them: as for conditions, an operator restart must not cost one write per object to say
        nothing new."""
        pending = self._ledger.pending.get(job)
        if (pending is None or pending.shown is None) and patch.shows_columns(
            self._known_status(job), shown
        ):
            return
        self._ledger.show(job, shown)

    def reset_failures(self, job: slots.JobRef) -> None:
        """Write ``consecutiveFailures: 0`` at the next tick (the job was resumed)."""
        self._ledger.reset_failures(job)

    def forget(self, job: slots.JobRef) -> None:
        self._ledger.forget(job)
        self._pacing.forget(job)

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
        due = self._pacing.take(self._clock(), due_only=due_only)
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
        self._pacing.stated(job, at=self._clock())
        return composed

    def _known_status(self, job: slots.JobRef) -> Mapping[str, Any]:
        """The status of the newest body this replica knows ({} when none)."""
        return status_reader.of(self._cache.get(job))
