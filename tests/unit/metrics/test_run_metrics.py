"""What the metrics say about runs, slots and claims (docs/metrics.md), read back from the
registry."""

import asyncio
import time
from datetime import UTC, datetime, timedelta

import prometheus_client
import pytest

from metric_samples import sample
from punctual import metrics
from punctual.contracts import records
from punctual.locks import memory, metered
from punctual.runtime import supervisor
from punctual.scheduling import interval, overlap, plans, slots
from punctual.stores import fanout
from punctual.stores import memory as memory_store
from punctual.stores import metered as metered_store
from punctual.targets import kinds

JOB = slots.JobRef(namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-00000000abcd")
SLOT = datetime(2026, 1, 1, 2, 30, tzinfo=UTC)
MS = timedelta(milliseconds=1)


def started(lateness: timedelta, *, slot: datetime = SLOT) -> records.ActiveRun:
    return records.ActiveRun(
        slot=slot, scheduled_time=slot, started_at=slot + lateness, replica="replica-a"
    )


def finished(result: records.RunResult, *, ran: bool = True) -> records.RunRecord:
    return records.RunRecord(
        slot=SLOT,
        scheduled_time=SLOT,
        result=result,
        started_at=SLOT if ran else None,
        finished_at=SLOT + timedelta(seconds=1) if ran else None,
        replica="replica-a",
    )


class TestTheMetricsAreTheDesignedOnes:
    def test_every_series_is_exposed_with_its_designed_name(self, meters: metrics.Metrics) -> None:
        meters.claim_outcomes("redis")

        text = meters.render().decode()

        for name in (
            "punctual_run_lateness_seconds_bucket",
            "punctual_runs_total",
            "punctual_slots_missed_total",
            "punctual_overlaps_total",
            'punctual_lock_claims_total{backend="redis",outcome="won"}',
            "punctual_active_runs",
            "punctual_scheduled_jobs",
        ):
            assert name in text

    @pytest.mark.usefixtures("meters")
    def test_lateness_buckets_go_from_half_a_millisecond_to_a_minute(
        self, registry: prometheus_client.CollectorRegistry
    ) -> None:
        bounds = [
            sample.labels["le"]
            for family in registry.collect()
            if family.name == "punctual_run_lateness_seconds"
            for sample in family.samples
            if sample.name.endswith("_bucket")
        ]

        assert bounds[0] == "0.0005"
        assert bounds[-2:] == ["60.0", "+Inf"]

    @pytest.mark.usefixtures("meters")
    def test_run_results_read_zero_before_any_run(
        self, registry: prometheus_client.CollectorRegistry
    ) -> None:
        for result in ("Succeeded", "Failed", "TimedOut", "SkippedOverlap"):
            assert sample(registry, "punctual_runs_total", result=result) == 0.0

    def test_two_registries_do_not_collide(self) -> None:
        metrics.Metrics(prometheus_client.CollectorRegistry(), target_kinds=kinds.NAMES)
        metrics.Metrics(prometheus_client.CollectorRegistry(), target_kinds=kinds.NAMES)

    def test_the_render_is_the_prometheus_text_format(self, meters: metrics.Metrics) -> None:
        assert metrics.CONTENT_TYPE.startswith("text/plain")
        assert b"# TYPE punctual_active_runs gauge" in meters.render()


class TestLatenessIsMeasuredAtTheStart:
    def test_a_start_is_observed_as_its_lateness(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        store = metered_store.MeteredStore(meters)

        store.run_started(JOB, started(3 * MS))

        assert sample(registry, "punctual_run_lateness_seconds_count") == 1.0
        assert sample(registry, "punctual_run_lateness_seconds_sum") == pytest.approx(0.003)
        assert sample(registry, "punctual_run_lateness_seconds_bucket", le="0.0025") == 0.0
        assert sample(registry, "punctual_run_lateness_seconds_bucket", le="0.005") == 1.0

    def test_lateness_is_measured_from_the_jittered_time(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        jitter = timedelta(seconds=17)
        run = records.ActiveRun(
            slot=SLOT,
            scheduled_time=SLOT + jitter,
            started_at=SLOT + jitter + 2 * MS,
            replica="replica-a",
        )

        metered_store.MeteredStore(meters).run_started(JOB, run)

        assert sample(registry, "punctual_run_lateness_seconds_sum") == pytest.approx(0.002)

    def test_an_early_start_counts_as_on_time(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        metered_store.MeteredStore(meters).run_started(JOB, started(-5 * MS))

        assert sample(registry, "punctual_run_lateness_seconds_sum") == 0.0
        assert sample(registry, "punctual_run_lateness_seconds_bucket", le="0.0005") == 1.0


class TestRunsAreCountedByResult:
    def test_a_finished_run_is_counted_under_its_result(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        store = metered_store.MeteredStore(meters)

        store.run_finished(JOB, finished(records.RunResult.SUCCEEDED))
        store.run_finished(JOB, finished(records.RunResult.SUCCEEDED))
        store.run_finished(JOB, finished(records.RunResult.TIMED_OUT))

        assert sample(registry, "punctual_runs_total", result="Succeeded") == 2.0
        assert sample(registry, "punctual_runs_total", result="TimedOut") == 1.0
        assert sample(registry, "punctual_runs_total", result="Failed") == 0.0

    def test_missed_slots_are_counted_by_how_many(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        store = metered_store.MeteredStore(meters)

        store.slots_missed(JOB, count=3, newest=SLOT)
        store.slots_missed(JOB, count=2, newest=SLOT)

        assert sample(registry, "punctual_slots_missed_total") == 5.0

    def test_slots_passed_while_suspended_are_not_missed(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        store = metered_store.MeteredStore(meters)

        store.slots_missed(JOB, count=3, newest=SLOT, reason=records.MissedReason.SUSPENDED)

        assert sample(registry, "punctual_slots_missed_total") == 0.0


class TestActiveRunsFollowStartsAndEnds:
    def test_a_run_is_active_from_its_start_to_its_end(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        store = metered_store.MeteredStore(meters)

        store.run_started(JOB, started(MS))
        store.run_started(JOB, started(MS))
        assert sample(registry, "punctual_active_runs") == 2.0

        store.run_finished(JOB, finished(records.RunResult.FAILED))
        assert sample(registry, "punctual_active_runs") == 1.0

    def test_a_skipped_slot_never_was_active(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        store = metered_store.MeteredStore(meters)
        store.run_started(JOB, started(MS))

        store.run_finished(JOB, finished(records.RunResult.SKIPPED_OVERLAP, ran=False))

        assert sample(registry, "punctual_active_runs") == 1.0


class TestOverlapsAreCountedByPolicy:
    @pytest.mark.parametrize("policy", list(overlap.ConcurrencyPolicy), ids=str)
    def test_every_overlap_counts_under_the_policy_that_decided_it(
        self,
        registry: prometheus_client.CollectorRegistry,
        meters: metrics.Metrics,
        policy: overlap.ConcurrencyPolicy,
    ) -> None:
        store = metered_store.MeteredStore(meters)

        store.slot_overlapped(JOB, slot=SLOT, policy=policy)

        assert sample(registry, "punctual_overlaps_total", policy=policy.value) == 1.0

    def test_a_skipped_slot_is_a_run_result_not_a_second_overlap(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        store = metered_store.MeteredStore(meters)

        store.run_finished(JOB, finished(records.RunResult.SKIPPED_OVERLAP, ran=False))

        assert sample(registry, "punctual_runs_total", result="SkippedOverlap") == 1.0
        assert sample(registry, "punctual_overlaps_total", policy="Forbid") is None


class TestTheOperatorGaugesAreSettable:
    def test_scheduled_jobs_is_what_it_was_last_set_to(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        meters.scheduled_jobs.set(12)
        meters.scheduled_jobs.set(11)

        assert sample(registry, "punctual_scheduled_jobs") == 11.0


@pytest.mark.looptime(start=time.monotonic, end=lambda: time.monotonic() + 3600)
class TestTheSchedulerFeedsTheMetrics:
    """A real supervisor, slot loop and locks, on the fake loop clock."""

    async def test_runs_overlaps_claims_and_active_runs_add_up(
        self, meters: metrics.Metrics, registry: prometheus_client.CollectorRegistry
    ) -> None:
        origin, base = asyncio.get_running_loop().time(), datetime(2026, 1, 1, tzinfo=UTC)

        def wall() -> datetime:
            return base + timedelta(seconds=asyncio.get_running_loop().time() - origin)

        async def slow(context: records.RunContext) -> records.Outcome:
            await asyncio.sleep(1.5)  # every other slot of a 1 s schedule finds it running
            return records.Outcome(succeeded=True, message="done")

        status = memory_store.MemoryStore()
        running = supervisor.Supervisor(
            wall=wall,
            lock=metered.MeteredLock(memory.MemoryLock(), meters=meters, backend="memory"),
            store=fanout.FanoutStore(status, metered_store.MeteredStore(meters)),
            replica="replica-a",
        )
        plan = plans.JobPlan(
            schedule=interval.IntervalSchedule(every=timedelta(seconds=1)),
            concurrency=overlap.ConcurrencyPolicy.FORBID,
        )
        try:
            running.arm(JOB, plan, slow, resume_after=base)
            await asyncio.sleep(10.25)
            active = len(running.active_slots(JOB))
        finally:
            await running.shutdown()

        history = status.jobs[JOB]
        succeeded = sum(1 for r in history.finished if r.result is records.RunResult.SUCCEEDED)
        skipped = sum(1 for r in history.finished if r.result is records.RunResult.SKIPPED_OVERLAP)
        assert succeeded >= 4
        assert skipped >= 4
        assert sample(registry, "punctual_runs_total", result="Succeeded") == succeeded
        assert sample(registry, "punctual_overlaps_total", policy="Forbid") == skipped
        assert sample(registry, "punctual_lock_claims_total", backend="memory", outcome="won") == (
            succeeded + skipped + active
        )
        assert sample(registry, "punctual_run_lateness_seconds_count") == len(history.started)
        assert sample(registry, "punctual_run_lateness_seconds_bucket", le="0.0005") == len(
            history.started
        )
        # Shutdown cancelled the run in flight: it was recorded, and is no longer active.
        assert sample(registry, "punctual_active_runs") == 0.0
