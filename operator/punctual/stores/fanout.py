"""A run store that forwards every report to several stores (status, metrics, ...)."""

import logging
from collections.abc import Callable
from datetime import datetime

from punctual.contracts import protocols, records
from punctual.scheduling import overlap, slots

logger = logging.getLogger(__name__)


class FanoutStore:
    """``protocols.RunStore`` that tells each of ``stores``, in order.

    A store that raises is logged and skipped: the others still hear about the run, and the
    scheduler, which calls stores from inside its runs, never sees a sink's failure.
    """

    def __init__(self, *stores: protocols.RunStore) -> None:
        self.stores = stores

    def slot_upcoming(self, job: slots.JobRef, *, scheduled_time: datetime) -> None:
        self._each(
            "slot_upcoming",
            job,
            lambda store: store.slot_upcoming(job, scheduled_time=scheduled_time),
        )

    def slot_armed(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        self._each("slot_armed", job, lambda store: store.slot_armed(job, run))

    def run_started(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        self._each("run_started", job, lambda store: store.run_started(job, run))

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        self._each("run_finished", job, lambda store: store.run_finished(job, record))

    def slots_missed(
        self,
        job: slots.JobRef,
        *,
        count: int,
        newest: datetime,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        self._each(
            "slots_missed",
            job,
            lambda store: store.slots_missed(job, count=count, newest=newest, reason=reason),
        )

    def slot_overlapped(
        self, job: slots.JobRef, *, slot: datetime, policy: overlap.ConcurrencyPolicy
    ) -> None:
        self._each(
            "slot_overlapped",
            job,
            lambda store: store.slot_overlapped(job, slot=slot, policy=policy),
        )

    def backfill_progressed(self, job: slots.JobRef, progress: records.BackfillProgress) -> None:
        self._each(
            "backfill_progressed", job, lambda store: store.backfill_progressed(job, progress)
        )

    def claim_skipped(self, job: slots.JobRef, *, slot: datetime) -> None:
        self._each("claim_skipped", job, lambda store: store.claim_skipped(job, slot=slot))

    def _each(
        self, what: str, job: slots.JobRef, call: Callable[[protocols.RunStore], None]
    ) -> None:
        for store in self.stores:
            try:
                call(store)
            except Exception:
                logger.exception("%s of %s/%s failed in %r", what, job.namespace, job.name, store)
