"""The HTTP target kind (``spec.target.http``) as the operator's plug-in (``targets.plugin``)."""

import contextlib
from typing import Final

from punctual.api import models
from punctual.targets import plugin
from punctual.targets.http import connections, wiring


class HttpKind:
    """A request from the operator itself, on connections of its own."""

    name: Final = "http"
    access: Final = (
        # headersFrom: the Secrets a job names (kube/secrets.py: SecretReader.read).
        plugin.AccessRule(api_group="", resource="secrets", verbs=("get",)),
    )

    def check(self, spec: models.ScheduledJobSpec) -> None:
        if spec.target.http is not None:
            wiring.request_for(spec.target.http)

    async def start(
        self, resources: plugin.Resources, exit_stack: contextlib.AsyncExitStack
    ) -> wiring.HttpTargets:
        """Connections closed by ``exit_stack``, refusing what ``resources.guard`` refuses."""
        opened = await exit_stack.enter_async_context(
            connections.HttpConnections(
                refuse=resources.guard.refusal,
                limit_per_namespace=resources.http_connections_per_namespace,
            )
        )
        return wiring.HttpTargets(
            connections=opened, secrets=resources.secrets, guard=resources.guard
        )


KIND: Final = HttpKind()
