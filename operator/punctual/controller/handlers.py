"""kopf handlers: Calendar watch events in, reconciler calls out; admission reviews in, the
admission's verdict out (on kopf's server, which refuses a review of another namespace before any
handler sees it); kopf's cleanup, the replica's stop. Nothing else. ScheduledJobs are watched
beside kopf (``controller.job_events``): their status writes come back as an event to every
replica, far too many for kopf's per-event and per-object costs.

Only ``on.event`` handlers for objects, on purpose: they run on every replica for every event
and persist nothing (no handler progress, no last-handled state, no finalizers), so replicas
never block or undo each other.

The stop is a cleanup handler because of when kopf runs those: on SIGTERM it stops its own
tasks (no more events), then runs the cleanup handlers, and only then cancels, 5 s later, every
task started since the operator's start (which includes every run). Stopping there, runs are
ended and recorded by us, and their status written, while everything they need is still open.
"""

import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Protocol

import kopf

from punctual.aio import context as aio_context
from punctual.api import day_models, models
from punctual.controller import admission, reconciler
from punctual.scheduling.errors import InvalidSpecError

INVALID = 422
"""An admission refusal's code, as for the CRD schema's own errors (Invalid)."""
FORBIDDEN = 403
"""The code of a review refused before any check: not one the API server sends."""
_REVIEW_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")


class Stoppable(Protocol):
    async def stop(self) -> None:
        """End every run, record its fate and write every pending status; idempotent."""


def register(
    registry: kopf.OperatorRegistry,
    scheduled_jobs: reconciler.Reconciler,
    replica: Stoppable,
    *,
    reviews: admission.Admission | None = None,
) -> None:
    """The handlers; with ``reviews``, the validating webhook's too (kopf then needs a server:
    ``settings.admission.server``)."""

    # A registry of our own has none of kopf's default login fallbacks: name the one we use
    # (kubernetes-asyncio's: in-cluster service account, else the kubeconfig).
    @kopf.on.login(registry=registry)
    async def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return await kopf.login_via_async_client(**kwargs)

    # kopf's handler context holds the event's cause (its body, patch, loggers and memo), and the
    # job loop's tasks, created while a Calendar's change arms its jobs again, live as long as
    # the job: detached, they keep one event's cause, not each an older copy of the body than
    # the object cache keeps.
    detached = aio_context.Detached()

    @kopf.on.event(models.GROUP, models.VERSION, day_models.CALENDAR_PLURAL, registry=registry)
    async def calendar_event(type: str | None, body: kopf.Body, **_: Any) -> None:
        await detached.run(scheduled_jobs.calendar_changed(body, deleted=type == "DELETED"))

    if reviews is not None:
        register_admission(registry, reviews)

    # PERMANENT: a stop that failed is logged once, not retried every minute; the caller's
    # safety net tries it again after kopf returns.
    @kopf.on.cleanup(registry=registry, errors=kopf.ErrorsMode.PERMANENT)
    async def stop_replica(**_: Any) -> None:
        await replica.stop()


def register_admission(registry: kopf.OperatorRegistry, reviews: admission.Admission) -> None:
    """The validating handler for CREATE and UPDATE of ScheduledJobs (never DELETE), served at
    ``/<admission.WEBHOOK_ID>``."""

    @kopf.on.validate(
        models.GROUP,
        models.VERSION,
        models.PLURAL,
        id=admission.WEBHOOK_ID,
        operations=["CREATE", "UPDATE"],
        registry=registry,
    )
    async def validate_scheduled_job(body: kopf.Body, warnings: list[str], **cause: Any) -> None:
        # kopf passes the operation and the object before it (``old``) beside its protocol's
        # arguments.
        operation, old = str(cause.get("operation") or ""), cause.get("old")
        try:
            found = await reviews.review(operation=operation, body=body, old=old)
        except InvalidSpecError as error:
            raise kopf.AdmissionError(admission.bounded(str(error)), code=INVALID) from None
        warnings.extend(admission.bounded(warning) for warning in found)


class ReviewServer(kopf.WebhookServer):
    """kopf's webhook server, every review first asked ``admission.namespace_under_review``.

    kopf hands its handlers the object, not the review's own namespace: the check is made
    here, on the whole review, and a review it refuses never reaches kopf (no handler, no dry
    run, no API call).
    """

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        async for client_config in super().__call__(NamespaceBound(fn)):
            yield client_config


class NamespaceBound:
    """A kopf webhook function that answers only reviews within one namespace (see
    ``ReviewServer``), and refuses the others itself."""

    def __init__(self, serve: kopf.WebhookFn) -> None:
        self._serve = serve

    async def __call__(
        self,
        request: Any,
        *,
        webhook: str | None = None,
        headers: kopf.Headers | None = None,
        sslpeer: kopf.SSLPeer | None = None,
    ) -> Any:
        payload = request.get("request") if isinstance(request, Mapping) else None
        try:
            admission.namespace_under_review(payload if isinstance(payload, Mapping) else {})
        except InvalidSpecError as error:
            return _refusal(request, payload, str(error))
        return await self._serve(request, webhook=webhook, headers=headers, sslpeer=sslpeer)


def _refusal(request: Any, payload: object, message: str) -> dict[str, Any]:
    """The AdmissionReview answer refusing ``request``: it echoes the review's uid, as the
    protocol asks, and nothing else of it."""
    uid = payload.get("uid") if isinstance(payload, Mapping) else None
    version = request.get("apiVersion") if isinstance(request, Mapping) else None
    return {
        "apiVersion": version if version in _REVIEW_VERSIONS else _REVIEW_VERSIONS[0],
        "kind": "AdmissionReview",
        "response": {
            "uid": admission.bounded(uid) if isinstance(uid, str) else "",
            "allowed": False,
            "status": {"code": FORBIDDEN, "message": message},
        },
    }


class RefusalsAreNotErrors(logging.Filter):
    """Logs the webhook's refusals at INFO: kopf logs every admission handler that raises as
    an ERROR ("failed permanently"), but a refused ``kubectl apply`` is the webhook doing its
    job, already told to whoever applied it. Install it on kopf's ``kopf.objects`` logger."""

    _REFUSAL = f"Webhook {admission.WEBHOOK_ID!r} failed permanently: "

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and str(record.msg).startswith(self._REFUSAL):
            record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
            record.msg = "refused: " + str(record.msg).removeprefix(self._REFUSAL)
        return True


class NoDiffBase(kopf.DiffBaseStorage):
    """A diff base for an operator with ``on.event`` handlers only: none.

    For every watch event, kopf builds the object's "essence" (a deep copy of the whole body,
    status and managedFields included, then trimmed) to diff it for ``on.create``/``on.update``
    handlers, whether there are any or not. Punctual has none: the copies were a share of an
    operator restart's CPU worth saving (docs/benchmarks.md), when kopf still watched
    ScheduledJobs.
    Set it as ``settings.persistence.diffbase_storage``.
    """

    def build(
        self,
        *,
        body: kopf.Body,
        extra_fields: Iterable[str | tuple[str, ...] | list[str] | None] | None = None,
    ) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        pass  # nothing to remember: there is no change handler to diff for
