"""The job target's executor: one batch/v1 Job per slot, followed to its end, like a CronJob's.

A run creates the slot's batch Job (``manifests`` names it after the slot, so a second creation
by another replica or after a restart is ``AlreadyExists``: the existing Job of the same slot is
followed instead), then waits for the Job's Complete or Failed condition through the
operator's one shared watch of Jobs (``watcher``). A Job that fails with ``DeadlineExceeded`` (its
``activeDeadlineSeconds``, from ``spec.timeout``) is a timed-out run.

When the loop gives up on a run (``Replace``, or the loop's own timeout), ``abort`` deletes the
Job with background propagation. When the operator stops, runs are cancelled but their Jobs
are left alone: they go on, and the ScheduledJob's owner reference cleans them up eventually.

After each run, finished Jobs beyond ``spec.history`` are deleted: the newest ``succeeded``
complete Jobs and the newest ``failed`` failed Jobs of the ScheduledJob are kept, as CronJob's
``successfulJobsHistoryLimit`` and ``failedJobsHistoryLimit`` do.
"""

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from punctual.contracts import records
from punctual.scheduling import slots
from punctual.targets import prepared
from punctual.targets.job import manifests, requests, states
from punctual.targets.job import watcher as batch_job_watcher

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BatchJobHistory:
    succeeded: int = 3
    failed: int = 3


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
        history: BatchJobHistory = BatchJobHistory(),
    ) -> None:
        self._api = api
        self._watcher = watcher
        self._owner = owner
        # Serialised now, once: the template itself is not kept (a slot's request shares it).
        self._job = manifests.BatchJobTemplate(
            template, owner=owner, active_deadline=active_deadline
        )
        self._history = history
        self._prepared = prepared.Prepared(self._request)

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
        end = await self._watcher.ended(state)
        await self._clean_up()
        if end.succeeded:
            return records.Outcome(True, f"Job {name} complete")
        detail = f"{end.reason}: {end.message}" if end.message else end.reason
        return records.Outcome(
            False, f"Job {name} failed: {detail}", timed_out=end.deadline_exceeded
        )

    async def abort(self, context: records.RunContext) -> None:
        """Delete the slot's Job (and, in the background, its pods), if it is ours."""
        name = self.job_name(context)
        namespace = self._owner.namespace
        state = self._watcher.known(namespace, name) or await self._api.read(namespace, name)
        if state is None or not self._is_ours(state, context):
            return
        if await self._api.delete(namespace, name, uid=state.uid):
            logger.info("slot %s: deleted Job %s/%s", context.slot_id, namespace, name)

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
