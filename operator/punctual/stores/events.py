"""A run store that tells users, as Warning Events on the ScheduledJob, what went wrong.

A run that failed, timed out or was lost raises ``Run<result>`` (``RunFailed``,
``RunTimedOut``, ``RunLost``) with the slot and the run's message; slots given up raise
``SlotsMissed`` with the words of the status's Missed record. Nothing else is said: successes
and skips show in status and metrics. Each report posts at most one Event, with no limit of its
own (there was none when the status writer posted them): kopf's poster queues it and posts it
in the background, one worker per object, so the scheduler never waits on it.

Pair it with the status and metrics stores through ``stores.fanout``.
"""

from datetime import datetime

from punctual.contracts import protocols, records
from punctual.kube import events, objects
from punctual.scheduling import slots, timeline
from punctual.stores.status import ledger

_WARNED = {records.RunResult.FAILED, records.RunResult.TIMED_OUT, records.RunResult.LOST}


class EventStore(protocols.RunStore):
    """``protocols.RunStore`` posting Warning Events on the body ``cache`` knows of each job."""

    def __init__(self, *, cache: objects.ObjectCache) -> None:
        self._cache = cache

    # Other reports say nothing worth an Event: the protocol's no-ops. Overlaps show in status
    # and metrics.
    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        if record.result in _WARNED:
            self._warn(
                job,
                reason=f"Run{record.result}",
                message=f"slot {timeline.rfc3339(record.slot)}: {record.message}",
            )

    def slots_missed(self, job: slots.JobRef, *, count: int, newest: datetime) -> None:
        self._warn(
            job, reason="SlotsMissed", message=ledger.missed_message(count=count, newest=newest)
        )

    def _warn(self, job: slots.JobRef, *, reason: str, message: str) -> None:
        # An Event needs the object it is about; one this replica never saw (or forgot) gets none.
        body = self._cache.get(job)
        if body is not None:
            events.warn(body, reason=reason, message=message)
