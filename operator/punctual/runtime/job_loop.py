"""The slot loop of one job: wait for the next slot, claim it, run it, record what happened.

The next slot is always computed from the previous slot, never from when a run finished, so
the loop does not drift. Runs are tasks of their own: a slow run never delays the next slot;
the concurrency policy decides what overlapping slots do.
"""

import asyncio
import collections
import functools
import itertools
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual.runtime import seams, timers
from punctual.scheduling import durations, missed, overlap, plans, slots

logger = logging.getLogger(__name__)
_run_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class _Armed:
    plan: plans.JobPlan
    executor: seams.Executor


class JobLoop:
    """Schedules one job. ``arm`` again to change the plan; runs in flight survive it."""

    def __init__(
        self,
        *,
        job: slots.JobRef,
        timer: timers.WallTimer,
        wall: seams.WallClock,
        lock: seams.SlotLock,
        store: seams.RunStore,
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
        self._tasks: set[asyncio.Task[None]] = set()
        self._active: dict[datetime, asyncio.Task[None]] = {}
        self._queued: collections.deque[tuple[datetime, _Armed]] = collections.deque()
        self._replaced: set[datetime] = set()

    @property
    def active_slots(self) -> list[datetime]:
        return sorted(self._active)

    def arm(
        self,
        plan: plans.JobPlan,
        executor: seams.Executor,
        *,
        resume_after: datetime,
        missed_through: datetime | None = None,
    ) -> None:
        """(Re)start scheduling with ``plan`` from the first slot after ``resume_after``.

        Slots in ``(resume_after, missed_through]`` are counted missed and never run (a job
        resumed from suspension). A slot at or before ``resume_after`` is never run.
        """
        self.stop_scheduling()
        armed = _Armed(plan=plan, executor=executor)
        self._scheduling = self._spawn(
            self._schedule(armed, resume_after=resume_after, missed_through=missed_through),
            name=f"schedule {self.job.namespace}/{self.job.name}",
        )

    def stop_scheduling(self) -> None:
        """Stop starting new slots; runs in flight go on."""
        if self._scheduling is not None:
            self._scheduling.cancel()
            self._scheduling = None
        self._queued.clear()

    async def close(self, *, grace: timedelta) -> None:
        """Stop scheduling, cancel runs in flight and wait for them at most ``grace``."""
        self.stop_scheduling()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=grace.total_seconds())
            for task in pending:
                logger.warning("%s did not stop within %s", task.get_name(), grace)

    def _spawn(self, coroutine: Coroutine[None, None, None], *, name: str) -> asyncio.Task[None]:
        task = asyncio.create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _schedule(
        self, armed: _Armed, *, resume_after: datetime, missed_through: datetime | None
    ) -> None:
        plan = armed.plan
        cursor = resume_after
        if missed_through is not None and missed_through > cursor:
            self._give_up(plan, after=cursor, until=missed_through)
            cursor = missed_through
        keep = missed.keep_for(plan.missed_runs)
        upcoming = plan.schedule.next_after(cursor).at
        while True:
            fire_at = upcoming + plan.offset
            waited = fire_at > self._wall()
            await self._timer.wait_until(fire_at + self._stagger)
            now = self._wall() - plan.offset  # on the jittered timeline, like the deadline
            following = plan.schedule.next_after(upcoming).at
            if waited and following > now:  # the normal case: woke for exactly one slot
                on_time = missed.within_deadline(upcoming, now=now, rules=plan.missed_runs)
                run: tuple[datetime, ...] = (upcoming,) if on_time else ()
                given_up, newest = int(not on_time), upcoming
            else:  # re-armed behind, stalled or the wall clock jumped: the missed-run policy
                due = plan.schedule.due_between(after=cursor, until=now, keep=keep)
                if not due.total:
                    continue
                decision = missed.decide(
                    due.newest, total=due.total, now=now, rules=plan.missed_runs
                )
                run, given_up, newest = decision.run, decision.missed, due.newest[-1]
                following = plan.schedule.next_after(newest).at
            if given_up:
                self._store.slots_missed(self.job, count=given_up, newest=newest)
            for slot in run:
                started = await self._claim_and_start(slot, armed)
                if started is not None and len(run) > 1:
                    await asyncio.wait([started])  # catch-up runs go one after another, in order
            cursor, upcoming = newest, following

    def _give_up(self, plan: plans.JobPlan, *, after: datetime, until: datetime) -> None:
        due = plan.schedule.due_between(after=after, until=until, keep=1)
        if due.total:
            self._store.slots_missed(self.job, count=due.total, newest=due.newest[-1])

    async def _claim_and_start(self, slot: datetime, armed: _Armed) -> asyncio.Task[None] | None:
        plan = armed.plan
        slot_id = slots.slot_id(self.job, slot)
        claim = seams.Claim(
            job=self.job,
            slot=slot,
            slot_id=slot_id,
            holder=f"{self._replica}:{next(_run_ids)}",
            ttl=plan.lock_ttl,
        )
        try:
            if not await self._lock.claim(claim):
                return None
        except seams.LockUnavailableError as error:
            logger.warning("slot %s not claimed, lock backend unavailable: %s", slot_id, error)
            return None
        action = overlap.decide(
            plan.concurrency,
            active=len(self._active),
            queued=len(self._queued),
            max_queued=plan.max_queued,
        )
        match action:
            case overlap.Action.SKIP:
                self._skip_overlapping(slot, plan)
                return None
            case overlap.Action.ENQUEUE:
                self._queued.append((slot, armed))
                return None
            case overlap.Action.REPLACE:
                for running_slot, task in self._active.items():
                    self._replaced.add(running_slot)
                    task.cancel()
        return self._start(slot, armed)

    def _skip_overlapping(self, slot: datetime, plan: plans.JobPlan) -> None:
        record = seams.RunRecord(
            slot=slot,
            scheduled_time=slot + plan.offset,
            result=seams.RunResult.SKIPPED_OVERLAP,
            message=f"{len(self._active)} run(s) active, concurrencyPolicy {plan.concurrency}",
            replica=self._replica,
        )
        self._store.run_finished(self.job, record)

    def _start(self, slot: datetime, armed: _Armed) -> asyncio.Task[None]:
        task = self._spawn(self._execute(slot, armed), name=f"run {slots.slot_id(self.job, slot)}")
        self._active[slot] = task
        task.add_done_callback(functools.partial(self._finished, slot))
        return task

    def _finished(self, slot: datetime, _: asyncio.Task[None]) -> None:
        self._active.pop(slot, None)
        self._replaced.discard(slot)
        if self._queued and not self._active:
            queued_slot, armed = self._queued.popleft()
            self._start(queued_slot, armed)

    async def _execute(self, slot: datetime, armed: _Armed) -> None:
        plan = armed.plan
        context = seams.RunContext(
            job=self.job,
            slot=slot,
            slot_id=slots.slot_id(self.job, slot),
            scheduled_time=slot + plan.offset,
            timeout=plan.timeout,
        )
        started_at = self._wall()
        self._store.run_started(
            self.job,
            seams.ActiveRun(
                slot=slot,
                scheduled_time=context.scheduled_time,
                started_at=started_at,
                replica=self._replica,
            ),
        )
        deadline = asyncio.timeout(plan.timeout.total_seconds())
        try:
            async with deadline:
                outcome = await armed.executor(context)
            result = seams.RunResult.SUCCEEDED if outcome.succeeded else seams.RunResult.FAILED
            message = outcome.message
        except TimeoutError as error:
            if deadline.expired():
                result = seams.RunResult.TIMED_OUT
                message = f"cancelled at its timeout of {durations.format(plan.timeout)}"
            else:
                result, message = seams.RunResult.FAILED, _describe(error)
        except asyncio.CancelledError:
            reason = "replaced by a newer slot" if slot in self._replaced else "operator stopping"
            self._record(context, started_at, seams.RunResult.FAILED, f"cancelled: {reason}")
            raise
        except Exception as error:
            result, message = seams.RunResult.FAILED, _describe(error)
        self._record(context, started_at, result, message)

    def _record(
        self,
        context: seams.RunContext,
        started_at: datetime,
        result: seams.RunResult,
        message: str,
    ) -> None:
        record = seams.RunRecord(
            slot=context.slot,
            scheduled_time=context.scheduled_time,
            result=result,
            started_at=started_at,
            finished_at=self._wall(),
            message=message,
            replica=self._replica,
        )
        self._store.run_finished(self.job, record)


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
