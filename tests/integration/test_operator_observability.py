"""Running the operator in production: its Events, its logs and its metrics, on the real
control plane.

Sixty jobs fail every second (their target refuses connections) and one succeeds, under one
replica logging JSON with a cap of 5 Event writes a second. Without aggregation that would be
60 Event writes a second; with it, each job's RunFailed is one Event, written at once and then
updated at most once a minute, and the API server sees at most 5 Event writes a second over any
10 s, give or take one in a single second (counted on its own /metrics,
``apiserver_request_total`` for events). Meanwhile every run is
one JSON log line with its fields, and /metrics serves the operations metrics.
"""

import collections
import itertools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from failure_harness import closed_port
from operator_harness import (
    Operators,
    Receiver,
    api,
    apply,
    event_writes,
    http_target,
    report,
    scheduled_job,
)

from localcluster import LocalCluster

pytest_plugins = ["operator_fixtures"]

FAILING = 60
CAP = 5
"""--event-writes-per-second."""
WINDOW = 80
"""Seconds of counting, from the moment the jobs are applied: past the first minute, so every
job's Event has been updated once."""


@dataclass(frozen=True)
class Observed:
    writes_per_second: list[int]
    """Event writes the API server answered in each second of the window."""
    busiest_ten_seconds: float
    """The highest rate of Event writes over any 10 s of the window (writes per second)."""
    events: list[dict[str, Any]]
    """The events.k8s.io/v1 Events in the namespace at the end."""
    core_events: list[dict[str, Any]]
    """The same, as core/v1 shows them (``kubectl describe``)."""
    metrics: str
    log: str


@pytest.fixture(scope="module")
def observed(
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    receiver: Receiver,
    tmp_path_factory: pytest.TempPathFactory,
) -> Observed:
    namespace = module_namespace
    refused = f"http://127.0.0.1:{closed_port()}/x"
    jobs = [
        scheduled_job(
            namespace, f"failing-{index}", {"every": "1s", "target": {"http": {"url": refused}}}
        )
        for index in range(FAILING)
    ]
    succeeding = http_target(receiver, namespace, "succeeding")
    jobs.append(scheduled_job(namespace, "succeeding", {"every": "1s", "target": succeeding}))
    with Operators(
        cluster,
        tmp_path_factory.mktemp("operators"),
        namespace=namespace,
        status_interval="5s",
        extra_args=["--log-format", "json", "--event-writes-per-second", str(CAP)],
    ) as operators:
        before = event_writes(cluster)
        apply(cluster, *jobs)
        started = time.monotonic()
        samples = [(started, before)]
        for second in range(1, WINDOW + 1):
            time.sleep(max(0.0, started + second - time.monotonic()))
            samples.append((time.monotonic(), event_writes(cluster)))
        metrics = operators["r1"].metrics()
        events = api(cluster).get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
        core_events = api(cluster).get(f"/api/v1/namespaces/{namespace}/events")
        operators.stop()
        log = operators["r1"].log()
    per_second = [after - before for (_, before), (_, after) in itertools.pairwise(samples)]
    busiest = max(
        (after - before) / (end - start)
        for index, (start, before) in enumerate(samples)
        for end, after in samples[index + 10 : index + 11]
    )
    report(
        "event writes",
        [
            f"{FAILING} jobs failing every 1s for {WINDOW}s, cap {CAP}/s: "
            f"{sum(per_second)} Event writes ({sum(per_second) / WINDOW:.2f}/s), "
            f"at most {max(per_second)} in one second, {busiest:.2f}/s over the busiest 10 s; "
            f"unaggregated: ~{FAILING}/s",
            f"{len(events['items'])} Events at the end",
        ],
    )
    return Observed(per_second, busiest, events["items"], core_events["items"], metrics, log)


def run_failed(observed: Observed) -> list[dict[str, Any]]:
    return [event for event in observed.events if event["reason"] == "RunFailed"]


class TestEvents:
    def test_are_written_at_most_at_the_cap(self, observed: Observed) -> None:
        # Give or take one write: the writer's bucket holds one tick's worth (1.25 writes), and
        # the seconds counted are the ones of this test's samples, not the writer's.
        assert max(observed.writes_per_second) <= CAP + 1
        assert observed.busiest_ten_seconds <= CAP

    def test_are_one_per_job_and_reason(self, observed: Observed) -> None:
        about = [event["regarding"]["name"] for event in run_failed(observed)]

        assert sorted(about) == sorted(f"failing-{index}" for index in range(FAILING))

    def test_cost_one_write_at_once_then_one_a_minute_each(self, observed: Observed) -> None:
        # Each Event (RunFailed, and SlotsMissed on a loaded machine) is created, then updated
        # after a minute: two writes at most in 80 s.
        # The API server counts every Event write in the cluster: the node controller's too.
        assert sum(observed.writes_per_second) <= 2 * len(observed.events) + 3

    def test_carry_the_count_of_failures_in_their_series(self, observed: Observed) -> None:
        counts = {
            event["regarding"]["name"]: (event.get("series") or {}).get("count", 1)
            for event in run_failed(observed)
        }
        failed = collections.Counter(
            line["name"]
            for line in json_lines(observed.log)
            if line["message"] == "run finished" and line["result"] == "Failed"
        )

        # Creations wait behind the cap (with a count then), updates a minute (later still when
        # the machine is loaded and the cap busy): an Event says more than one failure, and
        # never more than its job had. That the count catches up exactly is a unit test's.
        assert min(counts.values()) > 1
        assert {name for name, count in counts.items() if count > failed[name]} == set()

    def test_are_from_punctual_and_the_replica(self, observed: Observed) -> None:
        signed = {
            (event["reportingController"], event["reportingInstance"])
            for event in run_failed(observed)
        }
        shown = {
            (event["reportingComponent"], event["reportingInstance"])
            for event in observed.core_events
            if event["reason"] == "RunFailed"
        }

        assert signed == {("punctual", "r1")}
        assert shown == {("punctual", "r1")}


def json_lines(log: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.splitlines() if line.strip()]


class TestJsonLogs:
    def test_every_line_is_a_json_object_with_time_level_logger_and_message(
        self, observed: Observed
    ) -> None:
        lines = json_lines(observed.log)

        assert lines
        assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)

    def test_every_run_is_a_line_with_its_fields(self, observed: Observed) -> None:
        runs = [line for line in json_lines(observed.log) if line["message"] == "run finished"]
        succeeded = [line for line in runs if line["name"] == "succeeding"]

        assert succeeded  # how many depends on the machine's load: slots missed are lines apart
        assert all(
            {
                "namespace", "name", "slot", "result", "latenessMillis", "durationMillis",
                "replica", "attempt",
            } <= set(line)
            for line in runs
        )  # fmt: skip
        assert {line["result"] for line in succeeded} >= {"Succeeded"}
        assert {(line["replica"], line["attempt"]) for line in runs} == {("r1", 1)}

    def test_no_line_is_an_error(self, observed: Observed) -> None:
        errors = [
            line for line in json_lines(observed.log) if line["level"] in {"ERROR", "CRITICAL"}
        ]

        assert errors == []


def value(metrics: str, series: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{series} is not in /metrics")


class TestMetrics:
    def test_the_build_info_is_one_with_the_version(self, observed: Observed) -> None:
        assert value(observed.metrics, 'punctual_build_info{version="0.1.0"}') == 1.0

    def test_run_durations_are_by_target_kind_and_result(self, observed: Observed) -> None:
        count = 'punctual_run_duration_seconds_count{result="%s",target="http"}'

        assert value(observed.metrics, count % "Succeeded") > 0
        assert value(observed.metrics, count % "Failed") > 0

    def test_the_process_and_python_are_measured(self, observed: Observed) -> None:
        assert value(observed.metrics, "process_resident_memory_bytes") > 0
        assert "python_info{" in observed.metrics
        assert "python_gc_collections_total{" in observed.metrics

    def test_the_status_writer_states_its_backlog_and_lag(self, observed: Observed) -> None:
        assert value(observed.metrics, "punctual_status_writer_backlog") >= 0
        assert 0 <= value(observed.metrics, "punctual_status_writer_lag_seconds") < 30

    def test_the_lock_backend_is_up(self, observed: Observed) -> None:
        assert value(observed.metrics, 'punctual_lock_backend_up{backend="kubernetes"}') == 1.0


def test_the_jobs_were_all_scheduled(observed: Observed) -> None:
    assert value(observed.metrics, "punctual_scheduled_jobs") == FAILING + 1
