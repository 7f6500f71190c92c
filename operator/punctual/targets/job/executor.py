"""The job target's executor: one batch/v1 Job per slot, followed to its end, like a CronJob's.

A run creates the slot's batch Job (``manifests`` names it after the slot, so a second creation
by another replica or after a restart is ``AlreadyExists``: the existing Job of the same slot is
followed instead), then waits for the Job's Complete or Failed condition through the
operator's one shared watch of Jobs (``watcher``). A Job that fails with ``DeadlineExceeded`` (its
``activeDeadlineSeconds``, from ``spec.timeout``) is a timed-out run.

When the loop gives up on a run (``Replace``, or the loop's own timeout), ``abort`` deletes the
Job with background propagation; a run whose Job is deleted before it finished (by another
replica's ``Replace``, the ScheduledJob's deletion, a user) is cancelled, no failure. When the
operator stops, runs are cancelled but their Jobs are left alone: they go on, the replica that
takes a run's lease over follows its Job to its end (``requests.JobRequests.lost``), and the
ScheduledJob's owner reference cleans them up eventually.

After each run, finished Jobs beyond ``spec.history`` are deleted: the newest ``succeeded``
complete Jobs and the newest ``failed`` failed Jobs of the ScheduledJob are kept, as CronJob's
``successfulJobsHistoryLimit`` and ``failedJobsHistoryLimit`` do.

With ``spec.target.job.warmStart``, ``WarmBatchJobExecutor`` also arms slots ahead
(``protocols.ArmsAhead``): its Job is created ``lead`` before the run's scheduled time, with the
template rewritten by ``warm`` (built at the arm, off the firing path; the cold Job of a slot
first seen too late keeps its template serialised once) and ``activeDeadlineSeconds`` of
``lead + timeout``; the run at the slot follows that Job. A warm Job's history counts as any.
As the run starts following a warm Job, a check off its path reads the Job's pods once (a few,
bounded in time) and reports whether its pod was at its gate (``readiness``): a pod still
pulling its image or not scheduled is ``WarmStartNotReady``. The run goes on all the same: the
gate releases at once when the pod does start, and the lateness is what it is.
"""

import asyncio
import logging
import operator
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from punctual.aio import prepared
from punctual.api import job_models
from punctual.contracts import protocols, records
from punctual.scheduling import plans, slots
from punctual.targets.job import manifests, readiness, requests, states, warm
from punctual.targets.job import watcher as batch_job_watcher

logger = logging.getLogger(__name__)

DELETION_SEEN = timedelta(seconds=20)
"""How long an abort waits for its Job's deletion to come through the watch before the run
that replaces it creates its own Job anyway (a watch that is behind; logged)."""
CHECK_TIMEOUT = timedelta(seconds=5)
"""The longest a warm Job's check at its slot may take: past it, nothing is reported."""
CHECKED_PODS = 5
"""The most pods of one warm Job read by its check (a Job's retries make more than one)."""


class BatchJobExecutor:
    """``protocols.Executor`` for one ScheduledJob; also ``Abortable``, ``NamesJobs``,
    ``PreparesRuns`` and ``SeesRuns``: the concurrency policy counts every unfinished Job of the
    ScheduledJob (from the shared watch), not only the runs of this replica, as CronJob counts
    its active Jobs."""

    def __init__(
        self,
        *,
        api: requests.BatchJobsApi,
        watcher: batch_job_watcher.BatchJobWatcher,
        owner: slots.JobRef,
        template: Mapping[str, Any],
        active_deadline: timedelta,
        history: plans.History = plans.History(),
    ) -> None:
        self._api = api
        self._watcher = watcher
        self._owner = owner
        # Serialised now, once: the template itself is not kept (a slot's request shares it).
        self._job = manifests.BatchJobTemplate(
            template, owner=owner, active_deadline=active_deadline
        )
        self._history = history
        self._prepared = prepared.Prepared(self._request, key=operator.attrgetter("slot_id"))

    def __repr__(self) -> str:
        return f"BatchJobExecutor({self._owner.namespace}/{self._owner.name})"

    def job_name(self, context: records.RunContext) -> str:
        return manifests.batch_job_name(self._owner.name, context.slot, token=context.token)

    def prepare(self, context: records.RunContext) -> None:
        """Build and serialise the Job of an upcoming slot now, while the loop waits for it:
        at the slot, the run only sends it (``protocols.PreparesRuns``)."""
        self._prepared.prepare(context)

    async def __call__(self, context: records.RunContext) -> records.Outcome:
        request = self._prepared.take(context)
        name = request.name
        state, created = await self._api.create(request)
        if not created and not self._is_ours(state, context):
            return records.Outcome(
                False, f"Job {name} exists and was not created for this slot: not touched"
            )
        return await self._follow(state)

    async def _follow(self, state: states.BatchJobState) -> records.Outcome:
        """Wait for the slot's Job ``state`` to end; how it went."""
        name = state.name
        end = await self._watcher.ended(state)
        await self._clean_up()
        start_mode = self._start_mode(state)
        if end.succeeded:
            return records.Outcome(True, f"Job {name} complete", start_mode=start_mode)
        if end.deleted:
            return records.Outcome(
                False, f"Job {name} {end.message}", cancelled=True, start_mode=start_mode
            )
        detail = f"{end.reason}: {end.message}" if end.message else end.reason
        return records.Outcome(
            False,
            f"Job {name} failed: {detail}",
            timed_out=end.deadline_exceeded,
            start_mode=start_mode,
        )

    def _start_mode(self, state: states.BatchJobState) -> records.StartMode | None:
        """How the Job ``state`` was started, for a target that arms slots ahead."""
        return None

    async def abort(self, context: records.RunContext) -> None:
        """Delete the slot's Job (and, in the background, its pods), if it is ours, and wait
        (at most ``DELETION_SEEN``) until the watch has seen it gone: as CronJob does for
        ``Replace``, the Job replaced is gone before the one replacing it is created."""
        name = self.job_name(context)
        namespace = self._owner.namespace
        state = self._watcher.known(namespace, name) or await self._api.read(namespace, name)
        if state is None or not self._is_ours(state, context):
            return
        if await self._api.delete(namespace, name, uid=state.uid):
            logger.info("slot %s: deleted Job %s/%s", context.slot_id, namespace, name)
        try:
            async with asyncio.timeout(DELETION_SEEN.total_seconds()):
                await self._watcher.deleted(state)
        except TimeoutError:
            logger.warning(
                "slot %s: the deletion of Job %s/%s not seen within %s; going on",
                context.slot_id,
                namespace,
                name,
                DELETION_SEEN,
            )

    def running_slots(self) -> list[datetime]:
        """The slots of this ScheduledJob's Jobs that have not ended, whoever created them."""
        prefix = f"{self._owner.namespace}/{self._owner.name}/{self._owner.uid}/"
        running = []
        for state in self._watcher.jobs_of(self._owner):
            slot_id = state.slot_id or ""
            if state.end is None and not state.deleting and slot_id.startswith(prefix):
                try:
                    _, slot = slots.parse_slot_id(slot_id)
                except ValueError:
                    # Annotations are anyone's to write: one that is no slot id ("²", digits
                    # past the year 9999) is no run, and must not hide the others.
                    continue
                running.append(slot)
        return running

    def _request(self, context: records.RunContext) -> manifests.BatchJobRequest:
        return self._job.request(
            slot=context.slot,
            slot_id=context.slot_id,
            scheduled_time=context.scheduled_time,
            token=context.token,
        )

    def _is_ours(self, state: states.BatchJobState, context: records.RunContext) -> bool:
        return state.owner_uid == self._owner.uid and state.slot_id == context.slot_id

    async def _clean_up(self) -> None:
        """Delete the finished Jobs beyond the history limits (best effort, logged)."""
        finished = [state for state in self._watcher.jobs_of(self._owner) if state.end]
        succeeded = states.sorted_by_slot(s for s in finished if s.end and s.end.succeeded)
        failed = states.sorted_by_slot(s for s in finished if s.end and not s.end.succeeded)
        doomed = [*succeeded[self._history.succeeded :], *failed[self._history.failed :]]
        if not doomed:
            return
        results = await asyncio.gather(
            *(self._api.delete(s.namespace, s.name, uid=s.uid) for s in doomed),
            return_exceptions=True,
        )
        for state, result in zip(doomed, results, strict=True):
            if isinstance(result, Exception):
                logger.warning("old Job %s/%s not deleted: %s", state.namespace, state.name, result)


class WarmBatchJobExecutor(BatchJobExecutor):
    """``BatchJobExecutor`` whose slots are armed ahead (``protocols.ArmsAhead``): the Job of a
    slot is created ``lead`` before the run's scheduled time, held by the gate until then."""

    def __init__(
        self,
        *,
        api: requests.BatchJobsApi,
        watcher: batch_job_watcher.BatchJobWatcher,
        owner: slots.JobRef,
        template: Mapping[str, Any],
        active_deadline: timedelta,
        lead: timedelta,
        mode: job_models.WarmStartMode,
        gate_image: str,
        history: plans.History = plans.History(),
        reports: protocols.WarmStartReports | None = None,
    ) -> None:
        """``reports``: where the check at each slot says whether its pod was at its gate
        (``None``: not checked)."""
        super().__init__(
            api=api,
            watcher=watcher,
            owner=owner,
            template=template,
            active_deadline=active_deadline,
            history=history,
        )
        # Kept whole: a warm Job's template holds its slot's release instant.
        self._template = template
        self._active_deadline = active_deadline
        self._lead = lead
        self._mode = mode
        self._gate_image = gate_image
        self._armed: dict[str, states.BatchJobState] = {}
        """The Jobs this executor armed, by slot id, until their run follows them."""
        self._reports = reports
        self._checks: set[asyncio.Task[None]] = set()
        """The checks at the slot in flight (kept: a task nobody holds may be collected)."""

    def __repr__(self) -> str:
        return f"WarmBatchJobExecutor({self._owner.namespace}/{self._owner.name})"

    @property
    def warm_lead(self) -> timedelta:
        return self._lead

    async def arm(self, context: records.RunContext) -> None:
        """Create the slot's warm Job, released at ``context.scheduled_time``; one there
        already for the same slot (armed by another replica, or before a restart) is adopted.
        Raises ``BatchJobApiError`` when it cannot be created, or the name is another's."""
        armed = warm.rewrite(
            self._template,
            release_at=context.scheduled_time,
            mode=self._mode,
            gate_image=self._gate_image,
        )
        request = manifests.BatchJobRequest.of(
            manifests.batch_job_manifest(
                armed.template,
                owner=self._owner,
                slot=context.slot,
                slot_id=context.slot_id,
                scheduled_time=context.scheduled_time,
                # Created a lead early: the run's timeout still counts from its slot.
                active_deadline=self._active_deadline,
                lead=self._lead,
                token=context.token,
            )
        )
        state, created = await self._api.create(request)
        if not created and not self._is_ours(state, context):
            raise requests.BatchJobApiError(
                f"Job {request.name} exists and was not created for this slot: not armed"
            )
        self._armed[context.slot_id] = state
        while len(self._armed) > prepared.KEPT:  # the oldest: its run went another way
            del self._armed[next(iter(self._armed))]

    async def disarm(self, context: records.RunContext) -> None:
        """Delete the slot's Job if it is the slot's (its uid as read): before its release, its
        pod never runs the workload."""
        self._armed.pop(context.slot_id, None)
        await self.abort(context)

    async def __call__(self, context: records.RunContext) -> records.Outcome:
        """Follow the Job armed here for the slot; else create it cold, or adopt the one
        another replica armed (its creation is AlreadyExists)."""
        state = self._armed.pop(context.slot_id, None)
        if state is None:
            return await super().__call__(context)
        return await self._follow(state)

    def _start_mode(self, state: states.BatchJobState) -> records.StartMode | None:
        return state.warm_start or records.StartMode.COLD

    async def _follow(self, state: states.BatchJobState) -> records.Outcome:
        """Follow the slot's Job; a warm one (armed here or elsewhere) is checked at once, in a
        task of its own: the run's end is never waited for behind it."""
        due = state.scheduled_time
        if self._reports is not None and state.warm_start is not None and due is not None:
            check = asyncio.create_task(self._check(state, due), name=f"check of {state.name}")
            self._checks.add(check)
            check.add_done_callback(self._checks.discard)
        return await super()._follow(state)

    async def _check(self, state: states.BatchJobState, due: datetime) -> None:
        """Read the warm Job's pods (and, with none, its status) once, and report whether its
        pod is at its gate; a read that fails or takes too long reports nothing (logged)."""
        assert self._reports is not None
        namespace, name = state.key
        try:
            async with asyncio.timeout(CHECK_TIMEOUT.total_seconds()):
                pods = await self._api.pods_of(namespace, name, limit=CHECKED_PODS)
                job_status = {} if pods else await self._api.status_of(namespace, name)
        except (requests.BatchJobApiError, TimeoutError) as error:
            logger.warning("Job %s/%s: its pod not checked at its slot: %s", namespace, name, error)
            return
        self._reports.warm_start_checked(
            self._owner,
            scheduled_time=due,
            not_ready=readiness.not_ready(pods, job_status),
        )
