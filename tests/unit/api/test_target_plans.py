"""What the target kind changes in a plan: the job target's loop timeout and shortest period,
and the queue target's stream, which may not be one of the operator's own Redis keys."""

from datetime import timedelta
from typing import Any

import pytest

from punctual.api import planning
from punctual.locks import redis_leases
from punctual.redis_io import slot_keys
from punctual.scheduling.errors import InvalidSpecError

UID = "0b6f2c1e-8d2a-4c7e-9a51-3f1d2e4b5a69"
JOB = {"job": {"template": {"spec": {"template": {"spec": {"containers": []}}}}}}
QUEUE = {"queue": {"stream": "reports:jobs"}}
HTTP = {"http": {"url": "http://report-svc.reports.svc:8080/run"}}


def plan(target: dict[str, Any], **fields: Any) -> Any:
    raw = {"every": "1m", "target": target, **fields}
    return planning.plan_for(planning.parse_spec(raw), uid=UID)


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
        bounds = planning.Bounds(min_period=timedelta(milliseconds=100))
        planned = planning.plan_for(
            planning.parse_spec({"every": "250ms", "target": QUEUE}), uid=UID, bounds=bounds
        )
        assert planned.schedule.shortest_period == timedelta(milliseconds=250)


class TestTheQueueTargetsStream:
    @pytest.mark.parametrize(
        "stream",
        [
            pytest.param("punctual:runs", id="the-runs-in-flight"),
            pytest.param("punctual:run:other/job/uid/1796002200000", id="a-run-lease"),
            pytest.param("punctual:slot:other/job/uid/1796002200000", id="another-jobs-slot"),
        ],
    )
    def test_that_is_one_of_the_operators_own_keys_is_refused(self, stream: str) -> None:
        with pytest.raises(InvalidSpecError, match=r"^spec\.target\.queue\.stream: "):
            plan({"queue": {"stream": stream}})

    @pytest.mark.parametrize("stream", ["reports:jobs", "punctual:examples", "punctual:runsheet"])
    def test_any_other_is_taken(self, stream: str) -> None:
        plan({"queue": {"stream": stream}})  # no InvalidSpecError

    def test_the_keys_refused_are_the_ones_the_locks_write(self) -> None:
        assert slot_keys.KEY_PREFIX in planning.OPERATOR_KEY_PREFIXES
        assert redis_leases.RUN_PREFIX in planning.OPERATOR_KEY_PREFIXES
        assert redis_leases.RUNS_KEY in planning.OPERATOR_KEYS
