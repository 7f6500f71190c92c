"""kopf handlers: watch events in, reconciler calls out; kopf's cleanup, the replica's stop.
Nothing else.

Only ``on.event`` handlers for objects, on purpose: they run on every replica for every event
and persist nothing (no handler progress, no last-handled state, no finalizers), so replicas
never block or undo each other.

The stop is a cleanup handler because of when kopf runs those: on SIGTERM it stops its own
tasks (no more events), then runs the cleanup handlers, and only then cancels, 5 s later, every
task started since the operator's start (which includes every run). Stopping there, runs are
ended and recorded by us, and their status written, while everything they need is still open.
"""

from typing import Any, Protocol

import kopf

from punctual.controller import reconciler
from punctual.kube import resources


class Stoppable(Protocol):
    async def stop(self) -> None:
        """End every run, record its fate and write every pending status; idempotent."""


def register(
    registry: kopf.OperatorRegistry,
    scheduled_jobs: reconciler.Reconciler,
    replica: Stoppable,
) -> None:
    # A registry of our own has none of kopf's default login fallbacks: name the one we use
    # (kubernetes-asyncio's: in-cluster service account, else the kubeconfig).
    @kopf.on.login(registry=registry)
    async def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return await kopf.login_via_async_client(**kwargs)

    @kopf.on.event(resources.GROUP, resources.VERSION, resources.PLURAL, registry=registry)
    async def scheduled_job_event(type: str | None, body: kopf.Body, **_: Any) -> None:
        if type == "DELETED":
            await scheduled_jobs.forget(body)
        else:
            await scheduled_jobs.observe(body)

    # PERMANENT: a stop that failed is logged once, not retried every minute; the caller's
    # safety net tries it again after kopf returns.
    @kopf.on.cleanup(registry=registry, errors=kopf.ErrorsMode.PERMANENT)
    async def stop_replica(**_: Any) -> None:
        await replica.stop()
