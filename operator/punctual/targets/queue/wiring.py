"""From ``spec.target.queue`` to its executor and the stream lock that claims its slots.

The stream is the job's namespace's (``redis_io.namespace_keys.stream_key``), and it is always
bounded: ``maxLen`` unset is ``models.DEFAULT_STREAM_MAX_LEN`` (or the operator's limit, if
lower), and a ``maxLen`` above the limit (``--queue-max-len``) is not scheduled.
"""

from dataclasses import dataclass

from punctual.api import models
from punctual.redis_io import namespace_keys
from punctual.scheduling import slots
from punctual.targets import errors
from punctual.targets.queue import executor, stream

DEFAULT_MAX_LEN_LIMIT = 100_000
"""The most entries a queue job's stream may keep (``--queue-max-len``)."""


@dataclass(frozen=True, slots=True)
class WiredQueue:
    executor: executor.QueueExecutor
    lock: stream.StreamLock
    stream_key: str
    """The Redis key the entries go to, for users to find (the Ready condition names it)."""


class QueueTargets:
    """The queue targets of this operator: the stream claims on its Redis (``None``: it has
    none), and the longest stream a job may ask for."""

    def __init__(
        self,
        streams: stream.StreamClaims | None = None,
        *,
        max_len_limit: int = DEFAULT_MAX_LEN_LIMIT,
    ) -> None:
        self._streams = streams
        self._max_len_limit = max_len_limit

    def wire(self, job: slots.JobRef, target: models.QueueTarget) -> WiredQueue:
        """The job's executor and its own slot lock, which appends the slot's entry to the
        namespace's stream as it claims it. Raises ``TargetUnavailableError`` when this
        operator has no Redis, or ``maxLen`` is above its limit."""
        if self._streams is None:
            raise errors.TargetUnavailableError(
                errors.QUEUE_UNAVAILABLE,
                "spec.target.queue: the queue target needs the operator's Redis, and this "
                "operator has none: run it with --redis-url (or $PUNCTUAL_REDIS_URL)",
            )
        key = namespace_keys.stream_key(namespace=job.namespace, stream=target.stream)
        lock = self._streams.lock_for(
            stream=key, payload=target.payload, max_len=self._max_len(target)
        )
        return WiredQueue(executor.QueueExecutor(lock, stream=key), lock, key)

    def _max_len(self, target: models.QueueTarget) -> int:
        if target.max_len is None:
            return min(models.DEFAULT_STREAM_MAX_LEN, self._max_len_limit)
        if target.max_len > self._max_len_limit:
            raise errors.TargetUnavailableError(
                errors.MAX_LEN_ABOVE_LIMIT,
                f"spec.target.queue.maxLen: {target.max_len} is above this operator's limit "
                f"of {self._max_len_limit} entries per stream (--queue-max-len)",
            )
        return target.max_len
