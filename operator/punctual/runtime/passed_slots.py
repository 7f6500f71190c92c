"""The slots a job's loop passes without running them, counted once across replicas.

A loop passes slots it will not run in three ways: while the job was suspended, when the plan's
exclusions leave them out, and when the missed-run policy gives them up after a stall. Each is
counted once across replicas by a claim (``JobClaims.count_missed``). How many there are is
counted by days, not walked, for every schedule but a merged timeline (``spec.schedules``), whose
coinciding entries only a walk tells apart: that one is walked a step at a time, so that a long
outage of entries with seconds never holds the event loop. This is apart from the loop
(``job_loop``) because it is counting, not deciding: the loop decides which slots pass, this
counts them.
"""

import asyncio
from datetime import datetime, timedelta
from typing import Protocol

from punctual.contracts import protocols, records
from punctual.runtime import armed as armed_
from punctual.runtime import claims as claims_
from punctual.runtime import tasks, timers
from punctual.scheduling import missed, slots, timeline

COUNT_STEPS = 1000
"""Slots a merged timeline's count of overdue slots walks before the loop serves other jobs: a
long outage of entries with seconds has hundreds of thousands of them (the other schedules
count theirs at once, and never stop short of this)."""
EXCLUDED_COUNT_EVERY = timedelta(minutes=1)
"""How long after it passes an excluded slot is counted at most: the loop wakes this often
while slots pass excluded, not at each of them."""
_TICK = timedelta(microseconds=1)


class Counts(Protocol):
    """Finds the slots of ``(after, until]`` (a schedule's ``due_between``, the plan's
    ``excluded_between``), at most ``steps`` of them at a time."""

    def __call__(
        self, *, after: datetime, until: datetime, keep: int, steps: int | None = None
    ) -> timeline.DueSlots: ...


class PassedSlots:
    """Counts the slots one job's loop passes (suspended, excluded, given up)."""

    def __init__(
        self,
        *,
        job: slots.JobRef,
        timer: timers.WallTimer,
        wall: protocols.WallClock,
        job_tasks: tasks.JobTasks,
        claims: claims_.JobClaims,
    ) -> None:
        """``job_tasks``: the job's tasks, where a count runs so that it outlives a cancelled
        loop. ``claims``: the job's claims, which count given-up slots once across replicas."""
        self._job = job
        self._timer = timer
        self._wall = wall
        self._tasks = job_tasks
        self._claims = claims

    async def due(
        self,
        count: Counts,
        *,
        after: datetime,
        until: datetime,
        keep: int = missed.GIVEN_UP_CLAIMS,
    ) -> timeline.DueSlots:
        """The slots ``count`` finds in ``(after, until]``: at once when they are counted, and
        ``COUNT_STEPS`` at a time with a turn of the event loop in between when they are walked
        (a merged timeline): the other jobs wait for one step at most."""
        due = count(after=after, until=until, keep=keep, steps=COUNT_STEPS)
        while due.resume_after is not None:
            await asyncio.sleep(0)
            later = count(after=due.resume_after, until=until, keep=keep, steps=COUNT_STEPS)
            due = timeline.combine(due, later, keep=keep)
        return due

    async def count_passed(
        self, passed: timeline.DueSlots, armed: armed_.Armed, *, reason: records.MissedReason
    ) -> None:
        """Count ``passed``, slots that are neither run nor missed (suspended, excluded), once
        across replicas as missed slots are (``count_missed``)."""
        if passed.total:
            decision = missed.give_up(passed.newest, total=passed.total)
            await self.count_missed(decision, armed, reason=reason)

    async def count_excluded(
        self,
        armed: armed_.Armed,
        *,
        after: datetime,
        until: datetime,
        delay: timedelta | None = None,
    ) -> None:
        """Count the slots the plan's exclusions leave out in ``(after, until]``: at once, or
        with ``delay`` (the job's offset and this replica's) as they pass, at most
        ``EXCLUDED_COUNT_EVERY`` after each (an excluded week of a job every second is counted
        a minute at a time, not at its end). Before the claim of the slot after them: a lock
        that is a high-water mark (the kubernetes backend) takes claims in order."""
        plan = armed.plan
        if delay is None:
            excluded = await self.due(plan.excluded_between, after=after, until=until)
            await self.count_passed(excluded, armed, reason=records.MissedReason.EXCLUDED)
            return
        while (first := plan.first_excluded(after=after, until=until)) is not None:
            through = min(until - _TICK, max(first, self._wall() - delay) + EXCLUDED_COUNT_EVERY)
            await self._timer.wait_until(through + delay, namespace=self._job.namespace)
            excluded = await self.due(plan.excluded_between, after=after, until=through)
            await self.count_passed(excluded, armed, reason=records.MissedReason.EXCLUDED)
            after = through

    async def count_missed(
        self,
        decision: missed.Decision,
        armed: armed_.Armed,
        *,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        """Count the slots given up once across replicas (``JobClaims.count_missed``): in a task
        of the job's own, so that what is won is counted even when the loop is cancelled."""
        await asyncio.shield(
            self._tasks.spawn(
                self._claims.count_missed(decision, armed, reason=reason),
                name=f"count missed of {self._job.namespace}/{self._job.name}",
            )
        )
