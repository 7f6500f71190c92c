"""The slot loop of one job: wait for the next slot, claim it, run it, record what happened.

The next slot is always computed from the previous slot, never from when a run finished, so
the loop does not drift. Runs are tasks of their own: a slow run never delays the next slot;
the concurrency policy decides what overlapping slots do. Every slot this replica claims ends
in exactly one record, whatever happens to the loop meanwhile (re-arming, disarming, shutdown).
"""

import asyncio
import collections
import itertools
import logging
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from punctual.contracts import protocols, records
from punctual.runtime import timers
from punctual.scheduling import durations, missed, overlap, plans, slots

logger = logging.getLogger(__name__)
_run_ids = itertools.count(1)
_T = TypeVar("_T")

OPERATOR_STOPPING = "operator stopping"
ELSEWHERE_POLL = timedelta(seconds=1)
"""How often a slot queued behind runs elsewhere (not this loop's) looks whether they are over."""
ABORT_TIMEOUT = timedelta(seconds=30)
"""How long the loop lets an executor stop what a run left at its target (delete a Job)."""


@dataclass(frozen=True, slots=True)
class _Armed:
    plan: plans.JobPlan
    executor: protocols.Executor
    lock: protocols.SlotLock
    # ``executor`` again, where it has these abilities: checked once per arm, not per slot (an
    # isinstance against a runtime-checkable protocol costs microseconds on every call).
    runs_view: protocols.SeesRuns | None = None
    job_namer: protocols.NamesJobs | None = None
    preparer: protocols.PreparesRuns | None = None


@dataclass(slots=True)
class _Run:
    """A run this replica claimed and started; ``recorded`` once its record is out."""

    context: records.RunContext
    started_at: datetime
    task: "asyncio.Task[None] | None" = None
    recorded: bool = field(default=False)
    attempt: int = 1


class JobLoop:
    """Schedules one job. ``arm`` again to change the plan; runs in flight survive it."""

    def __init__(
        self,
        *,
        job: slots.JobRef,
        timer: timers.WallTimer,
        wall: protocols.WallClock,
        lock: protocols.SlotLock,
        store: protocols.RunStore,
        replica: str,
        stagger: timedelta = timedelta(),
    ) -> None:
        self.job = job
        self._timer = timer
        self._wall = wall
        self._lock = lock
        self._store = store
        self._replica = replica
        self._stagger = stagger
        self._scheduling: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[object]] = set()
        self._active: dict[datetime, _Run] = {}
        self._queued: collections.deque[tuple[datetime, _Armed]] = collections.deque()
        self._replaced: set[datetime] = set()
        self._stopping: str | None = None
        self._draining: asyncio.Task[None] | None = None
        self._armed: _Armed | None = None
        self._handled_through: datetime | None = None
        self._last_slot: datetime | None = None
        self._last_slot_id = ""

    @property
    def active_slots(self) -> list[datetime]:
        return sorted(self._active)

    def arm(
        self,
        plan: plans.JobPlan,
        executor: protocols.Executor,
        *,
        resume_after: datetime,
        missed_through: datetime | None = None,
        lock: protocols.SlotLock | None = None,
    ) -> None:
        """(Re)start scheduling with ``plan`` from the first slot after ``resume_after``.

        Slots in ``(resume_after, missed_through]`` are counted missed and never run (a job
        resumed from suspension). A slot at or before ``resume_after`` is never run. Runs in
        flight and slots already claimed and queued are kept. ``lock``, when given, claims
        this job's slots instead of the loop's own (the queue target claims and enqueues in
        one step).
        """
        self.stop_scheduling()
        armed = self._armed = _Armed(
            plan=plan,
            executor=executor,
            lock=lock or self._lock,
            runs_view=executor if isinstance(executor, protocols.SeesRuns) else None,
            job_namer=executor if isinstance(executor, protocols.NamesJobs) else None,
            preparer=executor if isinstance(executor, protocols.PreparesRuns) else None,
        )
        self._scheduling = self._spawn(
            self._schedule(armed, resume_after=resume_after, missed_through=missed_through),
            name=f"schedule {self.job.namespace}/{self.job.name}",
        )
        self._scheduling.add_done_callback(self._report_crash)

    @property
    def handled_through(self) -> datetime | None:
        """The newest slot this loop dealt with (ran, claimed for another replica, counted
        missed): when scheduling stops, slots after it are nobody's here."""
        return self._handled_through

    def stop_scheduling(self) -> None:
        """Stop starting new slots; runs in flight and claimed slots go on."""
        if self._scheduling is not None:
            self._scheduling.cancel()
            self._scheduling = None

    async def close(self, *, grace: timedelta, reason: str = OPERATOR_STOPPING) -> None:
        """Stop scheduling, cancel runs in flight and wait for them at most ``grace``.

        Claimed slots still queued are counted missed: they will not run here.
        """
        self._stopping = reason
        self.stop_scheduling()
        if self._queued:
            newest = max(slot for slot, _ in self._queued)
            self._store.slots_missed(self.job, count=len(self._queued), newest=newest)
            self._queued.clear()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=grace.total_seconds())
            for task in pending:
                logger.warning("%s did not stop within %s", task.get_name(), grace)

    def _spawn(self, coroutine: Coroutine[None, None, _T], *, name: str) -> asyncio.Task[_T]:
        task = asyncio.create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _report_crash(self, task: "asyncio.Task[None]") -> None:
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "scheduling of %s/%s stopped",
                self.job.namespace,
                self.job.name,
                exc_info=task.exception(),
            )

    async def _schedule(
        self, armed: _Armed, *, resume_after: datetime, missed_through: datetime | None
    ) -> None:
        plan = armed.plan
        cursor = resume_after
        if missed_through is not None and missed_through > cursor:
            skipped = plan.schedule.due_between(
                after=cursor, until=missed_through, keep=missed.GIVEN_UP_CLAIMS
            )
            if skipped.total:
                await self._count_missed(missed.give_up(skipped.newest, total=skipped.total), armed)
            cursor = missed_through
        self._handled_through = cursor
        keep = missed.keep_for(plan.missed_runs)
        # This replica's stagger delays its claims; it is not lateness of the job.
        delay = plan.offset + self._stagger
        upcoming = plan.schedule.next_after(cursor).at
        claiming: asyncio.Task[asyncio.Task[None] | None] | None = None
        while True:
            self._store.slot_upcoming(self.job, scheduled_time=upcoming + plan.offset)
            # Before the wait, off the firing path: a cron next slot costs up to ~100 µs.
            following = plan.schedule.next_after(upcoming).at
            if armed.preparer is not None:
                self._prepare(armed.preparer, self._context(upcoming, armed))
            waited = upcoming + delay > self._wall()
            await self._timer.wait_until(upcoming + delay)
            now = self._wall() - delay  # on the job's own timeline, like the deadline
            if waited and following > now:  # the normal case: woke for exactly one slot
                if missed.within_deadline(upcoming, now=now, rules=plan.missed_runs):
                    decision = missed.Decision(run=(upcoming,), missed=0, given_up=())
                else:
                    decision = missed.give_up((upcoming,), total=1)
                newest = upcoming
            else:  # re-armed behind, stalled or the wall clock jumped: the missed-run policy
                due = plan.schedule.due_between(after=cursor, until=now, keep=keep)
                if not due.total:
                    continue
                decision = missed.decide(
                    due.newest, total=due.total, now=now, rules=plan.missed_runs
                )
                newest = due.newest[-1]
                following = plan.schedule.next_after(newest).at
            if decision.given_up:
                await self._count_missed(decision, armed)
            claiming = await self._claim_in_order(decision.run, armed, previous=claiming)
            cursor, upcoming = newest, following
            self._handled_through = cursor

    async def _claim_in_order(
        self,
        due: Sequence[datetime],
        armed: _Armed,
        *,
        previous: "asyncio.Task[asyncio.Task[None] | None] | None",
    ) -> "asyncio.Task[asyncio.Task[None] | None] | None":
        """Claim and start ``due``; the task of the last claim.

        Each claim is a task of its own (tracked, never cancelled by re-arming): once a claim
        is on its way, it must not strand the slot claimed here and never run. The loop goes on
        to the next slot meanwhile, unless catching up: those runs go one after another, in
        order. Slots are claimed in order: the previous claim lands first (it has long landed,
        unless the lock is slower than the schedule).
        """
        if previous is not None and not previous.done():
            await asyncio.shield(previous)
        claiming = previous
        for slot in due:
            claiming = self._spawn(
                self._claim_and_start(slot, armed), name=f"claim {self._slot_id(slot)}"
            )
            if len(due) > 1:
                started = await asyncio.shield(claiming)
                if started is not None:
                    await asyncio.wait([started])
        return claiming

    def _prepare(self, preparer: protocols.PreparesRuns, context: records.RunContext) -> None:
        try:
            preparer.prepare(context)
        except Exception:  # best effort: the run does the work itself at the slot
            logger.exception("slot %s: preparing its run failed", context.slot_id)

    async def _count_missed(self, decision: missed.Decision, armed: _Armed) -> None:
        """Count the slots given up, each on the one replica that claims it.

        Every replica that fell behind decides on the slots due since its own cursor, and
        replicas fall behind at different times: a slot another replica ran or counted is
        claimed already, so the count never multiplies. The claims go out together (one round
        trip for a lock that batches them), made oldest first: a lock that is a high-water mark
        (the kubernetes backend) takes them in that order. Slots older than the ones listed (a
        long outage) are counted by the replica that claims the oldest listed one. What is won
        is counted even when the loop is cancelled meanwhile (a re-arm, a shutdown); a claim
        with no answer, from the lock or in time, goes uncounted rather than counted twice.
        """
        claims = [
            self._spawn(self._claim(slot, armed, run=False), name=f"count {self._slot_id(slot)}")
            for slot in decision.given_up
        ]
        try:
            await asyncio.wait(claims)
        finally:
            won = [claim.done() and not claim.cancelled() and claim.result() for claim in claims]
            for claim in claims:
                claim.cancel()
            older = decision.missed - len(decision.given_up)
            count = sum(won) + (older if won[0] else 0)
            ours = [slot for slot, mine in zip(decision.given_up, won, strict=True) if mine]
            if ours:
                self._store.slots_missed(self.job, count=count, newest=ours[-1])

    async def _claim(self, slot: datetime, armed: _Armed, *, run: bool = True) -> bool:
        """Fail closed: no claim, no run, whatever went wrong."""
        plan = armed.plan
        claim = records.Claim(
            job=self.job,
            slot=slot,
            slot_id=self._slot_id(slot),
            holder=f"{self._replica}:{next(_run_ids)}",
            ttl=plan.lock_ttl,
            scheduled_time=slot + plan.offset,
            run=run,
        )
        try:
            return await armed.lock.claim(claim)
        except protocols.LockUnavailableError as error:
            logger.warning("slot %s not claimed, lock unavailable: %s", claim.slot_id, error)
        except Exception:
            logger.exception("slot %s not claimed, the lock failed", claim.slot_id)
        return False

    def lost(
        self, slot: datetime, *, replica: str, started_at: datetime | None, attempt: int
    ) -> None:
        """The run of ``slot`` that ``replica`` started was lost (its lease expired), and this
        replica took it over: record it Lost and, if the plan says so and it was the first
        attempt, run the slot once more (the take-over is the claim)."""
        armed = self._armed
        retry = (
            armed is not None
            and armed.plan.retry_lost_runs
            and attempt == 1
            and self._stopping is None
        )
        offset = armed.plan.offset if armed is not None else timedelta()
        self._store.run_finished(
            self.job,
            records.RunRecord(
                slot=slot,
                scheduled_time=slot + offset,
                result=records.RunResult.LOST,
                started_at=started_at,
                finished_at=self._wall(),
                message=f"replica {replica} stopped renewing the run's lease (attempt {attempt}); "
                f"noticed by {self._replica}"
                + ("; running the slot once more" if retry else "; not run again"),
                replica=replica,
            ),
        )
        if retry and armed is not None:
            self._admit(slot, armed, attempt=attempt + 1)

    async def _claim_and_start(self, slot: datetime, armed: _Armed) -> asyncio.Task[None] | None:
        if not await self._claim(slot, armed):
            return None
        return self._admit(slot, armed)

    def _admit(
        self, slot: datetime, armed: _Armed, *, attempt: int = 1
    ) -> asyncio.Task[None] | None:
        """A slot this replica owns: start it, queue it or skip it, per the concurrency policy."""
        plan = armed.plan
        # Runs this loop does not track (another replica's, an earlier process's) count too.
        elsewhere = self._running_elsewhere(armed, besides=slot)
        active = len(self._active) + len(elsewhere)
        if active or self._queued:
            self._store.slot_overlapped(self.job, slot=slot, policy=plan.concurrency)
        action = overlap.decide(
            plan.concurrency,
            active=active,
            queued=len(self._queued),
            max_queued=plan.max_queued,
        )
        match action:
            case overlap.Action.SKIP:
                self._skip_overlapping(slot, plan, active=active)
                return None
            case overlap.Action.ENQUEUE:
                self._queued.append((slot, armed))
                if not self._active:  # only runs elsewhere: no finish here will start it
                    self._drain_when_idle_elsewhere(armed)
                return None
            case overlap.Action.REPLACE:
                for running_slot, run in self._active.items():
                    self._replaced.add(running_slot)
                    if run.task is not None:
                        run.task.cancel()
                for running_slot in elsewhere:
                    self._abort_context(self._context(running_slot, armed), armed)
        return self._start(slot, armed, attempt=attempt)

    def _running_elsewhere(self, armed: _Armed, *, besides: datetime) -> list[datetime]:
        view = armed.runs_view
        if view is None:
            return []
        try:
            running = view.running_slots()
        except Exception:  # best effort: a view that fails is no view
            logger.exception("%r could not tell its runs", view)
            return []
        return sorted(slot for slot in running if slot not in self._active and slot != besides)

    def _drain_when_idle_elsewhere(self, armed: _Armed) -> None:
        """Start the queued slots once the runs elsewhere are over (checked every second)."""
        if self._draining is None or self._draining.done():
            self._draining = self._spawn(
                self._drain(armed), name=f"queue of {self.job.namespace}/{self.job.name}"
            )

    async def _drain(self, armed: _Armed) -> None:
        while self._queued and not self._active and self._stopping is None:
            queued_slot = self._queued[0][0]
            if not self._running_elsewhere(armed, besides=queued_slot):
                queued_slot, armed = self._queued.popleft()
                self._start(queued_slot, armed)
                return
            await asyncio.sleep(ELSEWHERE_POLL.total_seconds())

    def _skip_overlapping(self, slot: datetime, plan: plans.JobPlan, *, active: int) -> None:
        record = records.RunRecord(
            slot=slot,
            scheduled_time=slot + plan.offset,
            result=records.RunResult.SKIPPED_OVERLAP,
            message=f"{active} run(s) active, concurrencyPolicy {plan.concurrency}",
            replica=self._replica,
        )
        self._store.run_finished(self.job, record)

    def _context(self, slot: datetime, armed: _Armed) -> records.RunContext:
        return records.RunContext(
            job=self.job,
            slot=slot,
            slot_id=self._slot_id(slot),
            scheduled_time=slot + armed.plan.offset,
            timeout=armed.plan.timeout,
        )

    def _start(self, slot: datetime, armed: _Armed, *, attempt: int = 1) -> asyncio.Task[None]:
        context = self._context(slot, armed)
        run = self._active[slot] = _Run(context=context, started_at=self._wall(), attempt=attempt)
        self._store.run_started(
            self.job,
            records.ActiveRun(
                slot=slot,
                scheduled_time=context.scheduled_time,
                started_at=run.started_at,
                replica=self._replica,
                job_name=(
                    armed.job_namer.job_name(context) if armed.job_namer is not None else None
                ),
                attempt=attempt,
            ),
        )
        run.task = self._spawn(self._execute(run, armed), name=f"run {context.slot_id}")
        # A task cancelled before its first step never enters _execute: record it here.
        run.task.add_done_callback(lambda _: self._finish(run, *_CANCELLED_EARLY))
        return run.task

    async def _execute(self, run: _Run, armed: _Armed) -> None:
        timeout = armed.plan.timeout
        deadline = asyncio.timeout(timeout.total_seconds())
        try:
            async with deadline:
                outcome = await armed.executor(run.context)
            if outcome.timed_out:
                result = records.RunResult.TIMED_OUT
            elif outcome.succeeded:
                result = records.RunResult.SUCCEEDED
            else:
                result = records.RunResult.FAILED
            message = outcome.message
        except TimeoutError as error:
            if deadline.expired():
                result = records.RunResult.TIMED_OUT
                message = f"cancelled at its timeout of {durations.format(timeout)}"
                self._abort(run, armed)
            else:
                result, message = records.RunResult.FAILED, _describe(error)
        except asyncio.CancelledError:
            if run.context.slot in self._replaced:
                self._abort(run, armed)
            self._finish(run, records.RunResult.FAILED, f"cancelled: {self._cancel_reason(run)}")
            raise
        except Exception as error:  # any failure of a run is recorded, the loop goes on
            result, message = records.RunResult.FAILED, _describe(error)
        self._finish(run, result, message)

    def _abort(self, run: _Run, armed: _Armed) -> None:
        self._abort_context(run.context, armed)

    def _abort_context(self, context: records.RunContext, armed: _Armed) -> None:
        """Have the executor stop what the run left at the target, in a task of its own.

        Only for runs the loop gave up on (Replace, timeout); never while stopping, when the
        target's work is left alone (a Job outlives the operator).
        """
        executor = armed.executor
        if self._stopping is None and isinstance(executor, protocols.Abortable):
            self._spawn(self._aborting(executor, context), name=f"abort {context.slot_id}")

    async def _aborting(self, executor: protocols.Abortable, context: records.RunContext) -> None:
        try:
            async with asyncio.timeout(ABORT_TIMEOUT.total_seconds()):
                await executor.abort(context)
        except Exception:  # logged; the run is recorded already, the schedule goes on
            logger.exception("slot %s: stopping its run at the target failed", context.slot_id)

    def _cancel_reason(self, run: _Run) -> str:
        if run.context.slot in self._replaced:
            return "replaced by a newer slot"
        return self._stopping or OPERATOR_STOPPING

    def _finish(self, run: _Run, result: records.RunResult, message: str) -> None:
        """Record ``run`` once, free its place, and start the next queued slot."""
        if run.recorded:
            return
        run.recorded = True
        slot = run.context.slot
        self._active.pop(slot, None)
        self._replaced.discard(slot)
        record = records.RunRecord(
            slot=slot,
            scheduled_time=run.context.scheduled_time,
            result=result,
            started_at=run.started_at,
            finished_at=self._wall(),
            message=message,
            replica=self._replica,
        )
        self._store.run_finished(self.job, record)
        if self._queued and not self._active and self._stopping is None:
            queued_slot, armed = self._queued[0]
            if self._running_elsewhere(armed, besides=queued_slot):
                self._drain_when_idle_elsewhere(armed)
            else:
                self._queued.popleft()
                self._start(queued_slot, armed)

    def _slot_id(self, slot: datetime) -> str:
        # The same slot's id is asked for four times (prepared, claimed, named, started): kept.
        if slot != self._last_slot:
            self._last_slot, self._last_slot_id = slot, slots.slot_id(self.job, slot)
        return self._last_slot_id


_CANCELLED_EARLY = (records.RunResult.FAILED, "cancelled before it started")


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
