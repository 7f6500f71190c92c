"""The platform's bounds on one job (``spec_bounds.Bounds``, ``punctual run``'s flags): a spec at a
bound is accepted, one just past it is refused naming the field users wrote and the flag that
sets the bound; the cap on runs in flight reaches the plan."""

import json
from datetime import timedelta
from typing import Any

import pytest

from punctual.api import planning, spec_bounds, spec_parsing
from punctual.scheduling import overlap, plans
from punctual.scheduling.errors import InvalidSpecError

UID = "0b6f2c1e-8d2a-4c7e-9a51-3f1d2e4b5a69"
HTTP = {"http": {"url": "http://report-svc.reports.svc:8080/run"}}
QUEUE = {"queue": {"stream": "reports:jobs"}}
JOB_SPEC = {"template": {"spec": {"containers": [{"name": "report", "image": "busybox"}]}}}


def plan(bounds: spec_bounds.Bounds = spec_bounds.DEFAULT_BOUNDS, **spec: Any) -> plans.JobPlan:
    raw = {"target": HTTP, **({} if "schedule" in spec else {"every": "1m"}), **spec}
    return planning.plan_for(spec_parsing.parse_spec(raw), uid=UID, bounds=bounds)


def refused(
    bounds: spec_bounds.Bounds = spec_bounds.DEFAULT_BOUNDS, **spec: Any
) -> InvalidSpecError:
    with pytest.raises(InvalidSpecError) as caught:
        plan(bounds, **spec)
    return caught.value


def json_size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


class TestTheMinimumPeriod:
    @pytest.mark.parametrize(
        ("min_period", "spec"),
        [
            pytest.param(timedelta(seconds=1), {"every": "1s"}, id="every-at-the-default"),
            pytest.param(
                timedelta(seconds=1),
                {"schedule": "* * * * * *"},
                id="cron-every-second-at-the-default",
            ),
            pytest.param(
                timedelta(seconds=2), {"schedule": "*/2 * * * * *"}, id="cron-seconds-at-a-bound"
            ),
            pytest.param(
                timedelta(milliseconds=1), {"every": "1ms"}, id="sub-second-where-allowed"
            ),
        ],
    )
    def test_a_schedule_at_the_bound_is_accepted(
        self, min_period: timedelta, spec: dict[str, Any]
    ) -> None:
        planned = plan(spec_bounds.Bounds(min_period=min_period), **spec)

        assert planned.schedule.shortest_period == min_period

    @pytest.mark.parametrize(
        ("min_period", "spec", "field", "apart"),
        [
            pytest.param(timedelta(seconds=1), {"every": "999ms"}, "every", "999ms", id="every"),
            pytest.param(timedelta(seconds=1), {"every": "1ms"}, "every", "1ms", id="every-1ms"),
            pytest.param(
                timedelta(seconds=2), {"schedule": "* * * * * *"}, "schedule", "1s", id="cron"
            ),
            pytest.param(
                timedelta(minutes=1),
                {"schedule": "0,30 * * * * *"},
                "schedule",
                "30s",
                id="cron-seconds-firing-twice-a-minute",
            ),
        ],
    )
    def test_one_closer_is_refused_naming_its_field(
        self, min_period: timedelta, spec: dict[str, Any], field: str, apart: str
    ) -> None:
        error = refused(spec_bounds.Bounds(min_period=min_period), **spec)

        assert error.field == f"spec.{field}"
        assert error.problem.startswith(f"slots {apart} apart: ")
        assert "--min-period" in error.problem

    def test_the_default_is_one_second(self) -> None:
        assert spec_bounds.DEFAULT_BOUNDS.min_period == timedelta(seconds=1)


class TestTheMaximumTimeout:
    def test_a_timeout_at_the_bound_is_accepted(self) -> None:
        assert plan(timeout="24h").timeout == timedelta(hours=24)

    def test_one_millisecond_more_is_refused_naming_spec_timeout(self) -> None:
        error = refused(timeout="24h1ms")

        assert error.field == "spec.timeout"
        assert "24h1ms is longer than the 24h" in error.problem
        assert "--max-timeout" in error.problem

    def test_the_job_target_s_margin_is_not_counted(self) -> None:
        job = {"job": {"template": {"spec": JOB_SPEC}}}
        bounds = spec_bounds.Bounds(max_timeout=timedelta(minutes=10))

        assert plan(bounds, timeout="10m", target=job).timeout > timedelta(minutes=10)


class TestQueuedRuns:
    def test_max_queued_at_the_bound_is_accepted(self) -> None:
        assert plan(spec_bounds.Bounds(max_queued=5), maxQueued=5).max_queued == 5

    def test_one_more_is_refused_naming_spec_max_queued(self) -> None:
        error = refused(spec_bounds.Bounds(max_queued=5), maxQueued=6)

        assert error.field == "spec.maxQueued"
        assert "--max-queued-runs-per-job" in error.problem

    def test_the_default_admits_what_the_api_admits(self) -> None:
        assert plan(maxQueued=100).max_queued == 100


class TestRunsInFlight:
    def test_the_platform_s_cap_is_in_the_plan(self) -> None:
        assert plan(spec_bounds.Bounds(max_runs_in_flight=3)).max_runs_in_flight == 3

    def test_the_default_is_ten(self) -> None:
        assert plan().max_runs_in_flight == overlap.MAX_RUNS_IN_FLIGHT == 10


def job_target(template: dict[str, Any]) -> dict[str, Any]:
    return {"job": {"template": template}}


TEMPLATE = {"metadata": {"labels": {"team": "reports"}}, "spec": JOB_SPEC}
PAYLOAD = {"report": "daily", "note": "été"}
BODY = '{"report": "été"}'
HEADERS = {"X-Team": "reports", "X-Note": "été"}
HEADERS_SIZE = len("X-Team: reports\r\nX-Note: été\r\n".encode())
BROKER = {"brokerFrom": {"secretName": "broker", "key": "url"}}
TASK_ARGUMENTS = {"args": ["été"], "kwargs": {"region": "eu"}}
TASKIQ_LABELS = {"team": "reports, été", "max_retries": 3}
TASKIQ = {"task": "m:f", "brokerClass": "ListQueueBroker", "labels": TASKIQ_LABELS}


class TestSizes:
    @pytest.mark.parametrize(
        ("bound", "size", "target", "field", "flag"),
        [
            pytest.param(
                "max_job_template_bytes",
                json_size(TEMPLATE),
                job_target(TEMPLATE),
                "job.template",
                "--max-job-template-bytes",
                id="job-template-as-json",
            ),
            pytest.param(
                "max_http_body_bytes",
                len(BODY.encode()),
                {"http": {**HTTP["http"], "body": BODY}},
                "http.body",
                "--max-http-body-bytes",
                id="http-body-in-utf8-bytes",
            ),
            pytest.param(
                "max_http_headers_bytes",
                HEADERS_SIZE,
                {"http": {**HTTP["http"], "headers": HEADERS}},
                "http.headers",
                "--max-http-headers-bytes",
                id="http-headers-as-sent",
            ),
            pytest.param(
                "max_queue_payload_bytes",
                json_size(PAYLOAD),
                {"queue": {**QUEUE["queue"], "payload": PAYLOAD}},
                "queue.payload",
                "--max-queue-payload-bytes",
                id="queue-payload-as-json",
            ),
            pytest.param(
                "max_queue_payload_bytes",
                json_size(TASK_ARGUMENTS),
                {"queue": {"arq": {"function": "f", "arguments": TASK_ARGUMENTS}, **BROKER}},
                "queue.arq.arguments",
                "--max-queue-payload-bytes",
                id="task-arguments-as-json",
            ),
            pytest.param(
                "max_queue_payload_bytes",
                json_size(TASKIQ_LABELS),
                {"queue": {"taskiq": TASKIQ, **BROKER}},
                "queue.taskiq.labels",
                "--max-queue-payload-bytes",
                id="taskiq-labels-as-json",
            ),
        ],
    )
    def test_at_the_bound_accepted_one_byte_less_refused_naming_the_field(
        self, bound: str, size: int, target: dict[str, Any], field: str, flag: str
    ) -> None:
        plan(spec_bounds.Bounds(**{bound: size}), target=target)

        error = refused(spec_bounds.Bounds(**{bound: size - 1}), target=target)

        assert error.field == f"spec.target.{field}"
        assert error.problem == (
            f"{size} bytes, more than the {size - 1} this operator allows (punctual run {flag})"
        )

    def test_a_lone_surrogate_is_measured_not_an_error(self) -> None:
        body = json.loads('"\\ud800"')

        error = refused(
            spec_bounds.Bounds(max_http_body_bytes=2),
            target={"http": {**HTTP["http"], "body": body}},
        )

        assert error.field == "spec.target.http.body"

    @pytest.mark.parametrize(
        ("bound", "default"),
        [
            ("max_job_template_bytes", 65536),
            ("max_http_body_bytes", 65536),
            ("max_http_headers_bytes", 16384),
            ("max_queue_payload_bytes", 65536),
        ],
    )
    def test_the_defaults(self, bound: str, default: int) -> None:
        assert getattr(spec_bounds.DEFAULT_BOUNDS, bound) == default


class TestTheBoundsThemselves:
    @pytest.mark.parametrize(
        ("bounds", "flag"),
        [
            ({"min_period": timedelta()}, "--min-period"),
            ({"max_timeout": timedelta()}, "--max-timeout"),
            ({"max_runs_in_flight": 0}, "--max-runs-in-flight-per-job"),
            ({"max_queued": 0}, "--max-queued-runs-per-job"),
            ({"max_job_template_bytes": 0}, "--max-job-template-bytes"),
            ({"max_http_body_bytes": 0}, "--max-http-body-bytes"),
            ({"max_http_headers_bytes": 0}, "--max-http-headers-bytes"),
            ({"max_queue_payload_bytes": 0}, "--max-queue-payload-bytes"),
        ],
    )
    def test_a_bound_no_job_could_meet_is_refused_naming_its_flag(
        self, bounds: dict[str, Any], flag: str
    ) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            spec_bounds.Bounds(**bounds)

        assert caught.value.field == flag

    def test_the_commands_that_cannot_know_the_flags_check_the_api_s_limits_only(self) -> None:
        slow_and_fast = plan(spec_bounds.UNBOUNDED, every="1ms", timeout="9000h", maxQueued=100)

        assert slow_and_fast.timeout == timedelta(hours=9000)
