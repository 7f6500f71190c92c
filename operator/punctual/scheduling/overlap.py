"""What to do when a slot comes due while earlier runs of the same job are still going."""

import enum
from dataclasses import dataclass
from typing import assert_never


class ConcurrencyPolicy(enum.StrEnum):
    FORBID = "Forbid"
    """Skip the new slot and count it."""
    ALLOW = "Allow"
    """Run it alongside."""
    REPLACE = "Replace"
    """Cancel the running one(s), then run it."""
    QUEUE = "Queue"
    """Start it when the running one finishes, keeping at most ``max_queued`` waiting."""


MAX_RUNS_IN_FLIGHT = 10
"""The most runs of one job in flight at once, by default (``punctual run
--max-runs-in-flight-per-job``): whatever its policy, a job whose target never answers holds
this many runs, not one more per slot."""
MAX_RUNS_IN_FLIGHT_PER_NAMESPACE = 1000
"""The most runs of one namespace's jobs in flight at once on one replica, by default (``punctual
run --max-runs-in-flight-per-namespace``): a tenant's many jobs against a target that never
answers hold this many of the replica's runs, whatever their number, and other namespaces' slots
still start; a thousand jobs of one namespace firing at the same second all run. Per replica:
with sharding, a namespace's jobs are spread over the replicas, each holding up to this many of
its runs."""
MAX_QUEUED_RUNS_PER_NAMESPACE = 1000
"""The most runs of one namespace's jobs queued at once on one replica (``concurrencyPolicy:
Queue``), by default (``punctual run --max-queued-runs-per-namespace``): each job's queue is
bounded by its ``maxQueued``, but a tenant's thousands of jobs each queueing behind a target
that never answers would hold the replica's memory and, once the target answers, start a
flood that delays every other namespace's runs. Per replica, as the runs in flight."""


class Action(enum.Enum):
    START = enum.auto()
    SKIP = enum.auto()
    """Skipped by the concurrency policy."""
    SKIP_AT_LIMIT = enum.auto()
    """Skipped because the job has ``max_active`` runs in flight already."""
    SKIP_AT_NAMESPACE_LIMIT = enum.auto()
    """Skipped because the job's namespace has ``max_namespace_active`` runs in flight here."""
    SKIP_AT_NAMESPACE_QUEUE_LIMIT = enum.auto()
    """Skipped instead of queued because the job's namespace has ``max_namespace_queued`` runs
    queued here."""
    REPLACE = enum.auto()
    ENQUEUE = enum.auto()


def decide(
    policy: ConcurrencyPolicy,
    *,
    active: int,
    active_here: int,
    queued: int,
    max_queued: int,
    max_active: int,
    namespace_active: int,
    max_namespace_active: int,
    namespace_queued: int,
    max_namespace_queued: int,
) -> Action:
    """What becomes of a slot due while ``active`` runs of its job are in flight (``active_here``
    of them started by this replica) and ``queued`` wait, and ``namespace_active`` runs of its
    namespace's jobs are in flight on this replica and ``namespace_queued`` queued there.

    ``max_active`` and ``max_namespace_active`` are the platform's caps, above every policy: a
    run that would start alongside that many of the job's, or add one more to its namespace's,
    is skipped instead (the others' runs end, or time out, before any new one starts). The job's
    own cap is named first when both are reached. A replacement that cancels runs here takes
    their place in the namespace, so it is skipped only when the runs it replaces are elsewhere;
    a queued slot waits, and starts in the place its job's run leaves (or, behind runs elsewhere,
    once its namespace has room). A slot the policy would queue while its namespace has
    ``max_namespace_queued`` runs queued here is skipped: the queue of one job is bounded by its
    own ``max_queued``, the queues of a namespace's jobs together by the platform.
    """
    action = _by_policy(
        policy, active=active, queued=queued, max_queued=max_queued, max_active=max_active
    )
    adds_one_here = action is Action.START or (action is Action.REPLACE and active_here == 0)
    if adds_one_here and namespace_active >= max_namespace_active:
        return Action.SKIP_AT_NAMESPACE_LIMIT
    if action is Action.ENQUEUE and namespace_queued >= max_namespace_queued:
        return Action.SKIP_AT_NAMESPACE_QUEUE_LIMIT
    return action


def _by_policy(
    policy: ConcurrencyPolicy, *, active: int, queued: int, max_queued: int, max_active: int
) -> Action:
    if active == 0 and queued == 0:
        return Action.START
    match policy:
        case ConcurrencyPolicy.ALLOW:
            return Action.START if active < max_active else Action.SKIP_AT_LIMIT
        case ConcurrencyPolicy.FORBID:
            return Action.SKIP
        case ConcurrencyPolicy.REPLACE:
            return Action.REPLACE
        case ConcurrencyPolicy.QUEUE:
            return Action.ENQUEUE if queued < max_queued else Action.SKIP


@dataclass(frozen=True, slots=True, kw_only=True)
class InFlight:
    """What a run meets as it is admitted: its job's runs in flight on this replica and those
    only its target sees (another replica's, an earlier process's), the runs queued, and the
    runs of its namespace on this replica (``replica``): in flight (``namespace_here``) and
    queued (``namespace_queued``)."""

    here: int
    elsewhere: int = 0
    queued: int = 0
    namespace: str
    namespace_here: int
    namespace_queued: int
    replica: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """The job's queue and the platform's caps (``decide``)."""

    max_queued: int
    max_active: int
    max_namespace_active: int
    max_namespace_queued: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What becomes of a run, and what is said of it."""

    action: Action
    overlapped: bool
    """Runs of the job were in flight or queued: the policy had something to decide."""
    why_skipped: str = ""
    """For a skip, the message its record carries."""


def admit(policy: ConcurrencyPolicy, meets: InFlight, limits: Limits) -> Verdict:
    """The verdict on a run of a job under ``policy`` that ``meets`` these runs: one table, from
    what runs to what to do, as Temporal's scheduler decides on a buffered start."""
    active = meets.here + meets.elsewhere
    action = decide(
        policy,
        active=active,
        active_here=meets.here,
        queued=meets.queued,
        max_queued=limits.max_queued,
        max_active=limits.max_active,
        namespace_active=meets.namespace_here,
        max_namespace_active=limits.max_namespace_active,
        namespace_queued=meets.namespace_queued,
        max_namespace_queued=limits.max_namespace_queued,
    )
    overlapped = bool(active or meets.queued)
    match action:
        case Action.SKIP:
            why = f"{active} run(s) active, concurrencyPolicy {policy}"
        case Action.SKIP_AT_LIMIT:
            why = f"{active} run(s) active, the most the operator allows one job"
        case Action.SKIP_AT_NAMESPACE_LIMIT:
            why = (
                f"{meets.namespace_here} run(s) of namespace {meets.namespace} active on "
                f"replica {meets.replica}, the most the operator allows one namespace"
            )
        case Action.SKIP_AT_NAMESPACE_QUEUE_LIMIT:
            why = (
                f"{meets.namespace_queued} run(s) of namespace {meets.namespace} queued on "
                f"replica {meets.replica}, the most the operator allows one namespace"
            )
        case Action.START | Action.REPLACE | Action.ENQUEUE:
            why = ""
        case _:
            assert_never(action)
    return Verdict(action=action, overlapped=overlapped, why_skipped=why)
