"""The runs asked for besides the schedule's, made into firings: by users, a run now
(``punctual.dev/run-now``) and the slots of a past window (``punctual.dev/backfill``); by the
lost-run detector, the run of a lease taken over (``leases.LossDetector``), recorded Lost and
maybe tried once more, the same firing. Each is admitted as any firing of the job
(``runs.JobRuns``): its concurrency policy, timeout and history apply."""

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from punctual.contracts import firings, protocols, records
from punctual.runtime import armed as armed_
from punctual.runtime import runs, tasks
from punctual.scheduling import backfill, slots

logger = logging.getLogger(__name__)
_MILLISECOND = timedelta(milliseconds=1)


class JobRequests:
    """The runs asked for of one job on this replica, besides its schedule's."""

    def __init__(
        self,
        *,
        job: slots.JobRef,
        wall: protocols.WallClock,
        store: protocols.RunStore,
        replica: str,
        job_tasks: tasks.JobTasks,
        job_runs: runs.JobRuns,
    ) -> None:
        self._job = job
        self._wall = wall
        self._store = store
        self._replica = replica
        self._tasks = job_tasks
        self._runs = job_runs
        self._last_asked: datetime | None = None
        """The slot of the newest run asked for by hand here."""
        self._backfilling: tuple[str, asyncio.Task[None]] | None = None
        """The backfill this replica carries out (or races for) for the job, with its token:
        one at a time."""

    def run_now(self, token: str, armed: armed_.Armed) -> runs.Claiming:
        """Claim the run asked for with ``token`` and admit it like a slot due now, in a task
        of its own. Its claim is keyed by the token, so of every replica asked, one runs it,
        once."""
        firing = firings.asked(self._job, token, at=self._wall())
        if self._last_asked is not None and firing.slot <= self._last_asked:
            # Two asked within a millisecond: status tells runs in flight apart by their slot.
            firing = firings.asked(self._job, token, at=self._last_asked + _MILLISECOND)
        self._last_asked = firing.slot
        return self._tasks.spawn(
            self._runs.claim_then_admit(firing, armed), name=f"claim {firing.slot_id}"
        )

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
        see ``runs.JobRuns.stop``) or died, and this replica follows it to its real end and
        records that, the same attempt (starting it again adopts what is there). A Job that
        ended while nobody followed it is recorded Lost, as any run whose end nobody saw."""
        going = self._runs.stopping is None
        if armed is not None and going:
            arms_ahead = armed.arms_ahead
            if arms_ahead is not None and firing.scheduled_time > self._wall():
                self._runs.ahead.arm(firing, armed, arms_ahead)
                return
            if self._runs.goes_on(firing.slot, armed):
                logger.info(
                    "slot %s: its run goes on at the target after replica %s stopped; followed",
                    firing.slot_id,
                    replica,
                )
                self._runs.in_flight.start(firing, armed)
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
            self._runs.admit(firing.retried(), armed)

    def backfill(self, request: records.BackfillRequest, armed: armed_.Armed) -> str | None:
        """Run the slots of ``request``'s window, oldest first, once each, in a task of its own
        (``_backfill``); why not (None when it starts): a window in the future, one with more
        than ``backfill.MAX_SLOTS`` slots, or a backfill of the job still going here (each runs
        its slots back to back: side by side, requests made with new tokens would multiply the
        runs of one job without bound)."""
        if self._backfilling is not None and not self._backfilling[1].done():
            return (
                f"the backfill {self._backfilling[0]!r} is still going (status.backfill): one "
                "backfill at a time per job; ask again with a new token once it has finished"
            )
        if request.end > self._wall():
            return "to is in the future: backfill runs past slots only"
        found = backfill.window(armed.plan.schedule, start=request.start, end=request.end)
        if found.more:
            return f"the window holds more than {backfill.MAX_SLOTS} slots: narrow it"
        task = self._tasks.spawn(
            self._backfill(request, found.slots, armed),
            name=f"backfill {self._job.namespace}/{self._job.name} {request.token}",
        )
        self._backfilling = (request.token, task)
        return None

    async def _backfill(
        self,
        request: records.BackfillRequest,
        due: Sequence[datetime],
        armed: armed_.Armed,
    ) -> None:
        """Carry out the backfill ``request`` of the slots ``due`` (oldest first), if this
        replica wins the claim of the request: each slot claimed like any slot of the job (one
        that ran already, or runs elsewhere, is refused and skipped), admitted under the
        concurrency policy, and waited for before the next. Progress goes to the store.

        A backfill claimed while its namespace has as many going here as the operator allows
        waits for one of them to end, its progress saying so: the request is this replica's
        from its claim on, whether it waits or runs."""
        claims = self._runs.claims
        request_claim = records.Claim(
            job=self._job,
            slot=request.start,
            slot_id=slots.backfill_request_id(self._job, request.token),
            holder=claims.holder(),
            ttl=armed.plan.lock_ttl,
            purpose=records.WholeBackfill(request.token),
        )
        try:
            if not await armed.lock.claim(request_claim):
                return
        except Exception:  # fail closed, as for a slot: no claim, nothing run
            logger.exception("backfill %s not claimed", request_claim.slot_id)
            return
        progress = records.BackfillProgress(request=request, replica=self._replica, total=len(due))
        namespace = self._job.namespace
        backfills = self._runs.namespaces.backfills
        if not backfills.try_acquire(namespace):
            waiting = (
                f"{self._runs.namespaces.max_backfills} backfill(s) of namespace {namespace} "
                f"going on replica {self._replica}, the most the operator allows one namespace: "
                "it starts when one of them ends"
            )
            logger.info("backfill %s waits: %s", request_claim.slot_id, waiting)
            self._store.backfill_progressed(
                self._job, dataclasses.replace(progress, waiting=waiting)
            )
            await backfills.acquire(namespace)
        try:
            await self._run_slots(progress, due, armed)
        finally:
            backfills.release(namespace)

    async def _run_slots(
        self, progress: records.BackfillProgress, due: Sequence[datetime], armed: armed_.Armed
    ) -> None:
        """Run the slots ``due`` of a backfill claimed here, holding its namespace's place."""
        claims = self._runs.claims
        token = progress.request.token
        self._store.backfill_progressed(self._job, progress)
        for slot in due:
            if self._runs.stopping is not None:
                break
            firing = firings.backfilled(self._job, slot, armed.plan, token)
            result: records.RunResult | None = None
            if await claims.claim(firing, armed, run=True):
                run = self._runs.admit(firing, armed)
                if run is not None and run.task is not None:
                    await asyncio.wait([run.task])
                    result = run.result
            progress = _counted(progress, result)
            self._store.backfill_progressed(self._job, progress)
        progress = dataclasses.replace(progress, finished=True)
        self._store.backfill_progressed(self._job, progress)


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
