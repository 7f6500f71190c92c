"""The runs of one job: claim a slot, admit it, queue it, run it, abort it, record it.

``job_loop`` decides what becomes of each slot (is it due, is it given up, in what order the
claims go out); this module carries that out, after APScheduler 4's split of
``_process_schedules`` (what is due, and what to do with it) from ``_process_jobs`` (running
what was decided). The cut sits at the claim: from there on a slot is this replica's to carry,
and every slot it claims ends in exactly one record, whatever happens to the loop meanwhile
(re-arming, disarming, shutdown). The concurrency policy is applied here, not in the loop,
because it counts the runs in flight when the claim lands, not when the slot came due.

The loop hands each slot over with the ``Armed`` it was decided under, through
``JobRuns.prepare``, ``claim_and_admit``, ``count_missed``, ``lost``, ``disarm_ahead`` and
``stop``, and never looks into a run. Both sides start their tasks in the job's one
``tasks.JobTasks``.

A target that arms slots ahead (``protocols.ArmsAhead``, a warm start) has its slots claimed
its lead ahead (the loop wakes early for them): a slot won ahead of its time is armed at once
and carried to its time here (``_carry_armed``), where the concurrency policy is applied as to
any slot and the run starts; a slot won past its time runs cold, as any. What was armed is
removed when it must not run: the policy skipped or queued the slot, or the job was suspended,
its spec changed or deleted (``disarm_ahead``: counted missed, reason ``Disarmed``). When the
operator stops, or its replica dies, what was armed is left to release itself; its lease, held
from the arm, lets another replica carry it on (``lost``).
"""

import asyncio
import dataclasses
import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeAlias

from punctual.contracts import protocols, records
from punctual.runtime import tasks, timers
from punctual.scheduling import durations, missed, overlap, plans, slots

logger = logging.getLogger(__name__)
_run_ids = itertools.count(1)

OPERATOR_STOPPING = "operator stopping"
ELSEWHERE_POLL = timedelta(seconds=1)
"""How often a slot queued behind runs elsewhere (not this loop's) looks whether they are over."""
ABORT_TIMEOUT = timedelta(seconds=30)
"""How long the loop lets an executor stop what a run left at its target (delete a Job), or
remove what it armed ahead."""
DECIDED_AHEAD = timedelta(seconds=2)
"""How long before an armed slot's release its concurrency policy is looked at: a slot the
policy would not start is removed at the target before it releases itself (a Job's deletion
reaches its pod through the garbage collector and the kubelet). A run that ends within this of
the slot still counts as running, as a watch of it would be that late anyway."""

Claiming: TypeAlias = asyncio.Task[asyncio.Task[None] | None]
"""A slot's claim, in its task: the run's task when done, or None (not claimed, skipped, queued)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Armed:
    """What the job was armed with. Each slot carries the one it was decided under: a slot
    queued before a re-arm runs with the plan and executor it was admitted with."""

    plan: plans.JobPlan
    executor: protocols.Executor
    lock: protocols.SlotLock
    # ``executor`` again, where it has these abilities: checked once per arm, not per slot (an
    # isinstance against a runtime-checkable protocol costs microseconds on every call).
    runs_view: protocols.SeesRuns | None = None
    job_namer: protocols.NamesJobs | None = None
    preparer: protocols.PreparesRuns | None = None
    arms_ahead: protocols.ArmsAhead | None = None
    claim_is_the_run: bool = False
    """The job claims through a lock of its own whose won claim is the run's effect (the queue
    target's claim appends the entry): a claim answered late has run, late, whatever the
    missed-run policy would have said."""


class NamespaceRuns:
    """The runs in flight on this replica per namespace, summed over its jobs, and the cap on
    them: one for every job of a supervisor, counted where a run starts and where it is
    recorded, so that a slot's decision reads its namespace's count in one look, whatever the
    number of jobs. A namespace leaves the count when its last run ends."""

    def __init__(self, *, limit: int) -> None:
        self.limit = limit
        self._counts: dict[str, int] = {}

    def active(self, namespace: str) -> int:
        return self._counts.get(namespace, 0)

    def has_room(self, namespace: str) -> bool:
        return self.active(namespace) < self.limit

    def started(self, namespace: str) -> None:
        self._counts[namespace] = self.active(namespace) + 1

    def ended(self, namespace: str) -> None:
        left = self.active(namespace) - 1
        if left > 0:
            self._counts[namespace] = left
        else:
            self._counts.pop(namespace, None)


@dataclass(slots=True)
class _Run:
    """A run this replica claimed and started; ``recorded`` once its record is out (or it is
    handed over, unrecorded, see ``JobRuns.stop``). Not a
    record but the run's live state: its task and whether it is recorded change as it goes."""

    context: records.RunContext
    started_at: datetime
    task: "asyncio.Task[None] | None" = None
    recorded: bool = field(default=False)
    attempt: int = 1


@dataclass(slots=True)
class _Ahead:
    """A slot claimed here and armed at its target, not released yet: the arm's task, and the
    task carrying the slot to its time."""

    context: records.RunContext
    arms_ahead: protocols.ArmsAhead
    arming: "asyncio.Task[None] | None" = None
    carrying: "asyncio.Task[None] | None" = None


class JobRuns:
    """The runs of one job on this replica, from the claim of each slot to its one record."""

    def __init__(
        self,
        *,
        job: slots.JobRef,
        wall: protocols.WallClock,
        timer: timers.WallTimer,
        store: protocols.RunStore,
        replica: str,
        job_tasks: tasks.JobTasks,
        namespace_runs: NamespaceRuns,
    ) -> None:
        self._job = job
        self._timer = timer
        self._namespace_runs = namespace_runs
        self._wall = wall
        self._store = store
        self._replica = replica
        self._active: dict[datetime, _Run] = {}
        self._ahead: dict[datetime, _Ahead] = {}
        """The slots armed ahead here and not released yet."""
        self._queued: list[tuple[datetime, Armed]] = []
        """Claimed slots waiting for the runs before them (a few at most: ``max_queued``); a
        list, as an empty deque is much larger than an empty list, and every job has one."""
        self._replaced: set[datetime] = set()
        self._stopping: str | None = None
        self._hand_over = False
        self._tasks = job_tasks
        self._draining: asyncio.Task[None] | None = None
        self._claiming: Claiming | None = None
        """The newest claim of a slot of the schedule still on its way."""
        self._last_slot: datetime | None = None
        self._last_slot_id = ""
        self._backfilled: dict[datetime, str] = {}
        """The past slots a backfill taken here is claiming or running, with its token."""
        self._backfill_results: dict[datetime, records.RunResult] = {}
        """What became of each of them, for the backfill to count (taken when it reads it)."""
        self._unclaimed: missed.Decision | None = None
        """The slots of the schedule whose claim got no answer (the lock unavailable), bounded
        like any slots given up: counted missed once a claim gets an answer again."""
        self._tokens: dict[datetime, str] = {}
        """The runs asked for by hand, from their claim to their record: each one's slot (when
        it was asked for, on this replica's clock) and its ``punctual.dev/run-now`` token."""
        self.backup: str | None = None
        """The member to tell of each scheduled slot claimed here (sharding: the job's backup,
        while this replica owns it): see ``records.Claim.backup``."""

    @property
    def active_slots(self) -> list[datetime]:
        return sorted(self._active)

    def prepare(self, slot: datetime, armed: Armed) -> None:
        """Hand ``slot`` to the executor ahead of time, if it prepares runs (best effort)."""
        preparer = armed.preparer
        if preparer is None:
            return
        context = self._context(slot, armed)
        try:
            preparer.prepare(context)
        except Exception:  # best effort: the run does the work itself at the slot
            logger.exception("slot %s: preparing its run failed", context.slot_id)

    @property
    def claim_in_flight(self) -> Claiming | None:
        """The newest ``claim_and_admit`` not landed yet (None once it has)."""
        return self._claiming

    def claim_and_admit(self, slot: datetime, armed: Armed) -> Claiming:
        """Claim ``slot`` and admit it per the concurrency policy, in a task of its own."""
        claiming = self._claiming = self._tasks.spawn(
            self._claim_and_admit(slot, armed),
            name=f"claim {self._slot_id(slot)}",
            on_done=self._claim_landed,
        )
        return claiming

    def _claim_landed(self, claiming: Claiming) -> None:
        if self._claiming is claiming:
            self._claiming = None

    def run_now(self, token: str, armed: Armed) -> Claiming:
        """Claim the run asked for with ``token`` and admit it like a slot due now, in a task
        of its own. Its claim is keyed by the token, so of every replica asked, one runs it,
        once; the concurrency policy, the timeout and the history apply as to any slot."""
        # Its slot is when it was asked for, plus one microsecond: slots of a schedule are
        # whole milliseconds, so it is never one of theirs.
        now = self._wall()
        slot = now.replace(microsecond=now.microsecond // 1000 * 1000 + 1)
        while slot in self._tokens:  # two asked within a millisecond
            slot += timedelta(milliseconds=1)
        self._tokens[slot] = token
        return self._tasks.spawn(
            self._claim_and_admit(slot, armed),
            name=f"claim {slots.run_now_slot_id(self._job, token)}",
        )

    async def backfill(
        self, request: records.BackfillRequest, due: Sequence[datetime], armed: Armed
    ) -> None:
        """Carry out the backfill ``request`` of the slots ``due`` (oldest first), if this
        replica wins the claim of the request: each slot claimed like any slot of the job (one
        that ran already, or runs elsewhere, is refused and skipped), admitted under the
        concurrency policy, and waited for before the next. Progress goes to the store."""
        plan = armed.plan
        request_claim = records.Claim(
            job=self._job,
            slot=request.start,
            slot_id=slots.backfill_request_id(self._job, request.token),
            holder=f"{self._replica}:{next(_run_ids)}",
            ttl=plan.lock_ttl,
            run=False,
            backfill=request.token,
        )
        try:
            if not await armed.lock.claim(request_claim):
                return
        except Exception:  # fail closed, as for a slot: no claim, nothing run
            logger.exception("backfill %s not claimed", request_claim.slot_id)
            return
        progress = records.BackfillProgress(request=request, replica=self._replica, total=len(due))
        self._store.backfill_progressed(self._job, progress)
        for slot in due:
            if self._stopping is not None:
                break
            self._backfilled[slot] = request.token
            result: records.RunResult | None = None
            try:
                if await self._claim(slot, armed, run=True):
                    started = self._admit(slot, armed)
                    if started is not None:
                        await asyncio.wait([started])
                    result = self._backfill_results.pop(slot, None)
            finally:
                self._backfilled.pop(slot, None)
            progress = _counted(progress, result)
            self._store.backfill_progressed(self._job, progress)
        progress = dataclasses.replace(progress, finished=True)
        self._store.backfill_progressed(self._job, progress)

    async def count_missed(
        self,
        decision: missed.Decision,
        armed: Armed,
        *,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        """Count the slots ``decision`` gives up, each on the one replica that claims it.

        Every replica that fell behind decides on the slots due since its own cursor, and
        replicas fall behind at different times: a slot another replica ran or counted is
        claimed already, so the count never multiplies. The claims go out together (one round
        trip for a lock that batches them), made oldest first: a lock that is a high-water mark
        (the kubernetes backend) takes them in that order. Slots older than the ones listed (a
        long outage) are counted by the replica that claims the oldest listed one. What is won
        is counted even when the caller is cancelled meanwhile (a re-arm, a shutdown); a claim
        with no answer, from the lock or in time, is left to count once the lock answers again
        (``LockUnavailable``) rather than counted twice.
        """
        claims = [
            self._tasks.spawn(
                self._claim(slot, armed, run=False), name=f"count {self._slot_id(slot)}"
            )
            for slot in decision.given_up
        ]
        try:
            await asyncio.wait(claims)
        finally:
            answers = [
                claim.result() if claim.done() and not claim.cancelled() else None
                for claim in claims
            ]
            for claim in claims:
                claim.cancel()
            tally = missed.tally(decision, answers)
            if tally.newest is not None:
                self._store.slots_missed(
                    self._job, count=tally.counted, newest=tally.newest, reason=reason
                )
            if tally.unanswered is not None:
                self._remember_unclaimed(tally.unanswered)

    def lost(
        self,
        slot: datetime,
        *,
        armed: Armed | None,
        replica: str,
        started_at: datetime | None,
        attempt: int,
    ) -> None:
        """The run of ``slot`` that ``replica`` started was lost (its lease expired), and this
        replica took it over: record it Lost and, if the plan the job is armed with now says so
        and it was the first attempt, run the slot once more (the take-over is the claim).

        A slot armed ahead whose time has not come is no lost run: ``replica`` died during its
        lead, what it armed releases itself at its time, and this replica carries it on as if
        it had armed it (arming again adopts what is there, or arms what never got there).

        Nor is a run whose work goes on at its target without ``replica`` (a Job the executor
        still sees running, ``protocols.SeesRuns``): ``replica`` stopped (and handed it over,
        see ``stop``) or died, and this replica follows it to its real end and records that,
        the same attempt (starting it again adopts what is there). A Job that ended while
        nobody followed it is recorded Lost, as any run whose end nobody saw."""
        if armed is not None and armed.arms_ahead is not None and self._stopping is None:
            context = self._context(slot, armed)
            if context.scheduled_time > self._wall():
                self._arm_ahead(context, armed, armed.arms_ahead)
                return
        if armed is not None and self._stopping is None and self._goes_on(slot, armed):
            logger.info(
                "slot %s: its run goes on at the target after replica %s stopped; followed",
                self._slot_id(slot),
                replica,
            )
            self._start(slot, armed, attempt=attempt)
            return
        retry = (
            armed is not None
            and armed.plan.retry_lost_runs
            and attempt == 1
            and self._stopping is None
        )
        offset = armed.plan.offset if armed is not None else timedelta()
        self._store.run_finished(
            self._job,
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
                attempt=attempt,
                schedules=armed.plan.fired_by(slot) if armed is not None else (),
            ),
        )
        if retry and armed is not None:
            self._admit(slot, armed, attempt=attempt + 1)

    def stop(self, *, reason: str, hand_over: bool = False) -> None:
        """Start no more runs (``reason`` is what the cancelled ones are recorded with), and
        count the claimed slots still queued missed: they will not run here.

        ``hand_over`` (the operator stopping, its runs' leases left to expire): a run whose
        work goes on at its target without this replica (a Job, ``protocols.SeesRuns``) is
        cancelled here but not recorded; the replica that takes its lease over follows it to
        its real end (``lost``)."""
        self._stopping = reason
        self._hand_over = hand_over
        if self._queued:
            newest = max(slot for slot, _ in self._queued)
            self._store.slots_missed(self._job, count=len(self._queued), newest=newest)
            self._queued.clear()

    def _remember_unclaimed(self, unclaimed: missed.Decision) -> None:
        self._unclaimed = (
            unclaimed if self._unclaimed is None else missed.merge(self._unclaimed, unclaimed)
        )

    def _count_unclaimed(self, armed: Armed) -> None:
        """The lock answers again: count the slots it could not answer for, in a task of its
        own (their claims are made only to count them, once across replicas)."""
        unclaimed, self._unclaimed = self._unclaimed, None
        if unclaimed is not None and self._stopping is None:
            self._tasks.spawn(
                self.count_missed(unclaimed, armed, reason=records.MissedReason.LOCK_UNAVAILABLE),
                name=f"count unclaimed of {self._job.namespace}/{self._job.name}",
            )

    async def _claim(self, slot: datetime, armed: Armed, *, run: bool) -> bool | None:
        """Fail closed: no claim, no run, whatever went wrong. None: the lock could not answer
        (a slot of the schedule to run is then remembered, to be counted missed once it can)."""
        plan = armed.plan
        token = self._tokens.get(slot)
        backfill = self._backfilled.get(slot)
        claim = records.Claim(
            job=self._job,
            slot=slot,
            slot_id=self._slot_id(slot),
            holder=f"{self._replica}:{next(_run_ids)}",
            ttl=plan.lock_ttl,
            scheduled_time=slot if token is not None else slot + plan.offset,
            run=run,
            token=token,
            backfill=backfill,
            backup=self.backup if run and token is None and backfill is None else None,
        )
        try:
            won = await armed.lock.claim(claim)
        except protocols.LockForgotError as error:
            self._count_unclaimed(armed)
            if not run:  # claimed to be counted missed: it is, by this replica
                return True
            # Not run: a slot of the schedule is counted missed, here only; a run asked for by
            # hand or a backfill's slot is refused, as one that ran already.
            logger.warning("slot %s not run: %s", claim.slot_id, error)
            if token is None and backfill is None:
                self._store.slots_missed(
                    self._job, count=1, newest=slot, reason=records.MissedReason.LOCK_FORGOT
                )
        except protocols.LockUnavailableError as error:
            logger.warning("slot %s not claimed, lock unavailable: %s", claim.slot_id, error)
            if run and token is None and backfill is None:
                self._remember_unclaimed(missed.give_up((slot,), total=1))
            return None
        except Exception:
            logger.exception("slot %s not claimed, the lock failed", claim.slot_id)
        else:
            self._count_unclaimed(armed)
            return won
        return False

    async def _claim_and_admit(self, slot: datetime, armed: Armed) -> asyncio.Task[None] | None:
        loop = asyncio.get_running_loop()
        sent = loop.time()
        claimed: bool | None = False
        try:
            claimed = await self._claim(slot, armed, run=True)
        finally:
            if not claimed:  # a run asked for by hand that another replica has: forgotten
                self._tokens.pop(slot, None)
        if not claimed:
            return None
        # Checked right before the effect: a replica paused (a long GC pause, SIGSTOP) while
        # its claim was out may wake once the claim has lapsed and another replica, which saw
        # it gone from the members, claimed the slot again. It gives the slot up instead.
        if loop.time() - sent >= armed.plan.lock_ttl.total_seconds():
            logger.warning(
                "slot %s: its claim took longer than it lasts; not run", self._slot_id(slot)
            )
            self._store.slots_missed(self._job, count=1, newest=slot)
            return None
        # A claim held through a Redis failover (its write not acknowledged by the replicas,
        # or the server gone) answers once the failover is over: a slot of the schedule runs
        # late then only as the missed-run policy would run it after a stall; else it is
        # missed, counted here, where it was won. A claim that enqueued has run already.
        if (
            slot not in self._tokens
            and slot not in self._backfilled
            and not armed.claim_is_the_run
            and not self._runs_when_answered(slot, armed.plan)
        ):
            logger.warning(
                "slot %s: its claim was answered too late for it to run", self._slot_id(slot)
            )
            self._store.slots_missed(self._job, count=1, newest=slot)
            return None
        arms_ahead = armed.arms_ahead
        if arms_ahead is not None and slot not in self._tokens:
            context = self._context(slot, armed)
            if context.scheduled_time > self._wall():  # else too late to arm: it runs cold
                self._arm_ahead(context, armed, arms_ahead)
                return None
        return self._admit(slot, armed)

    def _runs_when_answered(self, slot: datetime, plan: plans.JobPlan) -> bool:
        now = plan.nominal(self._wall())
        # The next slot is looked up only when it may be due: not on the path of a claim
        # answered at once (a cron next slot costs up to ~100 µs).
        following = (
            plan.schedule.next_after(slot) if now - slot >= plan.schedule.shortest_period else None
        )
        return missed.runs_when_answered(
            slot,
            now=now,
            following=None if following is None else following.at,
            rules=plan.missed_runs,
        )

    def _arm_ahead(
        self, context: records.RunContext, armed: Armed, arms_ahead: protocols.ArmsAhead
    ) -> None:
        """Arm the slot of ``context`` at its target now, and carry it to its time, each in a
        task of its own. Its lease is held from now (``slot_armed``): should this replica die
        before the release, another one carries the slot on (``lost``)."""
        ahead = self._ahead[context.slot] = _Ahead(context=context, arms_ahead=arms_ahead)
        self._store.slot_armed(
            self._job,
            records.ActiveRun(
                slot=context.slot,
                scheduled_time=context.scheduled_time,
                started_at=self._wall(),
                replica=self._replica,
                job_name=(
                    armed.job_namer.job_name(context) if armed.job_namer is not None else None
                ),
                token=context.token,
            ),
        )
        ahead.arming = self._tasks.spawn(self._arming(ahead), name=f"arm {context.slot_id}")
        ahead.carrying = self._tasks.spawn(
            self._carry_armed(ahead, armed), name=f"armed {context.slot_id}"
        )

    async def _arming(self, ahead: _Ahead) -> None:
        """Arm, for at most the time left until the release: past it, the run creates (or
        adopts) the slot's work itself."""
        context = ahead.context
        left = (context.scheduled_time - self._wall()).total_seconds()
        try:
            async with asyncio.timeout(max(left, 0.0)):
                await ahead.arms_ahead.arm(context)
        except Exception:  # the run at the slot does the work itself, cold, or adopts it
            logger.exception("slot %s: arming it ahead failed", context.slot_id)

    async def _carry_armed(self, ahead: _Ahead, armed: Armed) -> None:
        """Wait until the armed slot's time and start its run there, under the concurrency
        policy of that moment; a slot the policy does not start is disarmed first. Cancelled
        (``disarm_ahead``, the operator stopping): nothing is recorded here."""
        context = ahead.context
        slot, release = context.slot, context.scheduled_time
        namespace = self._job.namespace
        await self._timer.wait_until(release - DECIDED_AHEAD, namespace=namespace)
        if self._would_start(slot, armed):
            await self._timer.wait_until(release, namespace=namespace)
        self._ahead.pop(slot, None)
        if self._stopping is not None:
            return  # left to release itself, as a run in flight is left going
        if self._admit(slot, armed) is None:  # skipped (recorded) or queued: not released
            await self._disarm(ahead, count=None)

    def disarm_ahead(
        self, *, reason: records.MissedReason = records.MissedReason.DISARMED
    ) -> list[asyncio.Task[None]]:
        """Give up every slot armed here and not released yet (its spec changed, or deleted:
        ``Disarmed``; the job suspended: ``reason`` ``Suspended``): what was armed is removed
        and the slot counted for ``reason``, in a task each; those tasks."""
        disarming = []
        for ahead in self._ahead.values():
            if ahead.carrying is not None:
                ahead.carrying.cancel()
            disarming.append(
                self._tasks.spawn(
                    self._disarm(ahead, count=reason), name=f"disarm {ahead.context.slot_id}"
                )
            )
        self._ahead.clear()
        return disarming

    async def _disarm(self, ahead: _Ahead, *, count: records.MissedReason | None) -> None:
        """Remove what was armed for the slot once its arm is over (it may still be creating
        it); ``count``: count the slot given up for that reason (None: it is counted where it
        was decided, skipped or queued)."""
        context = ahead.context
        try:
            async with asyncio.timeout(ABORT_TIMEOUT.total_seconds()):
                if ahead.arming is not None:
                    await asyncio.wait([ahead.arming])
                await ahead.arms_ahead.disarm(context)
        except Exception:  # logged: it may release itself, unfollowed
            logger.exception("slot %s: removing what was armed ahead failed", context.slot_id)
        if count is not None:
            self._store.slots_missed(self._job, count=1, newest=context.slot, reason=count)

    def _admit(
        self, slot: datetime, armed: Armed, *, attempt: int = 1
    ) -> asyncio.Task[None] | None:
        """A slot this replica owns: start it, queue it or skip it, per the concurrency policy."""
        plan = armed.plan
        action, elsewhere = self._action(slot, armed)
        active = len(self._active) + len(elsewhere)
        if active or self._queued:
            self._store.slot_overlapped(self._job, slot=slot, policy=plan.concurrency)
        match action:
            case overlap.Action.SKIP:
                self._skip(
                    slot,
                    plan,
                    result=records.RunResult.SKIPPED_OVERLAP,
                    message=f"{active} run(s) active, concurrencyPolicy {plan.concurrency}",
                )
                return None
            case overlap.Action.SKIP_AT_LIMIT:
                self._skip(
                    slot,
                    plan,
                    result=records.RunResult.SKIPPED_IN_FLIGHT_LIMIT,
                    message=f"{active} run(s) active, the most the operator allows one job",
                )
                return None
            case overlap.Action.SKIP_AT_NAMESPACE_LIMIT:
                namespace = self._job.namespace
                self._skip(
                    slot,
                    plan,
                    result=records.RunResult.SKIPPED_IN_FLIGHT_LIMIT,
                    message=f"{self._namespace_runs.active(namespace)} run(s) of namespace "
                    f"{namespace} active on replica {self._replica}, the most the operator "
                    "allows one namespace",
                )
                return None
            case overlap.Action.ENQUEUE:
                self._queued.append((slot, armed))
                if not self._active:  # only runs elsewhere: no finish here will start it
                    self._drain_when_idle_elsewhere(armed)
                return None
            case overlap.Action.REPLACE:
                return self._start(
                    slot, armed, attempt=attempt, after=self._replace(elsewhere, armed)
                )
        return self._start(slot, armed, attempt=attempt)

    def _replace(self, elsewhere: list[datetime], armed: Armed) -> list[asyncio.Task[None]]:
        """Cancel the runs in flight here and have the target stop theirs and those
        ``elsewhere`` (``Replace``); the tasks stopping them at the target."""
        aborting = []
        for running_slot, run in self._active.items():
            self._replaced.add(running_slot)
            if run.task is not None:
                run.task.cancel()
            aborting.append(self._abort(run.context, armed))
        for running_slot in elsewhere:
            aborting.append(self._abort(self._context(running_slot, armed), armed))
        return [task for task in aborting if task is not None]

    def _action(self, slot: datetime, armed: Armed) -> tuple[overlap.Action, list[datetime]]:
        """What the concurrency policy says of ``slot`` now, and the runs elsewhere it counted."""
        plan = armed.plan
        # Runs this loop does not track (another replica's, an earlier process's) count too.
        elsewhere = self._running_elsewhere(armed, besides=slot)
        namespace_runs = self._namespace_runs
        action = overlap.decide(
            plan.concurrency,
            active=len(self._active) + len(elsewhere),
            active_here=len(self._active),
            queued=len(self._queued),
            max_queued=plan.max_queued,
            max_active=plan.max_runs_in_flight,
            namespace_active=namespace_runs.active(self._job.namespace),
            max_namespace_active=namespace_runs.limit,
        )
        return action, elsewhere

    def _would_start(self, slot: datetime, armed: Armed) -> bool:
        """Whether ``slot`` would start now (a look: nothing is reported or done)."""
        action, _ = self._action(slot, armed)
        return action in (overlap.Action.START, overlap.Action.REPLACE)

    def _running_elsewhere(self, armed: Armed, *, besides: datetime) -> list[datetime]:
        view = armed.runs_view
        if view is None:
            return []
        try:
            running = view.running_slots()
        except Exception:  # best effort: a view that fails is no view
            logger.exception("%r could not tell its runs", view)
            return []
        return sorted(slot for slot in running if slot not in self._active and slot != besides)

    def _goes_on(self, slot: datetime, armed: Armed) -> bool:
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

    def _drain_when_idle_elsewhere(self, armed: Armed) -> None:
        """Start the queued slots once the runs elsewhere are over (checked every second)."""
        if self._draining is None or self._draining.done():
            self._draining = self._tasks.spawn(
                self._drain(armed), name=f"queue of {self._job.namespace}/{self._job.name}"
            )

    async def _drain(self, armed: Armed) -> None:
        """Start the first queued slot once the runs elsewhere are over and the namespace has
        room here: unlike a slot started in the place of its job's run, it adds one."""
        while self._queued and not self._active and self._stopping is None:
            queued_slot = self._queued[0][0]
            has_room = self._namespace_runs.has_room(self._job.namespace)
            if has_room and not self._running_elsewhere(armed, besides=queued_slot):
                queued_slot, armed = self._queued.pop(0)
                self._start(queued_slot, armed)
                return
            await asyncio.sleep(ELSEWHERE_POLL.total_seconds())

    def _skip(
        self, slot: datetime, plan: plans.JobPlan, *, result: records.RunResult, message: str
    ) -> None:
        token = self._tokens.pop(slot, None)
        record = records.RunRecord(
            slot=slot,
            scheduled_time=slot if token is not None else slot + plan.offset,
            result=result,
            message=message,
            replica=self._replica,
            token=token,
            backfill=self._backfilled.get(slot),
            schedules=() if token is not None else plan.fired_by(slot),
        )
        self._store.run_finished(self._job, record)

    def _context(self, slot: datetime, armed: Armed) -> records.RunContext:
        token = self._tokens.get(slot)
        return records.RunContext(
            job=self._job,
            slot=slot,
            slot_id=self._slot_id(slot),
            # A run asked for by hand is due when it was asked for: no jitter.
            scheduled_time=slot if token is not None else slot + armed.plan.offset,
            timeout=armed.plan.timeout,
            token=token,
            schedules=() if token is not None else armed.plan.fired_by(slot),
        )

    def _start(
        self,
        slot: datetime,
        armed: Armed,
        *,
        attempt: int = 1,
        after: Sequence[asyncio.Task[None]] = (),
    ) -> asyncio.Task[None]:
        """Start the run of ``slot``; its work at the target begins once ``after`` (the runs
        it replaces being stopped there) are done."""
        context = self._context(slot, armed)
        if slot not in self._active:  # the count follows ``_active``'s size
            self._namespace_runs.started(self._job.namespace)
        run = self._active[slot] = _Run(context=context, started_at=self._wall(), attempt=attempt)
        self._store.run_started(
            self._job,
            records.ActiveRun(
                slot=slot,
                scheduled_time=context.scheduled_time,
                started_at=run.started_at,
                replica=self._replica,
                job_name=(
                    armed.job_namer.job_name(context) if armed.job_namer is not None else None
                ),
                attempt=attempt,
                token=context.token,
            ),
        )
        # A task cancelled before its first step never enters _execute: recorded when done.
        run.task = self._tasks.spawn(
            self._execute(run, armed, after=after),
            name=f"run {context.slot_id}",
            on_done=lambda _: self._finish(run, *_CANCELLED_EARLY),
        )
        return run.task

    async def _execute(
        self, run: _Run, armed: Armed, *, after: Sequence[asyncio.Task[None]]
    ) -> None:
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
            start_mode = outcome.start_mode
            if outcome.timed_out:
                result = records.RunResult.TIMED_OUT
            elif outcome.cancelled:
                result = records.RunResult.CANCELLED
            elif outcome.succeeded:
                result = records.RunResult.SUCCEEDED
            else:
                result = records.RunResult.FAILED
            message = outcome.message
        except TimeoutError as error:
            if deadline.expired():
                result = records.RunResult.TIMED_OUT
                message = f"cancelled at its timeout of {durations.format(timeout)}"
                self._abort(run.context, armed)
            else:
                result, message = records.RunResult.FAILED, records.describe_error(error)
        except asyncio.CancelledError:
            replaced = run.context.slot in self._replaced  # aborted by ``_replace`` already
            if self._hand_over and armed.runs_view is not None and not replaced:
                self._free(run)  # its Job goes on: followed by the lease's next holder
            else:
                self._finish(
                    run, records.RunResult.CANCELLED, f"cancelled: {self._cancel_reason(run)}"
                )
            raise
        except Exception as error:  # any failure of a run is recorded, the loop goes on
            result, message = records.RunResult.FAILED, records.describe_error(error)
        self._finish(run, result, message, start_mode=start_mode)

    def _abort(self, context: records.RunContext, armed: Armed) -> asyncio.Task[None] | None:
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
            async with asyncio.timeout(ABORT_TIMEOUT.total_seconds()):
                await executor.abort(context)
        except Exception:  # logged; the run is recorded already, the schedule goes on
            logger.exception("slot %s: stopping its run at the target failed", context.slot_id)

    def _cancel_reason(self, run: _Run) -> str:
        if run.context.slot in self._replaced:
            return "replaced by a newer slot"
        return self._stopping or OPERATOR_STOPPING

    def _finish(
        self,
        run: _Run,
        result: records.RunResult,
        message: str,
        *,
        start_mode: records.StartMode | None = None,
    ) -> None:
        """Record ``run`` once, free its place, and start the next queued slot."""
        if not self._free(run):
            return
        slot = run.context.slot
        record = records.RunRecord(
            slot=slot,
            scheduled_time=run.context.scheduled_time,
            result=result,
            started_at=run.started_at,
            finished_at=self._wall(),
            message=message,
            replica=self._replica,
            attempt=run.attempt,
            token=self._tokens.pop(slot, None),
            backfill=self._backfilled.get(slot),
            start_mode=start_mode,
            schedules=run.context.schedules,
        )
        if record.backfill is not None:
            self._backfill_results[slot] = result
        self._store.run_finished(self._job, record)
        if self._queued and not self._active and self._stopping is None:
            queued_slot, armed = self._queued[0]
            if self._running_elsewhere(armed, besides=queued_slot):
                self._drain_when_idle_elsewhere(armed)
            else:
                self._queued.pop(0)
                self._start(queued_slot, armed)

    def _free(self, run: _Run) -> bool:
        """Free ``run``'s place; False if it was freed (and recorded, or handed over) before."""
        if run.recorded:
            return False
        run.recorded = True
        slot = run.context.slot
        if self._active.pop(slot, None) is not None:
            self._namespace_runs.ended(self._job.namespace)
        self._replaced.discard(slot)
        return True

    def _slot_id(self, slot: datetime) -> str:
        token = self._tokens.get(slot)
        if token is not None:
            return slots.run_now_slot_id(self._job, token)
        # The same slot's id is asked for four times (prepared, claimed, named, started): kept.
        if slot != self._last_slot:
            self._last_slot, self._last_slot_id = slot, slots.slot_id(self._job, slot)
        return self._last_slot_id


def _counted(
    progress: records.BackfillProgress, result: records.RunResult | None
) -> records.BackfillProgress:
    """``progress`` with one more slot dealt with, ``result`` what became of it (None: not run
    here, or not yet: it ran already, runs elsewhere, or waits in the queue)."""
    done = progress.done + 1
    if result == records.RunResult.SUCCEEDED:
        return dataclasses.replace(progress, done=done, succeeded=progress.succeeded + 1)
    if result is not None and result.failed:
        return dataclasses.replace(progress, done=done, failed=progress.failed + 1)
    return dataclasses.replace(progress, done=done, skipped=progress.skipped + 1)


_CANCELLED_EARLY = (records.RunResult.CANCELLED, "cancelled before it started")
