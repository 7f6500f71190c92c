"""The slots of one job claimed here ahead of their time and armed at their target (a warm
start, ``protocols.ArmsAhead``), carried to their time.

A slot won ahead of its time is armed at once and carried to its time here, where the
concurrency policy is applied as to any slot and the run starts (``Admits``); a slot won past
its time runs cold, as any. What was armed is removed when it must not run: the policy skipped
or queued the slot, or the job was suspended, its spec changed or deleted (``disarm_all``:
counted missed, reason ``Disarmed``). When the operator stops, or its replica dies, what was
armed is left to release itself; its lease, held from the arm, lets another replica carry it on
(``requests.JobRequests.lost``).
"""

import asyncio
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from punctual.contracts import firings, protocols, records
from punctual.runtime import armed as armed_
from punctual.runtime import tasks, timers
from punctual.scheduling import slots

logger = logging.getLogger(__name__)

DECIDED_AHEAD = timedelta(seconds=2)
"""How long before an armed slot's release its concurrency policy is looked at: a slot the
policy would not start is removed at the target before it releases itself (a Job's deletion
reaches its pod through the garbage collector and the kubelet). A run that ends within this of
the slot still counts as running, as a watch of it would be that late anyway."""
ABORT_TIMEOUT = timedelta(seconds=30)
"""How long the loop lets an executor stop what a run left at its target (delete a Job), or
remove what it armed ahead."""


class Admits(Protocol):
    """Where an armed slot goes at its time: the job's runs (``runs.JobRuns``)."""

    @property
    def stopping(self) -> str | None: ...

    def would_start(self, firing: firings.Firing, armed: armed_.Armed) -> bool: ...

    def admit(self, firing: firings.Firing, armed: armed_.Armed) -> object | None:
        """Start, queue or skip ``firing``; None when it did not start."""
        ...


@dataclass(slots=True)
class _Ahead:
    """A slot claimed here and armed at its target, not released yet: the arm's task, and the
    task carrying the slot to its time."""

    firing: firings.Firing
    context: records.RunContext
    arms_ahead: protocols.ArmsAhead
    arming: "asyncio.Task[None] | None" = None
    carrying: "asyncio.Task[None] | None" = None


class ArmedAhead:
    """The slots of one job armed here and not released yet."""

    def __init__(
        self,
        *,
        job: slots.JobRef,
        wall: protocols.WallClock,
        timer: timers.WallTimer,
        store: protocols.RunStore,
        leases: protocols.HoldsRuns | None,
        replica: str,
        job_tasks: tasks.JobTasks,
        runs: Admits,
    ) -> None:
        self._job = job
        self._wall = wall
        self._timer = timer
        self._store = store
        self._leases = leases
        self._replica = replica
        self._tasks = job_tasks
        self._runs = runs
        self._ahead: dict[str, _Ahead] = {}
        """By slot id."""

    def arm(
        self, firing: firings.Firing, armed: armed_.Armed, arms_ahead: protocols.ArmsAhead
    ) -> None:
        """Arm ``firing`` at its target now, and carry it to its time, each in a task of its
        own. Its lease is held from now: should this replica die before the release, another
        one carries the slot on."""
        context = firing.context(timeout=armed.plan.timeout)
        ahead = self._ahead[firing.slot_id] = _Ahead(
            firing=firing, context=context, arms_ahead=arms_ahead
        )
        started_at = self._wall()
        self._store.slot_armed(
            self._job,
            firing.active_run(
                started_at=started_at, replica=self._replica, job_name=armed.job_name(context)
            ),
        )
        if self._leases is not None:
            self._leases.hold(firing.lease(replica=self._replica, started_at=started_at))
        ahead.arming = self._tasks.spawn(self._arming(ahead), name=f"arm {firing.slot_id}")
        ahead.carrying = self._tasks.spawn(
            self._carry(ahead, armed), name=f"armed {firing.slot_id}"
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

    async def _carry(self, ahead: _Ahead, armed: armed_.Armed) -> None:
        """Wait until the armed slot's time and start its run there, under the concurrency
        policy of that moment; a slot the policy does not start is disarmed first. Cancelled
        (``disarm_all``, the operator stopping): nothing is recorded here."""
        firing = ahead.firing
        release = firing.scheduled_time
        namespace = self._job.namespace
        await self._timer.wait_until(release - DECIDED_AHEAD, namespace=namespace)
        if self._runs.would_start(firing, armed):
            await self._timer.wait_until(release, namespace=namespace)
        self._ahead.pop(firing.slot_id, None)
        if self._runs.stopping is not None:
            return  # left to release itself, as a run in flight is left going
        if self._runs.admit(firing, armed) is None:  # skipped (recorded) or queued
            await self._disarm(ahead, count=None)

    def disarm_all(
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
                    self._disarm(ahead, count=reason), name=f"disarm {ahead.firing.slot_id}"
                )
            )
        self._ahead.clear()
        return disarming

    async def _disarm(self, ahead: _Ahead, *, count: records.MissedReason | None) -> None:
        """Remove what was armed for the slot once its arm is over (it may still be creating
        it); ``count``: count the slot given up for that reason, and release its lease (None:
        it is counted where it was decided, skipped or queued)."""
        context = ahead.context
        try:
            async with asyncio.timeout(ABORT_TIMEOUT.total_seconds()):
                if ahead.arming is not None:
                    await asyncio.wait([ahead.arming])
                await ahead.arms_ahead.disarm(context)
        except Exception:  # logged: it may release itself, unfollowed
            logger.exception("slot %s: removing what was armed ahead failed", context.slot_id)
        if count is not None:
            self._store.slots_missed(self._job, count=1, newest=ahead.firing.slot, reason=count)
            if self._leases is not None:
                self._leases.release(ahead.firing.slot_id)
