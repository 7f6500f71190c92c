"""The queue target kind (``spec.target.queue``: a Redis stream entry, or a task on the tenant's
broker) as the operator's plug-in (``targets.plugin``)."""

import contextlib
from typing import Final

from punctual.api import models
from punctual.targets import plugin
from punctual.targets.queue import brokers, stream, wiring


class QueueKind:
    """Stream entries on the operator's Redis, tasks on the tenants' brokers."""

    name: Final = "queue"
    access: Final = (
        # brokerFrom: the Secret holding the broker's URL (kube/secrets.py: SecretReader.read).
        plugin.AccessRule(api_group="", resource="secrets", verbs=("get",)),
    )

    def check(self, spec: models.ScheduledJobSpec) -> None:
        """Nothing beyond the model's own checks and the platform's bounds."""

    async def start(
        self, resources: plugin.Resources, exit_stack: contextlib.AsyncExitStack
    ) -> wiring.QueueTargets:
        """The stream claims on the operator's Redis (none without one) and the clients of the
        tenants' brokers, behind ``resources.guard``; both closed by ``exit_stack``."""
        streams = None
        if resources.redis is not None:
            streams = stream.StreamClaims(
                resources.redis,
                owns_client=False,
                acknowledgement=resources.acknowledgement,
                idle_expiry=resources.stream_idle_expiry,
            )
            exit_stack.push_async_callback(streams.close)
        tenants = brokers.Brokers(guard=resources.guard)
        exit_stack.push_async_callback(tenants.close)
        return wiring.QueueTargets(
            streams,
            max_len_limit=resources.queue_max_len,
            max_stream_bytes=resources.max_stream_bytes,
            brokers=tenants,
            secrets=resources.secrets,
            problems=resources.problems,
        )


KIND: Final = QueueKind()
