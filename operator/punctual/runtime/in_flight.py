"""The runs of one job in flight on this replica: each started, executed under its timeout,
aborted at its target when given up, and recorded once; its lease held as its first step and
released with its record (``protocols.HoldsRuns``). What starts them is ``runs.JobRuns``, which
applies the concurrency policy and keeps the queue."""

import asyncio
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from punctual.contracts import firings, protocols, records
from punctual.runtime import ahead, namespace_runs, tasks
from punctual.runtime import armed as armed_
from punctual.scheduling import durations, slots

logger = logging.getLogger(__name__)

OPERATOR_STOPPING = "operator stopping"


@dataclass(slots=True)
class Run:
    """A run this replica claimed and started; ``recorded`` once its record is out (or it is
    handed over, unrecorded, see ``JobRuns.stop``). Not a record but the run's live state: its
    task, whether it was replaced, and its result change as it goes."""

    firing: firings.Firing
    context: records.RunContext
    started_at: datetime
    task: "asyncio.Task[None] | None" = None
    recorded: bool = False
    replaced: bool = False
    """Cancelled by a newer slot (``Replace``), which had its work aborted already."""
    result: records.RunResult | None = None


class JobInFlight:
    """The runs of one job in flight here, by slot id."""

    def __init__(
        self,
        *,
        job: slots.JobRef,
        wall: protocols.WallClock,
        store: protocols.RunStore,
        replica: str,
        job_tasks: tasks.JobTasks,
        runs_in_namespace: namespace_runs.NamespaceCounts,
        leases: protocols.HoldsRuns | None,
        on_freed: Callable[[], None],
    ) -> None:
        """``on_freed``: told each time a run's place is freed and recorded (the queue's turn)."""
        self._job = job
        self._wall = wall
        self._store = store
        self._replica = replica
        self._tasks = job_tasks
        self._runs_in_namespace = runs_in_namespace
        self._leases = leases
        self._on_freed = on_freed
        self._active: dict[str, Run] = {}
        self.stopping: str | None = None
        """Why the job's runs stop here (None: they do not)."""
        self._hand_over = False

    def __len__(self) -> int:
        return len(self._active)

    def __iter__(self) -> Iterator[Run]:
        return iter(self._active.values())

    def stop(self, *, reason: str, hand_over: bool) -> None:
        """See ``runs.JobRuns.stop``."""
        self.stopping = reason
        self._hand_over = hand_over

    def replace(self, armed: armed_.Armed) -> list[asyncio.Task[None]]:
        """Cancel every run in flight here, and have the target stop what they left there
        (``Replace``); the tasks stopping them at the target."""
        aborting = []
        for run in self._active.values():
            run.replaced = True
            if run.task is not None:
                run.task.cancel()
            aborting.append(self.abort(run.context, armed))
        return [task for task in aborting if task is not None]

    def start(
        self,
        firing: firings.Firing,
        armed: armed_.Armed,
        *,
        after: Sequence[asyncio.Task[None]] = (),
    ) -> Run:
        """Start the run of ``firing``; its work at the target begins once ``after`` (the runs
        it replaces being stopped there) are done."""
        context = firing.context(timeout=armed.plan.timeout)
        if firing.slot_id not in self._active:  # the count follows ``_active``'s size
            self._runs_in_namespace.added(self._job.namespace)
        run = self._active[firing.slot_id] = Run(
            firing=firing, context=context, started_at=self._wall()
        )
        self._store.run_started(
            self._job,
            firing.active_run(
                started_at=run.started_at,
                replica=self._replica,
                job_name=armed.job_name(context),
            ),
        )
        # A task cancelled before its first step never enters _execute: recorded when done.
        run.task = self._tasks.spawn(
            self._execute(run, armed, after=after),
            name=f"run {firing.slot_id}",
            on_done=lambda _: self._finish(run, *_CANCELLED_EARLY),
        )
        return run

    async def _execute(
        self, run: Run, armed: armed_.Armed, *, after: Sequence[asyncio.Task[None]]
    ) -> None:
        if not self._hold(run):
            return
        if after:
            # Replace in CronJob's order: what the replaced runs left at the target is gone (a
            # Job deleted, its deletion seen) before this run's work is created. Bounded: each
            # abort gives up after ABORT_TIMEOUT. Cancelled meanwhile: nothing was started
            # (recorded as cancelled before it started).
            await asyncio.wait(after)
        timeout = armed.plan.timeout
        deadline = asyncio.timeout(timeout.total_seconds())
        start_mode: records.StartMode | None = None
        try:
            async with deadline:
                outcome = await armed.executor(run.context)
            result, message, start_mode = _result_of(outcome), outcome.message, outcome.start_mode
        except TimeoutError as error:
            if deadline.expired():
                result = records.RunResult.TIMED_OUT
                message = f"cancelled at its timeout of {durations.format(timeout)}"
                self.abort(run.context, armed)
            else:
                result, message = records.RunResult.FAILED, records.describe_error(error)
        except asyncio.CancelledError:
            if self._hand_over and armed.runs_view is not None and not run.replaced:
                self._free(run)  # its Job goes on: followed by the lease's next holder
            else:
                self._finish(run, records.RunResult.CANCELLED, f"cancelled: {self._why(run)}")
            raise
        except Exception as error:  # any failure of a run is recorded, the loop goes on
            result, message = records.RunResult.FAILED, records.describe_error(error)
        self._finish(run, result, message, start_mode=start_mode)

    def abort(self, context: records.RunContext, armed: armed_.Armed) -> asyncio.Task[None] | None:
        """Have the executor stop what the run left at the target, in a task of its own (that
        task; None: nothing to stop).

        Only for runs the loop gave up on (Replace, timeout); never while stopping, when the
        target's work is left alone (a Job outlives the operator).
        """
        executor = armed.executor
        if self.stopping is not None or not isinstance(executor, protocols.Abortable):
            return None
        return self._tasks.spawn(self._aborting(executor, context), name=f"abort {context.slot_id}")

    async def _aborting(self, executor: protocols.Abortable, context: records.RunContext) -> None:
        try:
            async with asyncio.timeout(ahead.ABORT_TIMEOUT.total_seconds()):
                await executor.abort(context)
        except Exception:  # logged; the run is recorded already, the schedule goes on
            logger.exception("slot %s: stopping its run at the target failed", context.slot_id)

    def _why(self, run: Run) -> str:
        """Why ``run`` was cancelled."""
        return "replaced by a newer slot" if run.replaced else self.stopping or OPERATOR_STOPPING

    def _finish(
        self,
        run: Run,
        result: records.RunResult,
        message: str,
        *,
        start_mode: records.StartMode | None = None,
    ) -> None:
        """Record ``run`` once, release its lease, free its place, and give the queue its
        turn."""
        if not self._free(run):
            return
        run.result = result
        record = run.firing.record(
            result,
            replica=self._replica,
            message=message,
            started_at=run.started_at,
            finished_at=self._wall(),
            start_mode=start_mode,
        )
        self._store.run_finished(self._job, record)
        self.release(run.firing)
        self._on_freed()

    def _free(self, run: Run) -> bool:
        """Free ``run``'s place; False if it was freed (and recorded, or handed over) before."""
        if run.recorded:
            return False
        run.recorded = True
        if self._active.pop(run.firing.slot_id, None) is not None:
            self._runs_in_namespace.removed(self._job.namespace)
        return True

    def _hold(self, run: Run) -> bool:
        """Hold ``run``'s lease, its first step: exactly once rests on it from here on. A hold
        that fails is no run started unprotected: it is recorded Failed, saying why (False)."""
        if self._leases is None:
            return True
        try:
            self._leases.hold(run.firing.lease(replica=self._replica, started_at=run.started_at))
        except Exception as error:
            logger.exception("slot %s: its lease could not be held", run.firing.slot_id)
            message = f"not started, its lease could not be held: {records.describe_error(error)}"
            self._finish(run, records.RunResult.FAILED, message)
            return False
        return True

    def release(self, firing: firings.Firing) -> None:
        if self._leases is not None:
            self._leases.release(firing.slot_id)


def _result_of(outcome: records.Outcome) -> records.RunResult:
    if outcome.timed_out:
        return records.RunResult.TIMED_OUT
    if outcome.cancelled:
        return records.RunResult.CANCELLED
    return records.RunResult.SUCCEEDED if outcome.succeeded else records.RunResult.FAILED


_CANCELLED_EARLY = (records.RunResult.CANCELLED, "cancelled before it started")
