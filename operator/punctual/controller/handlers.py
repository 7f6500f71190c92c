"""kopf handlers: watch events in, reconciler calls out. Nothing else.

Only ``on.event`` handlers, on purpose: they run on every replica for every event and persist
nothing (no handler progress, no last-handled state, no finalizers), so replicas never block
or undo each other.
"""

from typing import Any

import kopf

from punctual.controller import reconciler
from punctual.kube import resources


def register(registry: kopf.OperatorRegistry, scheduled_jobs: reconciler.Reconciler) -> None:
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
