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


class Action(enum.Enum):
    START = enum.auto()
    SKIP = enum.auto()
    REPLACE = enum.auto()
    ENQUEUE = enum.auto()


def decide(policy: ConcurrencyPolicy, *, active: int, queued: int, max_queued: int) -> Action:
    if active == 0 and queued == 0:
        return Action.START
    match policy:
        case ConcurrencyPolicy.ALLOW:
            return Action.START
        case ConcurrencyPolicy.FORBID:
            return Action.SKIP
        case ConcurrencyPolicy.REPLACE:
            return Action.REPLACE
        case ConcurrencyPolicy.QUEUE:
            return Action.ENQUEUE if queued < max_queued else Action.SKIP
