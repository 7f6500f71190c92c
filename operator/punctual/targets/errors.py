"""What every target kind's wiring raises when the spec is valid but this operator cannot run it.

``TargetUnavailableError`` is the one error for that, with one reason per missing capability;
an invalid spec is ``punctual.scheduling.errors.InvalidSpecError`` instead.
"""

QUEUE_UNAVAILABLE = "QueueUnavailable"
"""A queue target, and this operator has no Redis."""
HOST_NOT_ALLOWED = "HostNotAllowed"
"""An HTTP target whose host this operator may not call (its allowlist or address guard)."""
MAX_LEN_ABOVE_LIMIT = "MaxLenAboveLimit"
"""A queue target whose ``maxLen`` is above what this operator allows (``--queue-max-len``)."""
STREAM_BYTES_ABOVE_LIMIT = "StreamBytesAboveLimit"
"""A queue target whose ``maxLen`` entries, each with its payload, would take more bytes than
this operator allows one stream (``--max-stream-bytes``)."""
JOBS_UNAVAILABLE = "JobsUnavailable"
"""A job target, and this operator does not create batch Jobs."""
BROKER_IS_CLUSTER = "BrokerIsCluster"
"""A queue job whose broker turned out, at a run, to be a Redis Cluster node, where the slot's
claim and the framework's keys cannot be one script (``targets.problems``: Ready False until a
run finds a standalone Redis or a primary there)."""


class TargetUnavailableError(Exception):
    """The spec is valid, but this operator lacks what its target needs (``reason`` says what).

    Reported like an invalid spec (Ready False, a Warning Event), with its own reason.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
