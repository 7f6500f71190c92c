"""The Redis key of a slot: ``punctual:slot:<slot-id>``, one key per slot, never per job.

The key both claimers write: the slot lock (``locks.redis``) and the queue target's claim and
enqueue (``targets.queue.stream``); the run leases (``locks.redis_leases``) derive theirs from it.
"""

import re

KEY_PREFIX = "punctual:slot:"

_UNSAFE_IN_KEY = re.compile(r"[\s\x00-\x1f\x7f]")


def slot_key(slot_id: str) -> str:
    """The Redis key of one slot; refuses ids that could not have come from ``slot_id()``."""
    if not slot_id or _UNSAFE_IN_KEY.search(slot_id):
        # Slot ids are built from validated Kubernetes names and a uid, so this is a bug
        # upstream; refusing it keeps odd bytes out of Redis keys and out of the logs.
        raise ValueError(f"refusing a slot id with whitespace or control characters: {slot_id!r}")
    return KEY_PREFIX + slot_id
