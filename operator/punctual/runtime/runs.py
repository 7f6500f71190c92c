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

Around it: the claims (``claims``), the slots armed ahead (``ahead``), the runs in flight
(``in_flight``: started, executed, recorded, their leases held and released as steps of each),
the runs users ask for and the lost runs taken over (``requests``).
"""

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from punctual.contracts import firings, protocols, records
from punctual.runtime import ahead, claims, in_flight, namespace_runs, tasks, timers
from punctual.runtime import armed as armed_
from punctual.scheduling import missed, overlap, plans, slots

logger = logging.getLogger(__name__)

ELSEWHERE_POLL = timedelta(seconds=1)
"""How often a slot queued behind runs elsewhere (not this loop's) looks whether they are over."""

Claiming = asyncio.Task["asyncio.Task[None] | None"]
"""A firing's claim, in its task: the run's task when done, or None (not claimed, skipped,
queued)."""


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
        namespaces: namespace_runs.NamespaceShares,
        leases: protocols.HoldsRuns | None = None,
    ) -> None:
        self._job = job
        self.namespaces = namespaces
        self._wall = wall
        self._store = store
        self._replica = replica
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
        self.in_flight = in_flight.JobInFlight(
            job=job,
            wall=wall,
            store=store,
            replica=replica,
            job_tasks=job_tasks,
            runs_in_namespace=namespaces.runs_in_flight,
            leases=leases,
            on_freed=self._next_queued,
        )
        self._queued: list[tuple[firings.Firing, armed_.Armed]] = []
        """Claimed firings waiting for the runs before them (a few at most: ``max_queued``); a
        list, as an empty deque is much larger than an empty list, and every job has one."""
        self._draining: asyncio.Task[None] | None = None
        self._claiming: Claiming | None = None
        """The newest claim of a slot of the schedule still on its way."""

    @property
    def active_slots(self) -> list[datetime]:
        return sorted(run.firing.slot for run in self.in_flight)

    @property
    def stopping(self) -> str | None:
        """Why no more runs start (None: they do)."""
        return self.in_flight.stopping

    def prepare(self, firing: firings.Firing, armed: armed_.Armed) -> None:
        """Hand ``firing`` to the executor ahead of time, if it prepares runs (best effort)."""
        preparer = armed.preparer
        if preparer is None:
            return
        try:
            preparer.prepare(firing.context(timeout=armed.plan.timeout))
        except Exception:  # best effort: the run does the work itself at the slot
            logger.exception("slot %s: preparing its run failed", firing.slot_id)

    async def claim_in_order(self, due: Sequence[firings.Firing], armed: armed_.Armed) -> None:
        """Claim and start ``due``, slots of the schedule the loop decided to run.

        Each claim is a task of its own (tracked, never cancelled by re-arming): once a claim
        is on its way, it must not strand the slot claimed here and never run. The loop goes on
        to the next slot meanwhile, unless catching up: those runs go one after another, in
        order. Slots are claimed in order: the previous claim lands first (it has long landed,
        unless the lock is slower than the schedule). The loop holds no landed claim: the last
        claim and run of every job, kept until the next slot, would be a share of the objects
        the garbage collector walks that grows with the jobs.
        """
        previous = self._claiming
        if previous is not None:
            await asyncio.shield(previous)
        for firing in due:
            claiming = self._claim_and_admit(firing, armed)
            if len(due) > 1:
                started = await asyncio.shield(claiming)
                if started is not None:
                    await asyncio.wait([started])

    def _claim_and_admit(self, firing: firings.Firing, armed: armed_.Armed) -> Claiming:
        """Claim a slot of the schedule and admit it per the concurrency policy, in a task of
        its own (the newest claim in flight)."""
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
        # A claim held through a Redis failover (its write not acknowledged by the replicas,
        # or the server gone) answers once the failover is over: a slot of the schedule runs
        # late then only as the missed-run policy would run it after a stall; else it is
        # missed, counted here, where it was won. A claim that enqueued has run already.
        if (
            firing.trigger is records.Trigger.SCHEDULED
            and not armed.claim_is_the_run
            and not self._runs_when_answered(firing.slot, plan)
        ):
            logger.warning("slot %s: its claim was answered too late for it to run", firing.slot_id)
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

    def _runs_when_answered(self, slot: datetime, plan: plans.JobPlan) -> bool:
        now = plan.nominal(self._wall())
        # The next slot is looked up only when it may be due: not on the path of a claim
        # answered at once (a cron next slot is the costly part of a claim's path).
        following = (
            plan.schedule.next_after(slot) if now - slot >= plan.schedule.shortest_period else None
        )
        return missed.runs_when_answered(
            slot,
            now=now,
            following=None if following is None else following.at,
            rules=plan.missed_runs,
        )

    def stop(self, *, reason: str, hand_over: bool = False) -> None:
        """Start no more runs (``reason`` is what the cancelled ones are recorded with), and
        count the claimed firings still queued missed: they will not run here.

        ``hand_over`` (the operator stopping, its runs' leases left to expire): a run whose
        work goes on at its target without this replica (a Job, ``protocols.SeesRuns``) is
        cancelled here but not recorded; the replica that takes its lease over follows it to
        its real end (``lost``)."""
        self.in_flight.stop(reason=reason, hand_over=hand_over)
        self.claims.stop()
        if self._queued:
            newest = max(firing.slot for firing, _ in self._queued)
            self._store.slots_missed(self._job, count=len(self._queued), newest=newest)
            while self._queued:
                firing, _ = self._dequeue()
                self.in_flight.release(firing)

    def admit(self, firing: firings.Firing, armed: armed_.Armed) -> in_flight.Run | None:
        """A firing this replica owns: start it, queue it or skip it, per the concurrency
        policy's verdict; the run when it started."""
        plan = armed.plan
        verdict, elsewhere = self._verdict(firing, armed)
        if verdict.overlapped:
            self._store.slot_overlapped(self._job, slot=firing.slot, policy=plan.concurrency)
        match verdict.action:
            case overlap.Action.START:
                return self.in_flight.start(firing, armed)
            case overlap.Action.REPLACE:
                return self.in_flight.start(firing, armed, after=self._replace(elsewhere, armed))
            case overlap.Action.ENQUEUE:
                self._queued.append((firing, armed))
                self.namespaces.queued_runs.added(self._job.namespace)
                if not self.in_flight:  # only runs elsewhere: no finish here will start it
                    self._drain_when_idle_elsewhere(armed)
                return None
            case overlap.Action.SKIP:
                self._skip(firing, records.RunResult.SKIPPED_OVERLAP, verdict.why_skipped)
                return None
            case overlap.Action.SKIP_AT_LIMIT | overlap.Action.SKIP_AT_NAMESPACE_LIMIT:
                self._skip(firing, records.RunResult.SKIPPED_IN_FLIGHT_LIMIT, verdict.why_skipped)
                return None
            case overlap.Action.SKIP_AT_NAMESPACE_QUEUE_LIMIT:
                self._skip(firing, records.RunResult.SKIPPED_QUEUE_LIMIT, verdict.why_skipped)
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
        running, queueing = self.namespaces.runs_in_flight, self.namespaces.queued_runs
        verdict = overlap.admit(
            plan.concurrency,
            overlap.InFlight(
                here=len(self.in_flight),
                elsewhere=len(elsewhere),
                queued=len(self._queued),
                namespace=namespace,
                namespace_here=running.count(namespace),
                namespace_queued=queueing.count(namespace),
                replica=self._replica,
            ),
            overlap.Limits(
                max_queued=plan.max_queued,
                max_active=plan.max_runs_in_flight,
                max_namespace_active=running.limit,
                max_namespace_queued=queueing.limit,
            ),
        )
        return verdict, elsewhere

    def _replace(self, elsewhere: list[datetime], armed: armed_.Armed) -> list[asyncio.Task[None]]:
        """Cancel the runs in flight here and have the target stop theirs and those
        ``elsewhere`` (``Replace``); the tasks stopping them at the target."""
        aborting = self.in_flight.replace(armed)
        for slot in elsewhere:
            context = firings.scheduled(self._job, slot, armed.plan).context(
                timeout=armed.plan.timeout
            )
            task = self.in_flight.abort(context, armed)
            if task is not None:
                aborting.append(task)
        return aborting

    def _running_elsewhere(self, armed: armed_.Armed, *, besides: datetime) -> list[datetime]:
        view = armed.runs_view
        if view is None:
            return []
        try:
            running = view.running_slots()
        except Exception:  # best effort: a view that fails is no view
            logger.exception("%r could not tell its runs", view)
            return []
        here = {run.firing.slot for run in self.in_flight}
        return sorted(slot for slot in running if slot not in here and slot != besides)

    def goes_on(self, slot: datetime, armed: armed_.Armed) -> bool:
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
        while self._queued and not self.in_flight and self.stopping is None:
            queued = self._queued[0][0]
            has_room = self.namespaces.runs_in_flight.has_room(self._job.namespace)
            if has_room and not self._running_elsewhere(armed, besides=queued.slot):
                queued, armed = self._dequeue()
                self.in_flight.start(queued, armed)
                return
            await asyncio.sleep(ELSEWHERE_POLL.total_seconds())

    def _skip(self, firing: firings.Firing, result: records.RunResult, message: str) -> None:
        self._store.run_finished(
            self._job, firing.record(result, replica=self._replica, message=message)
        )
        self.in_flight.release(firing)  # held from its arm ahead, if it was armed

    def _next_queued(self) -> None:
        """A run here was recorded: start the first queued firing in its place, or once the
        runs elsewhere are over."""
        if self._queued and not self.in_flight and self.stopping is None:
            queued, armed = self._queued[0]
            if self._running_elsewhere(armed, besides=queued.slot):
                self._drain_when_idle_elsewhere(armed)
            else:
                self._dequeue()
                self.in_flight.start(queued, armed)

    def _dequeue(self) -> tuple[firings.Firing, armed_.Armed]:
        """The first queued firing, out of the queue and of its namespace's count."""
        self.namespaces.queued_runs.removed(self._job.namespace)
        return self._queued.pop(0)
