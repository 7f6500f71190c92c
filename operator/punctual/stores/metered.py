"""A run store that turns what the scheduler reports into metrics.

It records nothing else: pair it with the status store through ``stores.fanout``. The
``target`` label of run durations is the kind under the job's ``spec.target``, as the object
cache knows it (``unknown`` without a cache, or for a job it does not know).
"""

from datetime import datetime, timedelta

import prometheus_client

from punctual import metrics
from punctual.contracts import protocols, records
from punctual.kube import objects
from punctual.scheduling import overlap, slots


class MeteredStore(protocols.RunStore):
    """``protocols.RunStore`` feeding ``metrics.Metrics``."""

    def __init__(
        self, meters: metrics.Metrics, *, cache: objects.ObjectCache | None = None
    ) -> None:
        self._meters = meters
        self._cache = cache
        # Bound once: ``labels()`` takes a lock and parses its arguments on every call.
        self._runs: dict[records.RunResult, prometheus_client.Counter] = {
            result: meters.runs.labels(result=result.value)
            for result in records.RunResult
            if result.recorded
        }

    # The parameters are the RunStore protocol's; metrics carry no per-job labels. Nothing is
    # counted as a slot comes up (slot_upcoming: the protocol's no-op): the lateness is
    # measured when the run starts.
    def run_started(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        # A negative lateness (a timer that woke early, a wall-clock step) is clamped: the
        # histogram's sum would otherwise understate how late runs really are.
        lateness = max(run.started_at - run.scheduled_time, timedelta())
        self._meters.run_lateness.observe(lateness.total_seconds())
        self._meters.active_runs.inc()

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        # Missed slots never come here: they are counted by ``slots_missed``.
        self._runs[record.result].inc()
        duration = record.duration
        if duration is not None and record.result.has_duration:
            self._meters.run_duration.labels(
                target=self._target(job), result=record.result.value
            ).observe(max(duration, timedelta()).total_seconds())
        # Only records of runs reported started here: a Lost record is another replica's run.
        if record.started_at is not None and record.result is not records.RunResult.LOST:
            self._meters.active_runs.dec()

    def _target(self, job: slots.JobRef) -> str:
        kind = self._cache.target_kind(job) if self._cache is not None else None
        return kind if kind in self._meters.target_kinds else metrics.UNKNOWN_TARGET

    def slots_missed(
        self,
        job: slots.JobRef,
        *,
        count: int,
        newest: datetime,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        if count > 0 and reason.missed:
            self._meters.slots_missed.inc(count)

    def claim_skipped(self, job: slots.JobRef, *, slot: datetime) -> None:
        self._meters.claims_skipped.inc()

    def slot_overlapped(
        self,
        job: slots.JobRef,
        *,
        slot: datetime,
        policy: overlap.ConcurrencyPolicy,
    ) -> None:
        self._meters.overlaps.labels(policy=policy.value).inc()
