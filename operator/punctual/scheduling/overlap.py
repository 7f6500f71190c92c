"""What to do when a slot comes due while earlier runs of the same job are still going."""

import enum


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


class Action(enum.Enum):
    START = enum.auto()
    SKIP = enum.auto()
    """Skipped by the concurrency policy."""
    SKIP_AT_LIMIT = enum.auto()
    """Skipped because the job has ``max_active`` runs in flight already."""
    REPLACE = enum.auto()
    ENQUEUE = enum.auto()


def decide(
    policy: ConcurrencyPolicy, *, active: int, queued: int, max_queued: int, max_active: int
) -> Action:
    """What becomes of a slot due while ``active`` runs are in flight and ``queued`` wait.

    ``max_active`` is the platform's cap, above every policy: a run that would start alongside
    that many is skipped instead (the others' runs end, or time out, before any new one starts).
    """
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
