"""The slot loop of one job: wait for the next slot and decide what becomes of it.

The next slot is always computed from the previous slot, never from when a run finished, so
the loop does not drift. Deciding ends here and running begins in ``runs``, as APScheduler 4
splits ``_process_schedules`` (what is due, and what to do with it) from ``_process_jobs``
(running what was decided). Here: waiting toward each slot, which slots are due after a stall,
a re-arm or a wall-clock jump, the missed-run policy and its starting deadline, which slots are
given up (``passed_slots`` counts them, and the slots passed suspended or excluded, once across
replicas), and the order in which claims go out; for a target that arms slots ahead, waking
its lead early for each slot. Each slot to run is made a firing (``firings.Firing``) and handed
to ``runs.JobRuns`` with the ``armed.Armed`` it was decided under; the concurrency policy is
applied there, to the runs in flight when its claim lands. The loop never looks into a run, and
waits for one only when catching up: a slow run never delays the next slot.
"""

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from punctual.contracts import firings, protocols, records
from punctual.runtime import armed as armed_
from punctual.runtime import (
    in_flight,
    namespace_runs,
    notices,
    passed_slots,
    requests,
    runs,
    tasks,
    timers,
)
from punctual.scheduling import missed, plans, slots, timeline, windows

logger = logging.getLogger(__name__)

NO_FUTURE_SLOTS = "NoFutureSlots"
"""Why a loop stopped: its schedule has no slot within the search limit of the last one."""
ENDED = "Ended"
"""Why a loop stopped: the job's active window is over (``windows.has_ended``), as meant."""
SCHEDULING_FAILED = "SchedulingFailed"
"""Why a loop stopped: an error no slot's decision expects (a bug): the job is not scheduled."""

Stopped = Callable[[slots.JobRef, str, str], None]
"""Told that a job's loop stopped by itself: the job, a reason (CamelCase) and a message."""


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
        namespaces: namespace_runs.NamespaceShares,
        leases: protocols.HoldsRuns | None = None,
        stagger: timedelta = timedelta(),
        on_stopped: Stopped | None = None,
    ) -> None:
        """``namespaces``: what each namespace holds here (runs in flight and queued,
        backfills), shared by every job's loop. ``leases``: where its runs' leases are held
        (durable runs; None: none). ``on_stopped``: told when scheduling stops by itself (the
        schedule has run out, an error), never when it is stopped (re-armed, suspended,
        closed)."""
        self.job = job
        self._on_stopped = on_stopped
        self._timer = timer
        self._wall = wall
        self._lock = lock
        self._store = store
        self._stagger = stagger
        self._tasks = tasks.JobTasks()
        self._runs = runs.JobRuns(
            job=job,
            wall=wall,
            timer=timer,
            store=store,
            replica=replica,
            job_tasks=self._tasks,
            namespaces=namespaces,
            leases=leases,
        )
        self._requests = requests.JobRequests(
            job=job,
            wall=wall,
            store=store,
            replica=replica,
            job_tasks=self._tasks,
            job_runs=self._runs,
        )
        self._scheduling: asyncio.Task[None] | None = None
        self._armed: armed_.Armed | None = None
        self._handled_through: datetime | None = None
        self._backing_up = False
        self._passed = passed_slots.PassedSlots(
            job=job, timer=timer, wall=wall, job_tasks=self._tasks, claims=self._runs.claims
        )
        self._notices = notices.Notices(job=job, wall=wall, store=store)
        """Slots ahead whose owner said it claimed them (this loop a backup's)."""

    @property
    def active_slots(self) -> list[datetime]:
        return self._runs.active_slots

    def arm(
        self,
        plan: plans.JobPlan,
        executor: protocols.Executor,
        *,
        resume_after: datetime,
        suspended_through: datetime | None = None,
        lock: protocols.SlotLock | None = None,
        delay: timedelta = timedelta(),
    ) -> None:
        """(Re)start scheduling with ``plan`` from the first slot after ``resume_after``.

        Slots in ``(resume_after, suspended_through]`` passed while the job was suspended: they
        are counted so (``MissedReason.SUSPENDED``) and never run. A slot at or before
        ``resume_after`` is never run. Runs in flight and slots already claimed and queued are
        kept. ``lock``, when given, claims this job's slots instead of the loop's own (the
        queue target claims and enqueues in one step). ``delay`` postpones each claim further
        (a backup's: it claims only what the owner left free).
        """
        self.stop_scheduling()
        self._backing_up = delay > timedelta()
        self._notices.clear()
        arms_ahead = executor if isinstance(executor, protocols.ArmsAhead) else None
        armed = self._armed = armed_.Armed(
            plan=plan,
            executor=executor,
            lock=lock or self._lock,
            runs_view=executor if isinstance(executor, protocols.SeesRuns) else None,
            job_namer=executor if isinstance(executor, protocols.NamesJobs) else None,
            preparer=executor if isinstance(executor, protocols.PreparesRuns) else None,
            arms_ahead=arms_ahead,
            claim_is_the_run=lock is not None,
        )
        self._scheduling = self._tasks.spawn(
            self._schedule(
                armed, resume_after=resume_after, suspended_through=suspended_through, delay=delay
            ),
            name=f"schedule {self.job.namespace}/{self.job.name}",
            on_done=self._report_crash,
        )

    @property
    def handled_through(self) -> datetime | None:
        """The newest slot this loop dealt with (ran, claimed for another replica, counted
        missed): when scheduling stops, slots after it are nobody's here."""
        return self._handled_through

    def tell(self, member: str | None) -> None:
        """Tell ``member`` (the job's backup, while this replica owns it; None: nobody) of each
        scheduled slot claimed here."""
        self._runs.claims.backup = member

    def notice(self, slot: datetime) -> bool:
        """The owner said it claimed ``slot``: a backup's loop leaves it. True when taken: this
        loop backs the job up, ``slot`` is ahead of it (and not too far), and fewer than
        ``notices.MAX_NOTICED`` are held; otherwise the loop claims the slot when due, as
        without."""
        if not self._backing_up or self._scheduling is None:
            return False
        return self._notices.take(slot, handled_through=self._handled_through)

    def disarm_ahead(
        self, *, reason: records.MissedReason = records.MissedReason.DISARMED
    ) -> list[asyncio.Task[None]]:
        """Give up the slots armed ahead and not released yet: see ``ArmedAhead.disarm_all``."""
        return self._runs.ahead.disarm_all(reason=reason)

    def stop_scheduling(self) -> None:
        """Stop starting new slots; runs in flight and claimed slots go on."""
        if self._scheduling is not None:
            self._scheduling.cancel()
            self._scheduling = None

    async def close(self, *, grace: timedelta, reason: str = in_flight.OPERATOR_STOPPING) -> None:
        """Stop scheduling, cancel runs in flight and wait for them at most ``grace``.

        Claimed slots still queued are counted missed: they will not run here.
        """
        await tasks.wait_for(self.cancel(reason=reason), grace=grace)

    def cancel(
        self, *, reason: str = in_flight.OPERATOR_STOPPING, hand_over: bool = False
    ) -> set[asyncio.Task[object]]:
        """``close`` without the wait: the tasks still to end (many jobs' waited for at once).
        ``hand_over``: see ``JobRuns.stop``."""
        self.stop_scheduling()
        self._runs.stop(reason=reason, hand_over=hand_over)
        return self._tasks.cancel()

    def lost(self, lease: records.Lease) -> None:
        """The run ``lease`` was held for was lost (another replica held it, and died): see
        ``JobRequests.lost``. The run it was is made again from the lease (``firings.of_lease``)."""
        armed = self._armed
        firing = firings.of_lease(lease, armed.plan if armed is not None else None)
        self._requests.lost(firing, armed=armed, replica=lease.replica, started_at=lease.started_at)

    def run_now(self, token: str) -> bool:
        """Run the job once more, now, keyed by ``token`` (see ``JobRequests.run_now``), with the
        plan and executor it was last armed with, suspended or not; False if it never was."""
        if self._armed is None:
            return False
        self._requests.run_now(token, self._armed)
        return True

    def backfill(self, request: records.BackfillRequest) -> str | None:
        """Run the slots of ``request``'s window, oldest first, once each, in a task of its own
        (see ``JobRequests.backfill``); why not (None when it starts)."""
        armed = self._armed
        if armed is None:
            return "the job is not scheduled (see its Ready condition)"
        return self._requests.backfill(request, armed)

    def _report_crash(self, task: "asyncio.Task[None]") -> None:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            logger.error(
                "scheduling of %s/%s stopped", self.job.namespace, self.job.name, exc_info=error
            )
            self._stopped(SCHEDULING_FAILED, f"scheduling stopped on an error: {error!r}")

    def _stopped(self, reason: str, message: str) -> None:
        if self._on_stopped is not None:
            self._on_stopped(self.job, reason, message)

    def _run_out(self, schedule: timeline.Schedule, after: datetime) -> None:
        if windows.has_ended(schedule, after=after):
            logger.info("%s/%s has ended", self.job.namespace, self.job.name)
            self._stopped(ENDED, "its active window is over (spec.endsAt, or a one-off's run)")
            return
        logger.warning(
            "%s/%s has no slot after %s", self.job.namespace, self.job.name, after.isoformat()
        )
        self._stopped(
            NO_FUTURE_SLOTS,
            f"spec.schedule: no slot after {timeline.rfc3339(after)} within ten years: nothing "
            "more is scheduled",
        )

    async def _schedule(
        self,
        armed: armed_.Armed,
        *,
        resume_after: datetime,
        suspended_through: datetime | None,
        delay: timedelta,
    ) -> None:
        plan = armed.plan
        cursor = resume_after
        if suspended_through is not None and suspended_through > cursor:
            passed = await self._passed.due(
                plan.schedule.due_between, after=cursor, until=suspended_through
            )
            await self._passed.count_passed(passed, armed, reason=records.MissedReason.SUSPENDED)
            await self._passed.count_excluded(armed, after=cursor, until=suspended_through)
            cursor = suspended_through
        self._handled_through = cursor
        keep = missed.keep_for(plan.missed_runs)
        # This replica's stagger and a backup's delay postpone its claims; they are not
        # lateness of the job. A target that arms slots ahead has them claimed its lead early.
        delay = plan.offset + self._stagger + delay
        arms_ahead = armed.arms_ahead
        wake_delay = delay - arms_ahead.warm_lead if arms_ahead is not None else delay
        first = plan.schedule.next_after(cursor)
        if first is None:
            self._run_out(plan.schedule, cursor)
            return
        upcoming = first.at
        while True:
            self._store.slot_upcoming(self.job, scheduled_time=upcoming + plan.offset)
            # Before the wait, off the firing path: a cron next slot costs up to ~100 µs.
            following = _at(plan.schedule.next_after(upcoming))
            firing = firings.scheduled(self.job, upcoming, plan)
            if not self._backing_up:  # a backup seldom runs a slot: that run does the work
                self._runs.prepare(firing, armed)
            await self._passed.count_excluded(armed, after=cursor, until=upcoming, delay=delay)
            waited = upcoming + wake_delay > self._wall()
            await self._timer.wait_until(upcoming + wake_delay, namespace=self.job.namespace)
            now = self._wall() - delay  # on the job's own timeline, like the deadline
            if (waited or upcoming > now) and (following is None or following > now):
                # The normal case: woke for exactly one slot (or within its lead, for a target
                # that arms slots ahead: first seen late, it is armed at once, a shorter lead).
                if missed.within_deadline(upcoming, now=now, rules=plan.missed_runs):
                    decision = missed.Decision(run=(upcoming,), missed=0, given_up=())
                else:
                    decision = missed.give_up((upcoming,), total=1)
                newest = upcoming
            else:  # re-armed behind, stalled or the wall clock jumped: the missed-run policy
                due = await self._passed.due(
                    plan.schedule.due_between, after=cursor, until=now, keep=keep
                )
                if not due.total:
                    continue
                decision = missed.decide(
                    due.newest, total=due.total, now=now, rules=plan.missed_runs
                )
                newest = due.newest[-1]
                following = _at(plan.schedule.next_after(newest))
                await self._passed.count_excluded(armed, after=max(cursor, upcoming), until=newest)
            if decision.given_up:
                await self._passed.count_missed(decision, armed)
            run = (
                self._notices.unnoticed(decision.run, through=newest)
                if self._notices
                else decision.run
            )
            await self._runs.claim_in_order(
                [
                    firing if slot == upcoming else firings.scheduled(self.job, slot, plan)
                    for slot in run
                ],
                armed,
            )
            cursor = newest
            self._handled_through = cursor
            if following is None:
                self._run_out(plan.schedule, cursor)
                return
            upcoming = following


def _at(occurrence: timeline.Occurrence | None) -> datetime | None:
    return None if occurrence is None else occurrence.at
