"""What the metrics say about the operator itself: its build, how long runs take by target
kind, the process and Python, the status writer's backlog and lag, the lock backend's health."""

import asyncio
import importlib.metadata
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import prometheus_client
import pytest

from metric_samples import sample
from punctual import metrics
from punctual.contracts import protocols, records
from punctual.kube import objects
from punctual.locks import health, memory
from punctual.scheduling import slots
from punctual.stores import metered as metered_store
from status_api_double import FakeStatusApi, scheduled_job, store_on

JOB = slots.JobRef(namespace="reports", name="nightly", uid="uid-1")
SLOT = datetime(2026, 1, 1, 2, 30, tzinfo=UTC)


def cache_with(target: dict[str, Any]) -> objects.ObjectCache:
    cache = objects.ObjectCache()
    body = scheduled_job()
    body["spec"] = {"every": "1s", "target": target}
    cache.remember(body)
    return cache


def ran(result: records.RunResult, seconds: float) -> records.RunRecord:
    return records.RunRecord(
        slot=SLOT,
        scheduled_time=SLOT,
        result=result,
        started_at=SLOT,
        finished_at=SLOT + timedelta(seconds=seconds),
        replica="r1",
    )


class TestBuildInfo:
    def test_is_one_with_the_installed_version_in_its_label(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        version = importlib.metadata.version("punctual-operator")

        assert sample(registry, "punctual_build_info", version=version) == 1.0


class TestProcessAndPythonCollectors:
    @pytest.mark.usefixtures("meters")
    @pytest.mark.parametrize(
        "name",
        [
            "process_resident_memory_bytes",
            "process_cpu_seconds_total",
            "process_open_fds",
            "python_info",
            "python_gc_collections_total",
        ],
    )
    def test_are_on_the_operators_registry(
        self, registry: prometheus_client.CollectorRegistry, name: str
    ) -> None:
        names = {sample.name for family in registry.collect() for sample in family.samples}

        assert name in names


class TestRunDuration:
    @pytest.mark.parametrize(
        ("target", "kind"),
        [
            ({"http": {"url": "http://example.test/"}}, "http"),
            ({"job": {"template": {}}}, "job"),
            ({"queue": {"stream": "s"}}, "queue"),
        ],
    )
    def test_is_observed_under_the_target_kind_and_result(
        self,
        registry: prometheus_client.CollectorRegistry,
        meters: metrics.Metrics,
        target: dict[str, Any],
        kind: str,
    ) -> None:
        store = metered_store.MeteredStore(meters, cache=cache_with(target))

        store.run_finished(JOB, ran(records.RunResult.FAILED, 0.3))

        labels = {"target": kind, "result": "Failed"}
        assert sample(registry, "punctual_run_duration_seconds_count", **labels) == 1.0
        assert sample(registry, "punctual_run_duration_seconds_sum", **labels) == pytest.approx(0.3)
        assert sample(registry, "punctual_run_duration_seconds_bucket", le="0.25", **labels) == 0

    def test_a_job_this_replica_does_not_know_is_of_an_unknown_target(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        metered_store.MeteredStore(meters).run_finished(JOB, ran(records.RunResult.SUCCEEDED, 1))

        labels = {"target": "unknown", "result": "Succeeded"}
        assert sample(registry, "punctual_run_duration_seconds_count", **labels) == 1.0

    @pytest.mark.parametrize("result", [records.RunResult.LOST, records.RunResult.SKIPPED_OVERLAP])
    def test_slots_that_did_not_run_here_have_no_duration(
        self,
        registry: prometheus_client.CollectorRegistry,
        meters: metrics.Metrics,
        result: records.RunResult,
    ) -> None:
        store = metered_store.MeteredStore(meters, cache=cache_with({"http": {}}))

        store.run_finished(JOB, ran(result, 5))

        assert sample(registry, "punctual_run_duration_seconds_count", target="http") is None

    @pytest.mark.usefixtures("meters")
    def test_every_kind_and_result_reads_zero_before_any_run(
        self, registry: prometheus_client.CollectorRegistry
    ) -> None:
        for kind in ("http", "job", "queue"):
            for result in ("Succeeded", "Failed", "TimedOut"):
                labels = {"target": kind, "result": result}
                assert sample(registry, "punctual_run_duration_seconds_count", **labels) == 0

    @pytest.mark.usefixtures("meters")
    def test_buckets_go_from_5_milliseconds_to_an_hour(
        self, registry: prometheus_client.CollectorRegistry
    ) -> None:
        bounds = sorted(
            float(sample.labels["le"])
            for family in registry.collect()
            if family.name == "punctual_run_duration_seconds"
            for sample in family.samples
            if sample.name.endswith("_bucket") and sample.labels["target"] == "http"
            if sample.labels["result"] == "Succeeded"
        )

        assert (bounds[0], bounds[-2]) == (0.005, 3600.0)


@pytest.mark.looptime(start=time.monotonic, noop_cycles=1)
class TestTheStatusWriterBacklogAndLag:
    async def test_read_the_pending_writes_and_the_age_of_the_oldest(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        api = FakeStatusApi(scheduled_job())
        statuses = store_on(api, wall=lambda: SLOT)
        meters.watch_status_writer(backlog=lambda: statuses.backlog, lag=lambda: statuses.lag)
        statuses.run_finished(JOB, ran(records.RunResult.SUCCEEDED, 1))

        # The writer's ticks, which measure once a second; the write is due after 5 s only.
        await statuses._flush(due_only=True)
        assert sample(registry, "punctual_status_writer_backlog") == 1.0
        assert sample(registry, "punctual_status_writer_lag_seconds") == 0.0

        await asyncio.sleep(3)
        await statuses._flush(due_only=True)
        assert sample(registry, "punctual_status_writer_lag_seconds") == pytest.approx(3, abs=0.1)

    @pytest.mark.usefixtures("meters")
    def test_read_zero_with_nothing_pending(
        self, registry: prometheus_client.CollectorRegistry
    ) -> None:
        assert sample(registry, "punctual_status_writer_backlog") == 0.0
        assert sample(registry, "punctual_status_writer_lag_seconds") == 0.0


class _Down:
    async def claim(self, claim: records.Claim) -> bool:
        raise protocols.LockUnavailableError("no answer")


@pytest.mark.looptime(start=time.monotonic, noop_cycles=1)
class TestTheLockBackendGauge:
    async def test_is_one_while_the_backend_answers(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        tracked = health.HealthTrackingLock(memory.MemoryLock(), backend="memory")
        meters.watch_lock_backend("memory", up=lambda: tracked.available)

        assert sample(registry, "punctual_lock_backend_up", backend="memory") == 1.0

    async def test_is_zero_once_a_claim_gets_no_answer(
        self, registry: prometheus_client.CollectorRegistry, meters: metrics.Metrics
    ) -> None:
        tracked = health.HealthTrackingLock(_Down(), backend="redis")
        meters.watch_lock_backend("redis", up=lambda: tracked.available)
        claim = records.Claim(
            job=JOB, slot=SLOT, slot_id="s", holder="r1:1", ttl=timedelta(seconds=1)
        )

        with pytest.raises(protocols.LockUnavailableError):
            await tracked.claim(claim)

        assert sample(registry, "punctual_lock_backend_up", backend="redis") == 0.0
