"""The operator's Prometheus metrics (design §7), on a registry of the caller's choosing.

Every metric lives on the ``CollectorRegistry`` passed in, never on the process-wide default:
tests build as many ``Metrics`` as they like, and the CLI serves exactly the one it wired.
Labels carry no namespace or name: one series per job would grow without bound.
"""

from typing import Final

import prometheus_client

from punctual.contracts import records

LATENESS_BUCKETS: Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
"""Seconds, 0.5 ms to 60 s: on time is a few milliseconds; a minute late is an incident."""

CLAIM_OUTCOMES: Final = ("won", "lost", "error")
RECORDED_RESULTS: Final = tuple(
    result for result in records.RunResult if result is not records.RunResult.MISSED
)
"""The results a run record can carry; missed slots are reported as counts, not records."""

CONTENT_TYPE: Final = prometheus_client.CONTENT_TYPE_LATEST
"""The Content-Type to serve ``Metrics.render()`` with."""


class Metrics:
    """The metrics of one operator process, registered on ``registry``."""

    def __init__(self, registry: prometheus_client.CollectorRegistry) -> None:
        self.registry = registry
        self.run_lateness = prometheus_client.Histogram(
            "punctual_run_lateness_seconds",
            "How late runs started: start time minus the slot plus the job's jitter.",
            buckets=LATENESS_BUCKETS,
            registry=registry,
        )
        self.runs = prometheus_client.Counter(
            "punctual_runs",
            "Runs recorded, by result (SkippedOverlap included; missed slots are counted apart).",
            ["result"],
            registry=registry,
        )
        self.slots_missed = prometheus_client.Counter(
            "punctual_slots_missed",
            "Slots that were not run: past their starting deadline or skipped by the policy.",
            registry=registry,
        )
        self.overlaps = prometheus_client.Counter(
            "punctual_overlaps",
            "Slots that came due while a run of the same job was active, by concurrency policy.",
            ["policy"],
            registry=registry,
        )
        self.lock_claims = prometheus_client.Counter(
            "punctual_lock_claims",
            "Slot claims by lock backend and outcome (won, lost, or error: no answer).",
            ["backend", "outcome"],
            registry=registry,
        )
        self.active_runs = prometheus_client.Gauge(
            "punctual_active_runs",
            "Runs in flight on this replica.",
            registry=registry,
        )
        self.scheduled_jobs = prometheus_client.Gauge(
            "punctual_scheduled_jobs",
            "ScheduledJobs this replica is scheduling.",
            registry=registry,
        )
        # Series that exist from the start read 0 rather than "no data": rate() and alerts on
        # them work before the first event.
        for result in RECORDED_RESULTS:
            self.runs.labels(result=result.value)

    def claim_outcomes(self, backend: str) -> None:
        """Create the claim series of ``backend`` at 0 (see the note in ``__init__``)."""
        for outcome in CLAIM_OUTCOMES:
            self.lock_claims.labels(backend=backend, outcome=outcome)

    def render(self) -> bytes:
        """The registry in the Prometheus text format, to serve on ``/metrics``."""
        return prometheus_client.generate_latest(self.registry)
