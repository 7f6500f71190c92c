"""From ``spec.target.job`` to its executor: the template checked, the shared watch started."""

from collections.abc import Mapping
from datetime import timedelta

from punctual.api import job_models, models, planning, warm_pods, warm_start_plans
from punctual.contracts import protocols
from punctual.scheduling import durations, slots
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets import errors, plugin
from punctual.targets.job import executor, requests
from punctual.targets.job import watcher as batch_job_watcher


class BatchJobTargets:
    """The job targets of this operator: its batch Job requests and its one watch of them
    (``None``: this operator does not create batch Jobs)."""

    def __init__(
        self,
        *,
        api: requests.BatchJobsApi | None = None,
        watcher: batch_job_watcher.BatchJobWatcher | None = None,
        gate_image: str | None = None,
        warm_start_reports: protocols.WarmStartReports | None = None,
    ) -> None:
        """``gate_image``: the warm start's gate image when a spec names none (``None``: the
        gate's bare name); ``warm_start_reports``: where warm jobs say whether their pod was at
        its gate at each slot (``WarmStartNotReady``; ``None``: not checked)."""
        self._api = api
        self._watcher = watcher
        self._gate_image = gate_image or warm_pods.GATE
        self._warm_start_reports = warm_start_reports

    def wire(self, owner: slots.JobRef, spec: models.ScheduledJobSpec) -> plugin.Wiring:
        """Raises ``InvalidSpecError`` for a template that is no JobSpec (``template_of``),
        ``TargetUnavailableError`` when this operator does not create batch Jobs."""
        target = spec.target.job
        assert target is not None  # the registry wires a spec with its own kind
        return plugin.Wiring(self._executor(owner, target, spec))

    def _executor(
        self, owner: slots.JobRef, target: job_models.JobTarget, spec: models.ScheduledJobSpec
    ) -> protocols.Executor:
        if self._api is None or self._watcher is None:
            raise errors.TargetUnavailableError(
                errors.JOBS_UNAVAILABLE, "spec.target.job: this operator does not create Jobs"
            )
        template = template_of(target)
        timeout: timedelta = durations.parse(spec.timeout, field="spec.timeout")
        # The watch of Jobs starts with the first job target: the concurrency policy of the
        # first slot already counts the Jobs an earlier operator process or replica left.
        self._watcher.start()
        history = planning.history(spec.history)
        warm_start = target.warm_start
        if warm_start is not None:
            return executor.WarmBatchJobExecutor(
                api=self._api,
                watcher=self._watcher,
                owner=owner,
                template=template,
                active_deadline=timeout,
                lead=warm_start_plans.warm_lead(warm_start),
                mode=warm_start.mode,
                gate_image=warm_start.gate_image or self._gate_image,
                history=history,
                reports=self._warm_start_reports,
            )
        return executor.BatchJobExecutor(
            api=self._api,
            watcher=self._watcher,
            owner=owner,
            template=template,
            active_deadline=timeout,
            history=history,
        )


def template_of(target: job_models.JobTarget) -> Mapping[str, object]:
    """``target.template``, checked: raises ``InvalidSpecError`` when it has no JobSpec or its
    metadata is no object.

    Part of the operator's check of a spec (``punctual.controller.validation``); what only the
    API server can say of the JobSpec inside is the webhook's dry run (``targets.job.dry_run``).
    """
    template: Mapping[str, object] = target.template
    if not isinstance(template.get("spec"), Mapping):
        raise InvalidSpecError(
            "spec.target.job.template.spec", "required: a batch/v1 JobSpec (as in a CronJob)"
        )
    metadata = template.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidSpecError("spec.target.job.template.metadata", "must be an object")
    return template
