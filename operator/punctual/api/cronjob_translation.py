"""One CronJob's translation into the ScheduledJob that behaves the same, field by field.

Belongs here: ``Translation``, which turns one CronJob manifest into a ScheduledJob manifest,
gathering a ``Problem`` for every field it leaves out or changes, then puts the result through
the operator's own check (``check``: ``spec_parsing.parse_spec``, then ``planning.plan_for``),
naming the CronJob's field the check refuses; and what it knows of CronJob to do so: its fields
and defaults, the fields of the JobSpec its jobTemplate holds, the metadata the API server sets.

Does not belong here: the schedule, its zone and ``@every`` (``punctual.api.cronjob_schedules``);
documents, lists and what the caller chooses where a CronJob says nothing
(``punctual.api.cronjobs``, whose docstring has the field-by-field table); the wording of
problems (``punctual.api.cronjob_problems``).
"""

import copy
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from punctual.api import (
    cronjob_fields,
    cronjob_problems,
    cronjob_schedules,
    models,
    planning,
    spec_bounds,
    spec_parsing,
)
from punctual.scheduling import durations
from punctual.scheduling.errors import InvalidSpecError

HISTORY_LIMIT = 100
"""The most runs of either outcome a ScheduledJob keeps (``schedule_models.HistorySpec``)."""
_LONGEST_SECONDS = (2**63 - 1) // 10**9
"""Go's time.Duration stops at 2^63 - 1 ns: the longest duration a ScheduledJob field takes."""
# Where each ScheduledJob field came from in the CronJob, to name the CronJob's field when the
# operator's check refuses one (longest prefix first).
_ORIGINS = (
    ("spec.target.job.template", "spec.jobTemplate"),
    ("spec.missedRuns.startingDeadline", "spec.startingDeadlineSeconds"),
    ("spec.history.succeeded", "spec.successfulJobsHistoryLimit"),
    ("spec.history.failed", "spec.failedJobsHistoryLimit"),
    ("spec.timeout", "spec.jobTemplate.spec.activeDeadlineSeconds"),
    ("spec.every", "spec.schedule"),
    ("spec.schedule", "spec.schedule"),
    ("spec.concurrencyPolicy", "spec.concurrencyPolicy"),
    ("spec.suspend", "spec.suspend"),
)
_CHECK_UID = "punctual-convert"
"""The uid the operator's check plans with: no jitter is written, so no offset depends on it."""


class Translation:
    """One CronJob's translation, gathering its problems as it goes: ``scheduled_job``, then
    ``checked``. ``default_time_zone`` is written for a cron schedule without a zone,
    ``default_timeout`` for a jobTemplate without activeDeadlineSeconds."""

    def __init__(self, *, default_time_zone: str, default_timeout: str) -> None:
        self.default_time_zone = default_time_zone
        self.default_timeout = default_timeout
        self.problems: list[cronjob_problems.Problem] = []
        self.zone_origin = "spec.timeZone"

    def problem(self, path: str, message: str) -> None:
        self.problems.append(cronjob_problems.Problem(path=path, message=message))

    def scheduled_job(self, cronjob: Mapping[str, Any]) -> dict[str, Any] | None:
        for key in cronjob:
            if key not in cronjob_fields.TOP_LEVEL_FIELDS:
                self.problem(
                    cronjob_problems.field_path("", key), "not a field of a CronJob: left out"
                )
        metadata = self.metadata(cronjob.get("metadata"))
        spec = cronjob.get("spec")
        if not isinstance(spec, Mapping):
            self.problem("spec", "required: a CronJob spec")
            return None
        converted = self.spec(spec)
        if metadata is None or converted is None:
            return None
        return {
            "apiVersion": models.API_VERSION,
            "kind": models.KIND,
            "metadata": metadata,
            "spec": converted,
        }

    def metadata(self, metadata: object) -> dict[str, Any] | None:
        if not isinstance(metadata, Mapping):
            self.problem("metadata", "required: an object with a name")
            return None
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            self.problem("metadata.name", "required")
        converted: dict[str, Any] = {"name": name}
        namespace = metadata.get("namespace")
        if namespace is not None:
            converted["namespace"] = namespace
        labels = self.mapping(metadata, "labels", path="metadata.labels")
        if labels:
            converted["labels"] = labels
        annotations = self.mapping(metadata, "annotations", path="metadata.annotations")
        annotations.pop(cronjob_fields.LAST_APPLIED_ANNOTATION, None)
        if annotations:
            converted["annotations"] = annotations
        for key in metadata:
            if (
                key
                in {"name", "namespace", "labels", "annotations"}
                | cronjob_fields.SERVER_SET_METADATA
            ):
                continue
            path = cronjob_problems.field_path("metadata", key)
            match key:
                case "ownerReferences":
                    self.problem(
                        path,
                        "left out: the CronJob's owners would not manage the ScheduledJob "
                        "(add them again if they should own it)",
                    )
                case "finalizers":
                    self.problem(path, "left out: whatever added them handles CronJobs")
                case _:
                    self.problem(path, "not a field of an object's metadata: left out")
        return converted if isinstance(name, str) and name else None

    def mapping(self, parent: Mapping[str, Any], key: str, *, path: str) -> dict[str, Any]:
        value = parent.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.problem(
                path, f"must be an object, not {cronjob_problems.kind_of(value)}: left out"
            )
            return {}
        return dict(value)

    def spec(self, spec: Mapping[str, Any]) -> dict[str, Any] | None:
        for key in spec:
            if key not in cronjob_fields.SPEC_FIELDS:
                self.problem(
                    cronjob_problems.field_path("spec", key),
                    "not a field of a CronJob's spec: left out",
                )
        schedule = self.schedule(spec)
        template = self.job_template(spec.get("jobTemplate"))
        if schedule is None or template is None:
            return None
        converted = dict(schedule)
        concurrency = self.concurrency_policy(spec)
        if concurrency is not None:
            converted["concurrencyPolicy"] = concurrency
        suspend = spec.get("suspend", False)
        if isinstance(suspend, bool):
            converted["suspend"] = suspend
        else:
            self.problem(
                "spec.suspend",
                f"{cronjob_problems.show(suspend)} is not true or false: left out (not suspended)",
            )
        converted["timeout"] = self.timeout(template)
        converted["missedRuns"] = self.missed_runs(spec)
        converted["history"] = self.history(spec)
        converted["target"] = {"job": {"template": template}}
        return converted

    def schedule(self, spec: Mapping[str, Any]) -> dict[str, Any] | None:
        schedule = cronjob_schedules.translate(spec, default_time_zone=self.default_time_zone)
        self.problems.extend(schedule.problems)
        self.zone_origin = schedule.zone_origin
        return schedule.fields

    def concurrency_policy(self, spec: Mapping[str, Any]) -> str | None:
        policy = spec.get("concurrencyPolicy", cronjob_fields.CONCURRENCY_DEFAULT)
        if policy in cronjob_fields.CONCURRENCY_POLICIES:
            return str(policy)
        self.problem(
            "spec.concurrencyPolicy",
            f"{cronjob_problems.show(policy)} is not one of "
            f"{', '.join(cronjob_fields.CONCURRENCY_POLICIES)}: left out (a ScheduledJob's "
            "default is Forbid)",
        )
        return None

    def job_template(self, job_template: object) -> dict[str, Any] | None:
        if not isinstance(job_template, Mapping):
            self.problem("spec.jobTemplate", "required: {metadata, spec} of the Jobs to create")
            return None
        for key in job_template:
            if key not in {"metadata", "spec"}:
                self.problem(
                    cronjob_problems.field_path("spec.jobTemplate", key),
                    "not a field of a CronJob's jobTemplate: left out",
                )
        job_spec = job_template.get("spec")
        if not isinstance(job_spec, Mapping):
            self.problem("spec.jobTemplate.spec", "required: a batch/v1 JobSpec")
            return None
        for key in job_spec:
            if key not in cronjob_fields.JOB_SPEC_FIELDS:
                self.problem(
                    cronjob_problems.field_path("spec.jobTemplate.spec", key),
                    "not a field of a batch/v1 JobSpec (as of Kubernetes 1.35): copied as is, "
                    "but an API server that does not know it drops it from the Jobs",
                )
        template: dict[str, Any] = {}
        metadata = self.mapping(job_template, "metadata", path="spec.jobTemplate.metadata")
        metadata = _without_creation_timestamp(metadata)
        if metadata:
            template["metadata"] = copy.deepcopy(metadata)
        converted_spec = copy.deepcopy(dict(job_spec))
        pod_template = converted_spec.get("template")
        if isinstance(pod_template, Mapping) and isinstance(pod_template.get("metadata"), Mapping):
            pod_metadata = _without_creation_timestamp(pod_template["metadata"])
            converted_spec["template"] = {**pod_template, "metadata": pod_metadata}
            if not pod_metadata:
                del converted_spec["template"]["metadata"]
        template["spec"] = converted_spec
        return template

    def timeout(self, template: dict[str, Any]) -> str:
        """``activeDeadlineSeconds``, taken out of ``template``, or the default timeout."""
        job_spec = template["spec"]
        deadline = job_spec.get("activeDeadlineSeconds")
        if deadline is None:
            return self.default_timeout
        if _is_whole(deadline) and 0 < deadline <= _LONGEST_SECONDS:
            del job_spec["activeDeadlineSeconds"]
            return durations.format(timedelta(seconds=deadline))
        self.problem(
            "spec.jobTemplate.spec.activeDeadlineSeconds",
            f"{cronjob_problems.show(deadline)} is not a whole number of seconds between 1 and "
            f"{_LONGEST_SECONDS}: kept in the template, wrote timeout {self.default_timeout}",
        )
        return self.default_timeout

    def missed_runs(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        missed_runs: dict[str, Any] = {"policy": "RunOnce"}
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is None:
            return missed_runs
        if _is_whole(deadline) and 0 < deadline <= _LONGEST_SECONDS:
            missed_runs["startingDeadline"] = durations.format(timedelta(seconds=deadline))
        else:
            self.problem(
                "spec.startingDeadlineSeconds",
                f"{cronjob_problems.show(deadline)} is not a whole number of seconds between 1 and "
                f"{_LONGEST_SECONDS}: left out (no deadline)",
            )
        return missed_runs

    def history(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        history: dict[str, Any] = {}
        for key, path, default in (
            (
                "succeeded",
                "spec.successfulJobsHistoryLimit",
                cronjob_fields.SUCCEEDED_HISTORY,
            ),
            ("failed", "spec.failedJobsHistoryLimit", cronjob_fields.FAILED_HISTORY),
        ):
            limit = spec.get(path.removeprefix("spec."), default)
            if not _is_whole(limit) or limit < 0:
                self.problem(
                    path,
                    f"{cronjob_problems.show(limit)} is not a whole number from 0: left out "
                    "(a ScheduledJob keeps 3)",
                )
            elif limit > HISTORY_LIMIT:
                self.problem(
                    path,
                    f"{limit} is more than a ScheduledJob keeps: wrote history.{key}: "
                    f"{HISTORY_LIMIT}",
                )
                history[key] = HISTORY_LIMIT
            else:
                history[key] = limit
        return history

    def checked(self, scheduled_job: dict[str, Any]) -> dict[str, Any] | None:
        """``scheduled_job`` if the operator's own check accepts it, else None and the problem."""
        try:
            check(scheduled_job["spec"])
        except InvalidSpecError as error:
            self.problem(
                self.origin(error.field),
                f"{error.problem} (the operator's check of {error.field}): no ScheduledJob",
            )
            return None
        return scheduled_job

    def origin(self, field: str) -> str:
        """The CronJob's field that a ScheduledJob's ``field`` was written from."""
        if field.startswith("spec.timeZone"):
            return self.zone_origin
        for written, origin in _ORIGINS:
            if field.startswith(written):
                return origin + field.removeprefix(written)
        return "spec"


def _without_creation_timestamp(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``kubectl get -o yaml`` writes ``creationTimestamp: null`` into templates."""
    return {key: value for key, value in metadata.items() if key != "creationTimestamp"}


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check(spec: Mapping[str, Any]) -> None:
    """The operator's own check of a ScheduledJob's ``spec``: raises ``InvalidSpecError``, naming
    the ScheduledJob's field, for a spec the operator would refuse."""
    planning.plan_for(spec_parsing.parse_spec(spec), uid=_CHECK_UID, bounds=spec_bounds.UNBOUNDED)
