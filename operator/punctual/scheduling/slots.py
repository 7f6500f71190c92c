"""Slot identity and the per-job jitter offset.

A slot id names one nominal fire instant of one object: ``<namespace>/<name>/<uid>/<unix-ms>``.
Lock keys, idempotency keys and run records all use it; jitter never changes it. A run asked
for by hand (``punctual.dev/run-now``) is named by its token instead of an instant:
``<namespace>/<name>/<uid>/run-now-<token>``, so every replica claims the same key for it.
"""

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from punctual.scheduling import timeline

_MILLIS = re.compile(r"-?[0-9]{1,16}")


@dataclass(frozen=True, slots=True)
class JobRef:
    """The identity of one ScheduledJob object (the uid tells apart re-created namesakes)."""

    namespace: str
    name: str
    uid: str


def slot_id(job: JobRef, at: datetime) -> str:
    return f"{job.namespace}/{job.name}/{job.uid}/{timeline.unix_millis(at)}"


RUN_NOW_PREFIX = "run-now-"


def run_now_slot_id(job: JobRef, token: str) -> str:
    """The slot id of the run asked for with ``token``: the same on every replica."""
    return f"{job.namespace}/{job.name}/{job.uid}/{RUN_NOW_PREFIX}{token}"


def run_now_token(text: str) -> str | None:
    """The token a run-now slot id (``run_now_slot_id``) names; None for any other text."""
    parts = text.split("/")
    if len(parts) != 4 or not all(parts[:3]) or not parts[3].startswith(RUN_NOW_PREFIX):
        return None
    return parts[3].removeprefix(RUN_NOW_PREFIX) or None


def job_of(text: str) -> JobRef:
    """The job a slot id names, a run-now one's too. Raises ``ValueError`` for anything
    ``slot_id`` or ``run_now_slot_id`` could not have written."""
    if run_now_token(text) is None:
        job, _ = parse_slot_id(text)
        return job
    namespace, name, uid, _ = text.split("/")
    return JobRef(namespace=namespace, name=name, uid=uid)


def backfill_request_id(job: JobRef, token: str) -> str:
    """The key of the claim of a whole backfill request: one replica carries it out."""
    return f"{job.namespace}/{job.name}/{job.uid}/backfill-{token}"


def parse_slot_id(text: str) -> tuple[JobRef, datetime]:
    """The job and the slot a slot id names: the inverse of ``slot_id``.

    Raises ``ValueError`` for anything ``slot_id`` could not have written (namespaces, names
    and uids never contain ``/``).
    """
    parts = text.split("/")
    if len(parts) != 4 or not all(parts[:3]) or not _MILLIS.fullmatch(parts[3]):
        raise ValueError(f"not a slot id: {text!r}")
    namespace, name, uid, millis = parts
    try:
        at = timeline.EPOCH + timedelta(milliseconds=int(millis))
    except OverflowError:
        raise ValueError(f"not a slot id: {text!r}") from None
    return JobRef(namespace=namespace, name=name, uid=uid), at


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
