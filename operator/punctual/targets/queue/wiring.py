"""From ``spec.target.queue`` to its executor and the stream lock that claims its slots."""

from punctual.api import models
from punctual.targets import errors
from punctual.targets.queue import executor, stream


class QueueTargets:
    """The queue targets of this operator: the stream claims on its Redis (``None``: it has
    none)."""

    def __init__(self, streams: stream.StreamClaims | None = None) -> None:
        self._streams = streams

    def wire(self, target: models.QueueTarget) -> tuple[executor.QueueExecutor, stream.StreamLock]:
        """The job's executor and its own slot lock, which appends the slot's entry as it
        claims it. Raises ``TargetUnavailableError`` when this operator has no Redis."""
        if self._streams is None:
            raise errors.TargetUnavailableError(
                errors.QUEUE_UNAVAILABLE,
                "spec.target.queue: the queue target needs the operator's Redis, and this "
                "operator has none: run it with --redis-url (or $PUNCTUAL_REDIS_URL)",
            )
        lock = self._streams.lock_for(
            stream=target.stream, payload=target.payload, max_len=target.max_len
        )
        return executor.QueueExecutor(lock, stream=target.stream), lock
