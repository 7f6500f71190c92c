"""Slot identity and the per-job jitter offset.

A slot id names one nominal fire instant of one object: ``<namespace>/<name>/<uid>/<unix-ms>``.
Lock keys, idempotency keys and run records all use it; jitter never changes it.
"""

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual.scheduling import timeline


@dataclass(frozen=True, slots=True)
class JobRef:
    """The identity of one ScheduledJob object (the uid tells apart re-created namesakes)."""

    namespace: str
    name: str
    uid: str


def slot_id(job: JobRef, at: datetime) -> str:
    return f"{job.namespace}/{job.name}/{job.uid}/{timeline.unix_millis(at)}"


def jitter_offset(uid: str, *, jitter: timedelta, period: timedelta) -> timedelta:
    """A fixed offset in ``[0, min(jitter, period))`` derived from the object's uid.

    Every replica derives the same offset; it is applied once per job, never drawn per tick.
    Capping below the period keeps a jittered slot before the next nominal one.
    """
    bound = min(jitter, period) // timedelta(milliseconds=1)
    if bound <= 0:
        return timedelta()
    digest = hashlib.sha256(uid.encode()).digest()
    return timedelta(milliseconds=int.from_bytes(digest[:8], "big") % bound)
