"""The validating admission webhook: a ScheduledJob's CREATE or UPDATE refused, at ``kubectl
apply``, for what the CRD schema cannot check.

The check is the reconciler's (``validation.check``: the same ``InvalidSpecError`` that sets
``Ready: False, InvalidSpec`` without the webhook), plus, for a job target, a server-side dry
run of the batch Job a slot would create (``punctual.targets.job.dry_run``). The refusal's
message is the error's, ``<field path>: <problem>``.

Admitted without a check: an UPDATE that leaves ``spec`` as it was (labels, annotations,
finalizers: whatever its spec, an object must stay annotatable and deletable) and any change to
an object being deleted. The chart's ValidatingWebhookConfiguration says the same with
``matchConditions``, so the API server does not even call the webhook then; DELETE is never
sent to it.

kopf serves it (``kopf.WebhookServer``, ``punctual run --webhook-port``): its server takes the
certificate from files and loads them again when they change, and bounds a review's body (1 MiB,
aiohttp's default). The configuration is not kopf's to manage: the chart (or whoever installs
the operator) owns the ValidatingWebhookConfiguration and its CA bundle.
"""

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from punctual.api import spec_bounds
from punctual.contracts import protocols
from punctual.controller import validation
from punctual.scheduling import durations, hashed, slots
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets.job import dry_run
from punctual.targets.job import requests as batch_job_requests

WEBHOOK_ID = "validate-scheduledjobs"
"""The handler's id, and so the path it is served at (``/validate-scheduledjobs``). kopf
admits a review sent to any other path (no handler matches it): the webhook configuration
must name this one."""


ANSWER_LIMIT = 1024
"""The longest refusal or warning the webhook answers, in characters: its words quote the
spec and the API server, and an answer is read by whoever applied the object, not stored."""


def namespace_under_review(request: Mapping[str, Any]) -> str:
    """The one namespace a review (the ``request`` of an AdmissionReview) may act in: the
    request's own, which the object under review and the object before it must both name.

    Raises ``InvalidSpecError`` for a review without a namespace (a ScheduledJob is namespaced)
    or with an object of another namespace: the dry run would otherwise run, as the operator,
    wherever the object says, and answer with what it found there.
    """
    namespace = request.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        raise InvalidSpecError("request.namespace", "a ScheduledJob's review names its namespace")
    for key in ("object", "oldObject"):
        body = request.get(key)
        if key == "oldObject" and body is None:
            continue  # a CREATE has no object before it
        metadata = body.get("metadata") if isinstance(body, Mapping) else None
        named = metadata.get("namespace") if isinstance(metadata, Mapping) else None
        if named != namespace:
            raise InvalidSpecError(
                f"request.{key}.metadata.namespace", "not the namespace of the review"
            )
    return namespace


def bounded(answer: str) -> str:
    """``answer`` cut to ``ANSWER_LIMIT`` characters."""
    if len(answer) <= ANSWER_LIMIT:
        return answer
    return answer[: ANSWER_LIMIT - 3] + "..."


class Admission:
    """Reviews of ScheduledJob writes: the spec checked, a job target's Job dry-run."""

    def __init__(
        self,
        *,
        batch_jobs: batch_job_requests.BatchJobsApi | None,
        wall: protocols.WallClock,
        bounds: spec_bounds.Bounds = spec_bounds.DEFAULT_BOUNDS,
        dry_run_timeout: timedelta = dry_run.TIMEOUT,
        warm_start_gate_image: str | None = None,
    ) -> None:
        """``batch_jobs``: where a job target's Job is dry-run; ``None``: it is not. ``bounds``:
        the platform's, as the reconciler checks them. ``warm_start_gate_image``: the operator's
        ``--warm-start-gate-image``, the gate of a warm Job dry-run without its own."""
        self._batch_jobs = batch_jobs
        self._wall = wall
        self._bounds = bounds
        self._dry_run_timeout = dry_run_timeout
        self._warm_start_gate_image = warm_start_gate_image

    async def review(
        self, *, operation: str, body: Mapping[str, Any], old: Mapping[str, Any] | None
    ) -> list[str]:
        """The warnings for an admitted write; raises ``InvalidSpecError`` to refuse it.

        ``body``'s namespace is where the dry run goes: the server has made sure it is the
        review's (``namespace_under_review``) before this is called."""
        metadata = body.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            return []
        if operation == "UPDATE" and old is not None and old.get("spec") == body.get("spec"):
            return []
        # On CREATE the API server has set the uid by the time it asks its webhooks.
        owner = slots.JobRef(
            namespace=str(metadata.get("namespace") or ""),
            name=str(metadata.get("name") or ""),
            uid=str(metadata.get("uid") or ""),
        )
        checked = validation.check(
            body.get("spec") or {},
            uid=owner.uid,
            hash_key=hashed.job_key(namespace=owner.namespace, name=owner.name),
            bounds=self._bounds,
            now=self._wall(),
        )
        target = checked.spec.target.job
        if target is None or self._batch_jobs is None:
            return []
        warning = await dry_run.check(
            self._batch_jobs,
            owner=owner,
            template=target.template,
            active_deadline=durations.parse(checked.spec.timeout, field="spec.timeout"),
            slot=self._wall().replace(microsecond=0),
            within=self._dry_run_timeout,
            warm_start=target.warm_start,
            gate_image=self._warm_start_gate_image,
        )
        return [warning] if warning is not None else []
