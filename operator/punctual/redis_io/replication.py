"""What a slot claim can count on from a Redis that fails over or replicates, and what the
pipelined claims (``pipelines``) do about it: the replicas that must acknowledge a claim
(``Acknowledgement``) and the errors a failover causes (``during_a_failover``).

Apart from the pipelines because it is a property of the server, set by the operator
(``--redis-wait-replicas``, a ``redis+sentinel://`` URL), while the pipelines are how claims
travel; both locks.redis and targets.queue.stream take an ``Acknowledgement``.

Behind Sentinel (``fails_over``), a claim that fails again, or that a server answers as one in
a failover does (``during_a_failover``), is not refused but held like an unacknowledged one
(next): the failover is over in seconds, and the slot then runs late rather than missed (or is
missed where its caller says it is too late). A claim lost twice after it landed is answered
too: each check carries the ``GET``. A standalone server has no failover to wait for: such a
claim fails closed at once, so that a server down is reported unavailable within the
connection's timeouts; a claim lost twice after it landed then leaves its slot uncounted (the
claim that would count it finds the key taken), a narrow case that holding it would close
only by stalling every claim for as long as its key lives.

Acknowledged claims (``Acknowledgement``, ``--redis-wait-replicas``): replication is
asynchronous, so a claim a primary took may die with it, and the replica promoted in its place
lets another replica claim the slot again. With ``replicas`` above 0 each round trip ends with
``WAIT replicas timeout`` on the same connection: one more command per round trip, not per
claim. A claim won in a round trip that fewer replicas acknowledged is not answered yet: it is
in doubt, and checked again every ``pipelines.RECHECK_AFTER`` seconds (its script sent again with a
``GET`` of its key, as after a lost reply) until a round trip that is acknowledged answers it:
won (the key survived with our holder, or was lost and is ours again) or lost (another replica
claimed it after the failover). The caller waits meanwhile, and its lateness is the failover's.
A claim in doubt for as long as its key lives (its TTL) fails closed: the key is gone by then,
so the claims that count the slot missed later find it free. Not sooner, even past the slot's
starting deadline: a claim that may have landed, given up while its key lives, would find the
key taken when claimed again to be counted, and the slot would be neither run nor counted; a
claim answered, however late, is counted missed by its caller if too late to run.
"""

from dataclasses import dataclass
from datetime import timedelta

import redis.exceptions


def ttl_millis(ttl: timedelta) -> int:
    """``ttl`` for ``PX``: whole milliseconds, rounded up, at least 1 (``PX 0`` is refused)."""
    return max(1, -(-ttl // timedelta(milliseconds=1)))


def during_a_failover(error: redis.exceptions.RedisError) -> bool:
    """Whether ``error`` is what a claim meets while its server fails over (or restarts): no
    connection, no reply in time, no primary named by the Sentinels, a server loading its data,
    or one that is no primary taking writes yet (a demoted primary's ``READONLY``, a replica's
    ``MASTERDOWN``, ``NOREPLICAS`` from one cut off from its replicas). It passes with the
    failover, so the claim is checked again; wrong credentials, a full memory or a bad script
    do not pass by themselves."""
    if isinstance(
        error, redis.exceptions.AuthenticationError | redis.exceptions.AuthorizationError
    ):
        return False
    return isinstance(
        error,
        redis.exceptions.ConnectionError
        | redis.exceptions.TimeoutError
        | redis.exceptions.ReadOnlyError
        | redis.exceptions.MasterDownError,
    ) or str(error).startswith("NOREPLICAS")


@dataclass(frozen=True, slots=True)
class Acknowledgement:
    """How many replicas must have a round trip's claims before they count (0: no ``WAIT``),
    and how long the primary waits for them."""

    replicas: int = 0
    timeout: timedelta = timedelta(milliseconds=500)

    def __post_init__(self) -> None:
        if self.replicas < 0:
            raise ValueError(f"replicas must be at least 0, got {self.replicas}")
        if self.timeout <= timedelta():
            raise ValueError(f"the timeout must be more than 0, got {self.timeout}")

    @property
    def timeout_ms(self) -> int:
        return ttl_millis(self.timeout)

    def shortfall(self, acknowledged: int | None) -> redis.exceptions.RedisError:
        """Why a write counts for nothing yet: fewer replicas than wanted acknowledged it
        (``acknowledged`` of them, when known)."""
        got = "" if acknowledged is None else f" ({acknowledged})"
        return redis.exceptions.RedisError(
            f"fewer than {self.replicas} replicas acknowledged the write{got} "
            f"within {self.timeout_ms} ms"
        )


NO_WAIT = Acknowledgement()
"""No ``WAIT``: a standalone Redis, whose claims no replica could acknowledge."""
