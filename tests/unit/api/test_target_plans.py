"""What the target kind changes in a plan: the job target's loop timeout and shortest period,
and the queue target's stream name, in a charset safe in any Redis key, log line and ACL
pattern (the key it becomes is ``redis_io.namespace_keys``': tests/unit/locks)."""

from datetime import timedelta
from typing import Any

import pytest

from punctual.api import planning, spec_bounds, spec_parsing
from punctual.scheduling.errors import InvalidSpecError

UID = "0b6f2c1e-8d2a-4c7e-9a51-3f1d2e4b5a69"
JOB = {"job": {"template": {"spec": {"template": {"spec": {"containers": []}}}}}}
QUEUE = {"queue": {"stream": "reports:jobs"}}
HTTP = {"http": {"url": "http://report-svc.reports.svc:8080/run"}}


def plan(target: dict[str, Any], **fields: Any) -> Any:
    raw = {"every": "1m", "target": target, **fields}
    return planning.plan_for(spec_parsing.parse_spec(raw), uid=UID)


class TestTheLoopsTimeout:
    def test_is_the_timeout_plus_a_margin_for_the_job_target(self) -> None:
        # The Job's activeDeadlineSeconds (the timeout) fails it first; the loop's own
        # timeout is the fallback.
        assert plan(JOB, timeout="10m").timeout == timedelta(minutes=10, seconds=30)
        assert timedelta(seconds=30) == planning.JOB_TIMEOUT_MARGIN

    @pytest.mark.parametrize("target", [HTTP, QUEUE])
    def test_is_the_timeout_for_the_other_targets(self, target: dict[str, Any]) -> None:
        assert plan(target, timeout="10m").timeout == timedelta(minutes=10)

    def test_the_lock_outlives_the_longer_timeout(self) -> None:
        assert plan(JOB, timeout="10m").lock_ttl == timedelta(minutes=11, seconds=30)


class TestTheJobTargetsShortestPeriod:
    def test_one_second_is_enough(self) -> None:
        assert plan(JOB, every="1s").schedule.shortest_period == timedelta(seconds=1)

    def test_less_is_refused_on_every(self) -> None:
        with pytest.raises(InvalidSpecError, match=r"^spec\.every: the job target needs slots"):
            plan(JOB, every="500ms")

    def test_other_targets_may_fire_more_often_where_the_platform_allows_it(self) -> None:
        bounds = spec_bounds.Bounds(min_period=timedelta(milliseconds=100))
        planned = planning.plan_for(
            spec_parsing.parse_spec({"every": "250ms", "target": QUEUE}), uid=UID, bounds=bounds
        )
        assert planned.schedule.shortest_period == timedelta(milliseconds=250)


class TestTheQueueTargetsStreamName:
    @pytest.mark.parametrize(
        "stream",
        [
            pytest.param("reports", id="a-word"),
            pytest.param("reports:jobs", id="colons"),
            pytest.param("reports.jobs_v2-eu", id="dots-underscores-dashes"),
            pytest.param("0", id="one-digit"),
            pytest.param("punctual:runs", id="the-name-of-an-operator-key-is-only-a-name"),
            pytest.param("s" * 128, id="128-characters"),
        ],
    )
    def test_is_taken_in_the_safe_charset(self, stream: str) -> None:
        plan({"queue": {"stream": stream}})  # no InvalidSpecError

    @pytest.mark.parametrize(
        ("stream", "problem"),
        [
            pytest.param("", "at least 1 character", id="empty"),
            pytest.param("s" * 129, "at most 128 characters", id="129-characters"),
            pytest.param(":jobs", "is not a stream name", id="a-leading-colon"),
            pytest.param("-jobs", "is not a stream name", id="a-leading-dash"),
            pytest.param("reports jobs", "is not a stream name", id="a-space"),
            pytest.param("reports\njobs", "is not a stream name", id="a-newline"),
            pytest.param("reports/jobs", "is not a stream name", id="a-slash"),
            pytest.param("}:stream:x", "is not a stream name", id="a-closing-brace"),
            pytest.param("jobs*", "is not a stream name", id="a-glob-star"),
            pytest.param("jobs?[a]", "is not a stream name", id="glob-classes"),
            pytest.param("r\u00e9ports", "is not a stream name", id="non-ascii"),
        ],
    )
    def test_outside_it_is_refused_naming_the_field(self, stream: str, problem: str) -> None:
        with pytest.raises(InvalidSpecError, match=r"^spec\.target\.queue\.stream: ") as raised:
            plan({"queue": {"stream": stream}})

        assert problem in str(raised.value)
