"""The operator's Prometheus metrics, on a registry of the caller's choosing.

Every metric lives on the ``CollectorRegistry`` passed in, never on the process-wide default:
tests build as many ``Metrics`` as they like, and the CLI serves exactly the one it wired.
Labels carry no namespace or name: one series per job would grow without bound. Besides ours,
the registry holds the client library's process, platform (Python) and garbage collector
collectors, as the default registry would. Every metric is listed in ``docs/metrics.md``.
"""

import importlib.metadata
from collections.abc import Callable, Iterable
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

DURATION_BUCKETS: Final = (*LATENESS_BUCKETS[LATENESS_BUCKETS.index(0.005) :], 300.0, 900.0, 3600.0)
"""Seconds, 5 ms to an hour: an HTTP call or a stream entry takes milliseconds, a batch Job
minutes to hours."""

UNKNOWN_TARGET: Final = "unknown"
"""The ``target`` of a run whose job this replica no longer knows."""

CLAIM_OUTCOMES: Final = ("won", "lost", "forgot", "error")
NOTICE_OUTCOMES: Final = ("taken", "ignored", "malformed")

CONTENT_TYPE: Final = prometheus_client.CONTENT_TYPE_LATEST
"""The Content-Type to serve ``Metrics.render()`` with."""


class Metrics:
    """The metrics of one operator process, registered on ``registry``; ``target_kinds`` are the
    values of the ``target`` label (the kinds under ``spec.target``: ``targets.kinds.NAMES``)."""

    def __init__(
        self, registry: prometheus_client.CollectorRegistry, *, target_kinds: Iterable[str]
    ) -> None:
        self.registry = registry
        self.target_kinds = frozenset(target_kinds)
        prometheus_client.ProcessCollector(registry=registry)
        prometheus_client.PlatformCollector(registry=registry)
        prometheus_client.GCCollector(registry=registry)
        self.build_info = prometheus_client.Gauge(
            "punctual_build_info",
            "Always 1; the operator's version in the label.",
            ["version"],
            registry=registry,
        )
        self.build_info.labels(version=_version()).set(1)
        self.run_lateness = prometheus_client.Histogram(
            "punctual_run_lateness_seconds",
            "How late runs started: start time minus the slot plus the job's jitter.",
            buckets=LATENESS_BUCKETS,
            registry=registry,
        )
        self.run_duration = prometheus_client.Histogram(
            "punctual_run_duration_seconds",
            "How long runs that ran here took, start to end, by target kind and result.",
            ["target", "result"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.runs = prometheus_client.Counter(
            "punctual_runs",
            "Runs recorded, by result (SkippedOverlap, SkippedInFlightLimit and SkippedQueueLimit "
            "included; missed slots are counted apart).",
            ["result"],
            registry=registry,
        )
        self.slots_missed = prometheus_client.Counter(
            "punctual_slots_missed",
            "Slots that were not run: past their starting deadline, skipped by the policy, or lost "
            "to the lock (it forgot them, or could not answer when they were due).",
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
        self.claims_skipped = prometheus_client.Counter(
            "punctual_claims_skipped",
            "Slots a backup did not claim: the job's owner told it that it had.",
            registry=registry,
        )
        self.claim_notices = prometheus_client.Counter(
            "punctual_claim_notices",
            "Messages on this replica's claim-notice channel, by outcome (taken; ignored: "
            "no job backed up here, or a slot behind or too far ahead; malformed: no notice).",
            ["outcome"],
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
        self.status_writer_backlog = prometheus_client.Gauge(
            "punctual_status_writer_backlog",
            "ScheduledJobs with a status write pending on this replica.",
            registry=registry,
        )
        self.status_writer_lag = prometheus_client.Gauge(
            "punctual_status_writer_lag_seconds",
            "Age of the oldest pending status write on this replica (0: none pending).",
            registry=registry,
        )
        self.lock_backend_up = prometheus_client.Gauge(
            "punctual_lock_backend_up",
            "1 while the slot-lock backend answers claims, 0 while it does not.",
            ["backend"],
            registry=registry,
        )
        # Series that exist from the start read 0 rather than "no data": rate() and alerts on
        # them work before the first event.
        for result in records.RunResult:
            if result.recorded:
                self.runs.labels(result=result.value)
        for outcome in NOTICE_OUTCOMES:
            self.claim_notices.labels(outcome=outcome)
        for target in sorted(self.target_kinds):
            for result in records.RunResult:
                if result.has_duration:
                    self.run_duration.labels(target=target, result=result.value)

    def claim_outcomes(self, backend: str) -> None:
        """Create the claim series of ``backend`` at 0 (see the note in ``__init__``)."""
        for outcome in CLAIM_OUTCOMES:
            self.lock_claims.labels(backend=backend, outcome=outcome)

    def watch_status_writer(
        self, *, backlog: Callable[[], float], lag: Callable[[], float]
    ) -> None:
        """Read the status writer's backlog (jobs) and lag (seconds) at every scrape."""
        self.status_writer_backlog.set_function(backlog)
        self.status_writer_lag.set_function(lag)

    def watch_lock_backend(self, backend: str, *, up: Callable[[], bool]) -> None:
        """Read whether ``backend`` answers at every scrape."""
        self.lock_backend_up.labels(backend=backend).set_function(lambda: float(up()))

    def render(self) -> bytes:
        """The registry in the Prometheus text format, to serve on ``/metrics``."""
        return prometheus_client.generate_latest(self.registry)


def _version() -> str:
    try:
        return importlib.metadata.version("punctual-operator")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree never installed
        return "unknown"
