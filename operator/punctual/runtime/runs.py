"""The runs of one job: admit each firing claimed here, queue it, run it, abort it, record it.

``job_loop`` decides what becomes of each slot (is it due, is it given up, in what order the
claims go out); this module carries that out, after APScheduler 4's split of
``_process_schedules`` (what is due, and what to do with it) from ``_process_jobs`` (running
what was decided). The cut sits at the claim: from there on a firing (``firings.Firing``: the
run as decided, whatever decided it) is this replica's to carry, and every firing it claims
ends in exactly one record, whatever happens to the loop meanwhile (re-arming, disarming,
shutdown). The concurrency policy is applied here, not in the loop, because it counts the runs
in flight when the claim lands, not when the slot came due: what it says is one pure verdict
(``overlap.admit``), which this module carries out.

Around it: the claims (``claims``), the slots armed ahead (``ahead``), the runs users ask for
(``requests``). A run's lease, where runs are durable, is held and released here as steps of
the run (``protocols.HoldsRuns``).
"""

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual.contracts import firings, protocols, records
from punctual.runtime import ahead, claims, tasks, timers
from punctual.runtime import armed as armed_
from punctual.runtime import namespace_runs as namespace_runs_
from punctual.scheduling import durations, missed, overlap, slots

logger = logging.getLogger(__name__)

OPERATOR_STOPPING = "operator stopping"
ELSEWHERE_POLL = timedelta(seconds=1)
"""How often a slot queued behind runs elsewhere (not this loop's) looks whether they are over."""

Claiming = asyncio.Task["asyncio.Task[None] | None"]
"""A firing's claim, in its task: the run's task when done, or None (not claimed, skipped,
queued)."""


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


class JobRuns:
    """The runs of one job on this replica, from the claim of each firing to its one record."""

    def __init__(
        self,
        *,
        job: slots.JobRef,
        wall: protocols.WallClock,
        timer: timers.WallTimer,
        store: protocols.RunStore,
        replica: str,
        job_tasks: tasks.JobTasks,
        namespace_runs: namespace_runs_.NamespaceRuns,
        leases: protocols.HoldsRuns | None = None,
    ) -> None:
        self._job = job
        self._namespace_runs = namespace_runs
        self._wall = wall
        self._store = store
        self._replica = replica
        self._leases = leases
        self._tasks = job_tasks
        self.claims = claims.JobClaims(job=job, store=store, replica=replica, job_tasks=job_tasks)
        self.ahead = ahead.ArmedAhead(
            job=job,
            wall=wall,
            timer=timer,
            store=store,
            leases=leases,
            replica=replica,
            job_tasks=job_tasks,
            runs=self,
        )
        self._active: dict[str, Run] = {}
        """By slot id."""
        self._queued: list[tuple[firings.Firing, armed_.Armed]] = []
        """Claimed firings waiting for the runs before them (a few at most: ``max_queued``); a
        list, as an empty deque takes 600 bytes, 6 MB at 10,000 jobs."""
        self._stopping: str | None = None
        self._hand_over = False
        self._draining: asyncio.Task[None] | None = None
        self._claiming: Claiming | None = None
        """The newest claim of a slot of the schedule still on its way."""

    @property
    def active_slots(self) -> list[datetime]:
        return sorted(run.firing.slot for run in self._active.values())

    @property
    def stopping(self) -> str | None:
        """Why no more runs start (None: they do)."""
        return self._stopping

    def prepare(self, firing: firings.Firing, armed: armed_.Armed) -> None:
        """Hand ``firing`` to the executor ahead of time, if it prepares runs (best effort)."""
        preparer = armed.preparer
        if preparer is None:
            return
        try:
            preparer.prepare(firing.context(timeout=armed.plan.timeout))
        except Exception:  # best effort: the run does the work itself at the slot
            logger.exception("slot %s: preparing its run failed", firing.slot_id)

    @property
    def claim_in_flight(self) -> Claiming | None:
        """The newest ``claim_and_admit`` not landed yet (None once it has)."""
        return self._claiming

    def claim_and_admit(self, firing: firings.Firing, armed: armed_.Armed) -> Claiming:
        """Claim a slot of the schedule and admit it per the concurrency policy, in a task of
        its own (the newest claim in flight, ``claim_in_flight``)."""
        claiming = self._claiming = self._tasks.spawn(
            self.claim_then_admit(firing, armed),
            name=f"claim {firing.slot_id}",
            on_done=self._claim_landed,
        )
        return claiming

    def _claim_landed(self, claiming: Claiming) -> None:
        if self._claiming is claiming:
            self._claiming = None

    async def claim_then_admit(
        self, firing: firings.Firing, armed: armed_.Armed
    ) -> asyncio.Task[None] | None:
        """Claim ``firing`` and admit it; the run's task, if it started."""
        loop = asyncio.get_running_loop()
        sent = loop.time()
        if not await self.claims.claim(firing, armed, run=True):
            return None
        # Checked right before the effect: a replica paused (a long GC pause, SIGSTOP) while
        # its claim was out may wake once the claim has lapsed and another replica, which saw
        # it gone from the members, claimed the slot again. It gives the slot up instead.
        plan = armed.plan
        if loop.time() - sent >= plan.lock_ttl.total_seconds():
            logger.warning("slot %s: its claim took longer than it lasts; not run", firing.slot_id)
            self._store.slots_missed(self._job, count=1, newest=firing.slot)
            return None
        # A claim held in doubt through a Redis failover (its write not acknowledged by the
        # replicas) answers once the failover is over: a slot of the schedule that is past its
        # starting deadline by then is missed, not run late.
        if firing.trigger is records.Trigger.SCHEDULED and not missed.within_deadline(
            firing.slot, now=plan.nominal(self._wall()), rules=plan.missed_runs
        ):
            logger.warning(
                "slot %s: its claim was answered past its starting deadline; not run",
                firing.slot_id,
            )
            self._store.slots_missed(self._job, count=1, newest=firing.slot)
            return None
        arms_ahead = armed.arms_ahead
        if (
            arms_ahead is not None
            and firing.trigger is not records.Trigger.MANUAL
            and firing.scheduled_time > self._wall()  # else too late to arm: it runs cold
        ):
            self.ahead.arm(firing, armed, arms_ahead)
            return None
        run = self.admit(firing, armed)
        return None if run is None else run.task

    def lost(
        self,
        firing: firings.Firing,
        *,
        armed: armed_.Armed | None,
        replica: str,
        started_at: datetime | None,
    ) -> None:
        """The run of ``firing`` that ``replica`` started was lost (its lease expired), and
        this replica took it over: record it Lost and, if the plan the job is armed with now
        says so and it was the first attempt, run it once more (the take-over is the claim),
        the same firing: its slot id (the target's Idempotency-Key), trigger and token kept.

        A slot armed ahead whose time has not come is no lost run: ``replica`` died during its
        lead, what it armed releases itself at its time, and this replica carries it on as if
        it had armed it (arming again adopts what is there, or arms what never got there).

        Nor is a run whose work goes on at its target without ``replica`` (a Job the executor
        still sees running, ``protocols.SeesRuns``): ``replica`` stopped (and handed it over,
        see ``stop``) or died, and this replica follows it to its real end and records that,
        the same attempt (starting it again adopts what is there). A Job that ended while
        nobody followed it is recorded Lost, as any run whose end nobody saw."""
        going = self._stopping is None
        if armed is not None and going:
            arms_ahead = armed.arms_ahead
            if arms_ahead is not None and firing.scheduled_time > self._wall():
                self.ahead.arm(firing, armed, arms_ahead)
                return
            if self._goes_on(firing.slot, armed):
                logger.info(
                    "slot %s: its run goes on at the target after replica %s stopped; followed",
                    firing.slot_id,
                    replica,
                )
                self._start(firing, armed)
                return
        retry = armed is not None and going and armed.plan.retry_lost_runs and firing.attempt == 1
        message = (
            f"replica {replica} stopped renewing the run's lease (attempt {firing.attempt}); "
            f"noticed by {self._replica}"
        )
        self._store.run_finished(
            self._job,
            firing.record(
                records.RunResult.LOST,
                replica=replica,
                message=message + ("; running the slot once more" if retry else "; not run again"),
                started_at=started_at,
                finished_at=self._wall(),
            ),
        )
        if retry and armed is not None:
            self.admit(firing.retried(), armed)

    def stop(self, *, reason: str, hand_over: bool = False) -> None:
        """Start no more runs (``reason`` is what the cancelled ones are recorded with), and
        count the claimed firings still queued missed: they will not run here.

        ``hand_over`` (the operator stopping, its runs' leases left to expire): a run whose
        work goes on at its target without this replica (a Job, ``protocols.SeesRuns``) is
        cancelled here but not recorded; the replica that takes its lease over follows it to
        its real end (``lost``)."""
        self._stopping = reason
        self._hand_over = hand_over
        self.claims.stop()
        if self._queued:
            newest = max(firing.slot for firing, _ in self._queued)
            self._store.slots_missed(self._job, count=len(self._queued), newest=newest)
            for firing, _ in self._queued:
                self._release(firing)
            self._queued.clear()

    def admit(self, firing: firings.Firing, armed: armed_.Armed) -> Run | None:
        """A firing this replica owns: start it, queue it or skip it, per the concurrency
        policy's verdict; the run when it started."""
        plan = armed.plan
        verdict, elsewhere = self._verdict(firing, armed)
        if verdict.overlapped:
            self._store.slot_overlapped(self._job, slot=firing.slot, policy=plan.concurrency)
        match verdict.action:
            case overlap.Action.START:
                return self._start(firing, armed)
            case overlap.Action.REPLACE:
                return self._start(firing, armed, after=self._replace(elsewhere, armed))
            case overlap.Action.ENQUEUE:
                self._queued.append((firing, armed))
                if not self._active:  # only runs elsewhere: no finish here will start it
                    self._drain_when_idle_elsewhere(armed)
                return None
            case overlap.Action.SKIP:
                self._skip(firing, records.RunResult.SKIPPED_OVERLAP, verdict.why_skipped)
                return None
            case overlap.Action.SKIP_AT_LIMIT | overlap.Action.SKIP_AT_NAMESPACE_LIMIT:
                self._skip(firing, records.RunResult.SKIPPED_IN_FLIGHT_LIMIT, verdict.why_skipped)
                return None

    def would_start(self, firing: firings.Firing, armed: armed_.Armed) -> bool:
        """Whether ``firing`` would start now (a look: nothing is reported or done)."""
        verdict, _ = self._verdict(firing, armed)
        return verdict.action in (overlap.Action.START, overlap.Action.REPLACE)

    def _verdict(
        self, firing: firings.Firing, armed: armed_.Armed
    ) -> tuple[overlap.Verdict, list[datetime]]:
        """What the concurrency policy says of ``firing`` now, and the runs elsewhere it
        counted (runs this loop does not track: another replica's, an earlier process's)."""
        plan = armed.plan
        elsewhere = self._running_elsewhere(armed, besides=firing.slot)
        namespace = self._job.namespace
        verdict = overlap.admit(
            plan.concurrency,
            overlap.InFlight(
                here=len(self._active),
                elsewhere=len(elsewhere),
                queued=len(self._queued),
                namespace=namespace,
                namespace_here=self._namespace_runs.active(namespace),
                replica=self._replica,
            ),
            overlap.Limits(
                max_queued=plan.max_queued,
                max_active=plan.max_runs_in_flight,
                max_namespace_active=self._namespace_runs.limit,
            ),
        )
        return verdict, elsewhere

    def _replace(self, elsewhere: list[datetime], armed: armed_.Armed) -> list[asyncio.Task[None]]:
        """Cancel the runs in flight here and have the target stop theirs and those
        ``elsewhere`` (``Replace``); the tasks stopping them at the target."""
        aborting = []
        for run in self._active.values():
            run.replaced = True
            if run.task is not None:
                run.task.cancel()
            aborting.append(self._abort(run.context, armed))
        for slot in elsewhere:
            context = firings.scheduled(self._job, slot, armed.plan).context(
                timeout=armed.plan.timeout
            )
            aborting.append(self._abort(context, armed))
        return [task for task in aborting if task is not None]

    def _running_elsewhere(self, armed: armed_.Armed, *, besides: datetime) -> list[datetime]:
        view = armed.runs_view
        if view is None:
            return []
        try:
            running = view.running_slots()
        except Exception:  # best effort: a view that fails is no view
            logger.exception("%r could not tell its runs", view)
            return []
        here = {run.firing.slot for run in self._active.values()}
        return sorted(slot for slot in running if slot not in here and slot != besides)

    def _goes_on(self, slot: datetime, armed: armed_.Armed) -> bool:
        """Whether the run of ``slot`` goes on at its target, whoever started it (an executor
        that sees runs: ``protocols.SeesRuns``); best effort, False when it cannot tell."""
        view = armed.runs_view
        if view is None:
            return False
        try:
            return slot in view.running_slots()
        except Exception:  # best effort: a view that fails is no view
            logger.exception("%r could not tell its runs", view)
            return False

    def _drain_when_idle_elsewhere(self, armed: armed_.Armed) -> None:
        """Start the queued firings once the runs elsewhere are over (checked every second)."""
        if self._draining is None or self._draining.done():
            self._draining = self._tasks.spawn(
                self._drain(armed), name=f"queue of {self._job.namespace}/{self._job.name}"
            )

    async def _drain(self, armed: armed_.Armed) -> None:
        """Start the first queued firing once the runs elsewhere are over and the namespace has
        room here: unlike a firing started in the place of its job's run, it adds one."""
        while self._queued and not self._active and self._stopping is None:
            queued = self._queued[0][0]
            has_room = self._namespace_runs.has_room(self._job.namespace)
            if has_room and not self._running_elsewhere(armed, besides=queued.slot):
                queued, armed = self._queued.pop(0)
                self._start(queued, armed)
                return
            await asyncio.sleep(ELSEWHERE_POLL.total_seconds())

    def _skip(self, firing: firings.Firing, result: records.RunResult, message: str) -> None:
        self._store.run_finished(
            self._job, firing.record(result, replica=self._replica, message=message)
        )
        self._release(firing)  # held from its arm ahead, if it was armed

    def _start(
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
            self._namespace_runs.started(self._job.namespace)
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
                self._abort(run.context, armed)
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

    def _abort(self, context: records.RunContext, armed: armed_.Armed) -> asyncio.Task[None] | None:
        """Have the executor stop what the run left at the target, in a task of its own (that
        task; None: nothing to stop).

        Only for runs the loop gave up on (Replace, timeout); never while stopping, when the
        target's work is left alone (a Job outlives the operator).
        """
        executor = armed.executor
        if self._stopping is not None or not isinstance(executor, protocols.Abortable):
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
        return "replaced by a newer slot" if run.replaced else self._stopping or OPERATOR_STOPPING

    def _finish(
        self,
        run: Run,
        result: records.RunResult,
        message: str,
        *,
        start_mode: records.StartMode | None = None,
    ) -> None:
        """Record ``run`` once, release its lease, free its place, and start the next queued
        firing."""
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
        self._release(run.firing)
        if self._queued and not self._active and self._stopping is None:
            queued, armed = self._queued[0]
            if self._running_elsewhere(armed, besides=queued.slot):
                self._drain_when_idle_elsewhere(armed)
            else:
                self._queued.pop(0)
                self._start(queued, armed)

    def _free(self, run: Run) -> bool:
        """Free ``run``'s place; False if it was freed (and recorded, or handed over) before."""
        if run.recorded:
            return False
        run.recorded = True
        if self._active.pop(run.firing.slot_id, None) is not None:
            self._namespace_runs.ended(self._job.namespace)
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

    def _release(self, firing: firings.Firing) -> None:
        if self._leases is not None:
            self._leases.release(firing.slot_id)


def _result_of(outcome: records.Outcome) -> records.RunResult:
    if outcome.timed_out:
        return records.RunResult.TIMED_OUT
    if outcome.cancelled:
        return records.RunResult.CANCELLED
    return records.RunResult.SUCCEEDED if outcome.succeeded else records.RunResult.FAILED


_CANCELLED_EARLY = (records.RunResult.CANCELLED, "cancelled before it started")
