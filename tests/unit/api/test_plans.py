"""From a raw ``spec`` to a ``JobPlan``: what the operator accepts, and how it says no.

Every refusal is an ``InvalidSpecError`` naming the field as users wrote it (camelCase, from
``spec``), because that message goes verbatim into the Ready condition and a Warning Event.
"""

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.api import (
    http_models,
    models,
    planning,
    queue_models,
    schedule_models,
    spec_parsing,
    status_models,
)
from punctual.contracts import records
from punctual.scheduling import cron, dst, durations, interval, missed, overlap, slots
from punctual.scheduling.errors import InvalidSpecError

UID = "0b6f2c1e-8d2a-4c7e-9a51-3f1d2e4b5a69"
HTTP = {"http": {"url": "http://report-svc.reports.svc:8080/run"}}


def spec(**fields: Any) -> dict[str, Any]:
    return {"target": HTTP, **fields}


def plan(raw: dict[str, Any]) -> Any:
    return planning.plan_for(spec_parsing.parse_spec(raw), uid=UID)


class TestAValidSpecBecomesItsPlan:
    def test_the_design_example_in_full(self) -> None:
        raw = {
            "schedule": "30 2 * * *",
            "timeZone": "Europe/Copenhagen",
            "dst": {"nonexistent": "Skip", "ambiguous": "Both"},
            "jitter": "30s",
            "missedRuns": {"policy": "CatchUp", "maxCatchUp": 4, "startingDeadline": "5m"},
            "concurrencyPolicy": "Queue",
            "maxQueued": 2,
            "timeout": "1h30m",
            "suspend": False,
            "history": {"succeeded": 5, "failed": 1},
            "target": {
                "http": {
                    "url": "http://report-svc.reports.svc:8080/run",
                    "method": "PUT",
                    "headers": {"X-Env": "prod"},
                    "headersFrom": [{"secretRef": {"name": "report-token"}}],
                    "body": '{"kind": "nightly"}',
                    "successCodes": [200, 201, 202, 204],
                }
            },
        }

        built = plan(raw)

        assert isinstance(built.schedule, cron.CronSchedule)
        assert built.schedule.expression == "30 2 * * *"
        assert str(built.schedule.zone) == "Europe/Copenhagen"
        assert built.schedule.rules == dst.DstRules(
            nonexistent=dst.Nonexistent.SKIP, ambiguous=dst.Ambiguous.BOTH
        )
        assert built.offset == slots.jitter_offset(
            UID, jitter=timedelta(seconds=30), period=timedelta(days=1)
        )
        assert built.missed_runs == missed.MissedRuns(
            policy=missed.MissedRunPolicy.CATCH_UP,
            max_catch_up=4,
            starting_deadline=timedelta(minutes=5),
        )
        assert built.concurrency is overlap.ConcurrencyPolicy.QUEUE
        assert built.max_queued == 2
        assert built.timeout == timedelta(hours=1, minutes=30)

    def test_a_minimal_spec_gets_the_documented_defaults(self) -> None:
        built = plan(spec(every="10s"))

        assert built.schedule == interval.IntervalSchedule(every=timedelta(seconds=10))
        assert built.offset == timedelta()
        assert built.missed_runs == missed.MissedRuns(
            policy=missed.MissedRunPolicy.RUN_ONCE, max_catch_up=10, starting_deadline=None
        )
        assert built.concurrency is overlap.ConcurrencyPolicy.FORBID
        assert built.max_queued == 1
        assert built.timeout == timedelta(minutes=10)

    def test_the_model_defaults_match_the_design(self) -> None:
        parsed = spec_parsing.parse_spec(spec(schedule="@daily"))

        assert parsed.time_zone == "UTC"
        assert parsed.dst == schedule_models.DstSpec(
            nonexistent=dst.Nonexistent.SHIFT_FORWARD, ambiguous=dst.Ambiguous.FIRST
        )
        assert parsed.suspend is False
        assert parsed.history == schedule_models.HistorySpec(succeeded=3, failed=3)
        assert parsed.target.http is not None
        assert parsed.target.http.method is http_models.HttpMethod.POST
        assert parsed.target.http.success_codes is None

    @pytest.mark.parametrize(
        ("fields", "period"),
        [
            pytest.param({"every": "10s", "jitter": "9999ms"}, timedelta(seconds=10), id="every"),
            pytest.param(
                {"schedule": "*/5 * * * *", "jitter": "4m59s"}, timedelta(minutes=5), id="cron"
            ),
            pytest.param(
                {"schedule": "*/5 * * * * *", "jitter": "4s"},
                timedelta(seconds=5),
                id="cron-with-seconds",
            ),
            pytest.param({"schedule": "@hourly", "jitter": "1ms"}, timedelta(hours=1), id="tiny"),
        ],
    )
    def test_jitter_below_the_period_becomes_the_uid_offset(
        self, fields: dict[str, str], period: timedelta
    ) -> None:
        built = plan(spec(**fields))
        jitter = durations.parse(fields["jitter"], field="spec.jitter")

        assert built.offset == slots.jitter_offset(UID, jitter=jitter, period=period)
        assert timedelta() <= built.offset < jitter

    def test_the_jitter_offset_differs_between_objects_and_not_between_calls(self) -> None:
        parsed = spec_parsing.parse_spec(spec(every="1h", jitter="59m"))
        offsets = {planning.plan_for(parsed, uid=f"uid-{n}").offset for n in range(20)}

        assert len(offsets) > 1
        assert planning.plan_for(parsed, uid=UID) == planning.plan_for(parsed, uid=UID)

    @pytest.mark.parametrize(
        "target",
        [
            pytest.param({"queue": {"stream": "reports:jobs", "payload": {"kind": "x"}}}, id="q"),
            pytest.param(
                {"job": {"template": {"spec": {"template": {"spec": {"containers": []}}}}}},
                id="job",
            ),
        ],
    )
    def test_every_kind_of_target_is_accepted(self, target: dict[str, Any]) -> None:
        parsed = spec_parsing.parse_spec({"every": "1m", "target": target})
        # The job target's loop waits a margin longer: the Job's own deadline fires first.
        margin = planning.JOB_TIMEOUT_MARGIN if "job" in target else timedelta()
        assert planning.plan_for(parsed, uid=UID).timeout == timedelta(minutes=10) + margin


class TestAnInvalidSpecNamesTheFieldAsUsersWroteIt:
    @pytest.mark.parametrize(
        ("raw", "field", "problem"),
        [
            # What the operator alone can check.
            pytest.param(
                spec(schedule="61 * * * *"), "spec.schedule", "minute field '61'", id="bad-cron"
            ),
            pytest.param(
                spec(schedule="0 0 30 2 *"), "spec.schedule", "never fires", id="never-fires"
            ),
            pytest.param(
                spec(schedule="R * * * *"), "spec.schedule", "random (R)", id="random-cron"
            ),
            pytest.param(
                spec(schedule="@fortnightly"), "spec.schedule", "unknown macro", id="bad-macro"
            ),
            pytest.param(
                spec(schedule="@daily", timeZone="Europe/Copenhagn"),
                "spec.timeZone",
                "did you mean 'Europe/Copenhagen'?",
                id="misspelt-zone",
            ),
            pytest.param(
                spec(schedule="@daily", timeZone="Nowhere/Land"),
                "spec.timeZone",
                "unknown time zone",
                id="unknown-zone",
            ),
            pytest.param(
                spec(schedule="@daily", timeZone="Europe"),
                "spec.timeZone",
                "unknown time zone 'Europe'",
                id="region-not-zone",
            ),
            pytest.param(
                spec(schedule="*/5 * * * *", jitter="5m"),
                "spec.jitter",
                "5m must be shorter than the shortest time between two slots of the schedule (5m)",
                id="jitter-equal-to-cron-period",
            ),
            pytest.param(
                spec(schedule="0 9,10 * * *", jitter="2h"),
                "spec.jitter",
                "(1h)",
                id="jitter-above-the-shortest-of-uneven-periods",
            ),
            # What the API server checks too, refused the same way.
            pytest.param(
                spec(schedule="@daily", every="10s"),
                "spec.schedule",
                "exactly one of schedule (a cron expression) or every (an interval)",
                id="schedule-and-every",
            ),
            pytest.param(
                spec(), "spec.schedule", "exactly one of schedule", id="neither-schedule-nor-every"
            ),
            pytest.param({"every": "10s"}, "spec.target", "required", id="no-target"),
            pytest.param(
                {"every": "10s", "target": {}},
                "spec.target",
                "set exactly one of http, queue or job",
                id="empty-target",
            ),
            pytest.param(
                {"every": "10s", "target": {**HTTP, "queue": {"stream": "s"}}},
                "spec.target",
                "set exactly one of http, queue or job",
                id="two-targets",
            ),
            pytest.param(
                spec(every="10s", jitter="10s"),
                "spec.jitter",
                "jitter must be shorter than every",
                id="jitter-equal-to-every",
            ),
            pytest.param(spec(every="10"), "spec.every", "missing unit", id="unitless-every"),
            pytest.param(spec(every="0s"), "spec.every", "must be positive", id="zero-every"),
            pytest.param(
                spec(every="1m", timeout="-5s"), "spec.timeout", "must be positive", id="neg"
            ),
            pytest.param(
                spec(every="1m", timeout="0s"), "spec.timeout", "must be positive", id="zero"
            ),
            pytest.param(
                spec(every="1m", timeout="1.5s"), "spec.timeout", "fractions", id="fraction"
            ),
            pytest.param(
                spec(every="1m", timeout="10us"), "spec.timeout", "smallest unit is ms", id="us"
            ),
            pytest.param(
                spec(every="1m", timeout="9" * 30 + "h"),
                "spec.timeout",
                "too large",
                id="beyond-timedelta",
            ),
            pytest.param(
                spec(every="1m", timeout="2562048h"),
                "spec.timeout",
                "too large (at most 2562047h47m16s854ms)",
                id="beyond-go",
            ),
            pytest.param(
                spec(every="1m", timeout="1" * 33 + "s"),
                "spec.timeout",
                "at most 32 characters",
                id="too-long",
            ),
            pytest.param(
                spec(every="1m", missedRuns={"startingDeadline": "0s"}),
                "spec.missedRuns.startingDeadline",
                "must be positive",
                id="zero-deadline",
            ),
            pytest.param(
                spec(every="1m", missedRuns={"maxCatchUp": 0}),
                "spec.missedRuns.maxCatchUp",
                "greater than or equal to 1 (got 0)",
                id="no-catch-up",
            ),
            pytest.param(
                spec(every="1m", missedRuns={"maxCatchUp": 2.0}),
                "spec.missedRuns.maxCatchUp",
                "valid integer (got 2.0)",
                id="float-count",
            ),
            pytest.param(
                spec(every="1m", missedRuns={"policy": "Sometimes"}),
                "spec.missedRuns.policy",
                "'Skip', 'RunOnce' or 'CatchUp' (got 'Sometimes')",
                id="bad-policy",
            ),
            pytest.param(
                spec(every="1m", concurrencyPolicy="forbid"),
                "spec.concurrencyPolicy",
                "(got 'forbid')",
                id="enum-is-case-sensitive",
            ),
            pytest.param(
                spec(every="1m", dst={"ambiguous": "Last"}),
                "spec.dst.ambiguous",
                "'First', 'Second' or 'Both'",
                id="bad-dst-rule",
            ),
            pytest.param(
                spec(every="1m", maxQueued=0), "spec.maxQueued", "or equal to 1", id="no-queue"
            ),
            pytest.param(
                spec(every="1m", history={"failed": -1}),
                "spec.history.failed",
                "greater than or equal to 0",
                id="negative-history",
            ),
            pytest.param(
                spec(every="1m", suspend="yes"), "spec.suspend", "valid boolean", id="bool"
            ),
            pytest.param(
                spec(every="1m", bogus=1), "spec.bogus", "unknown field", id="unknown-field"
            ),
            pytest.param(
                spec(every="1m", time_zone="UTC"),
                "spec.time_zone",
                "unknown field",
                id="python-names-are-not-wire-names",
            ),
            pytest.param(
                {"every": "1m", "target": {"http": {"url": "ftp://x"}}},
                "spec.target.http.url",
                "should match pattern",
                id="not-http",
            ),
            pytest.param(
                {"every": "1m", "target": {"http": {**HTTP["http"], "method": "FETCH"}}},
                "spec.target.http.method",
                "(got 'FETCH')",
                id="bad-method",
            ),
            pytest.param(
                {"every": "1m", "target": {"http": {**HTTP["http"], "successCodes": [200, 99]}}},
                "spec.target.http.successCodes[1]",
                "greater than or equal to 100",
                id="bad-status-code",
            ),
            pytest.param(
                {"every": "1m", "target": {"http": {**HTTP["http"], "headersFrom": [{}]}}},
                "spec.target.http.headersFrom[0].secretRef",
                "required",
                id="headers-from-without-secret",
            ),
            pytest.param(
                {"every": "1m", "target": {"queue": {"stream": "s", "maxLen": 0}}},
                "spec.target.queue.maxLen",
                "greater than or equal to 1",
                id="bad-max-len",
            ),
            pytest.param(
                {"every": "1m", "target": {"job": {}}},
                "spec.target.job.template",
                "required",
                id="job-without-template",
            ),
        ],
    )
    def test_it_is_refused_naming_the_field(
        self, raw: dict[str, Any], field: str, problem: str
    ) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            plan(raw)
        assert caught.value.field == field
        assert problem in caught.value.problem
        assert str(caught.value).startswith(f"{field}: ")

    def test_more_problems_are_counted_after_the_first(self) -> None:
        raw = spec(every="0s", timeout="x", maxQueued=0)

        with pytest.raises(InvalidSpecError) as caught:
            spec_parsing.parse_spec(raw)
        assert caught.value.field == "spec.every"
        assert caught.value.problem.endswith("(and 2 more problems)")

    def test_a_spec_that_is_not_an_object_is_refused_on_spec(self) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            spec_parsing.parse_spec("every: 10s")  # type: ignore[arg-type]
        assert caught.value.field == "spec"


class TestBadInputNeverEscapesAsAnythingButInvalidSpecError:
    JSON = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=10), children, max_size=3)
        ),
        max_leaves=8,
    )
    FIELDS = st.sampled_from(
        [
            "schedule",
            "every",
            "timeZone",
            "jitter",
            "timeout",
            "maxQueued",
            "concurrencyPolicy",
            "missedRuns",
            "dst",
            "history",
            "target",
            "suspend",
        ]
    )

    @settings(max_examples=300, deadline=None)
    @given(st.dictionaries(FIELDS, JSON, max_size=5))
    def test_arbitrary_json_values(self, raw: dict[str, Any]) -> None:
        with contextlib.suppress(InvalidSpecError):
            plan(raw)

    @settings(max_examples=300, deadline=None)
    @given(
        schedule=st.text(max_size=40)
        | st.lists(
            st.sampled_from(["*", "0", "59", "*/7", "1-5", "L", "MON", "JAN", "?", "H", "#", "/"]),
            min_size=4,
            max_size=7,
        ).map(" ".join),
        time_zone=st.text(max_size=30)
        | st.sampled_from(["UTC", "Europe/Copenhagen", "Europe", "America/Argentina", "../etc"]),
        jitter=st.none() | st.sampled_from(["1ms", "59s", "1h", "25h", "900000h"]),
    )
    def test_arbitrary_schedules_zones_and_jitters(
        self, schedule: str, time_zone: str, jitter: str | None
    ) -> None:
        raw = spec(schedule=schedule, timeZone=time_zone)
        if jitter is not None:
            raw["jitter"] = jitter
        with contextlib.suppress(InvalidSpecError):
            plan(raw)


class TestTheModelsAreFrozenAndSpeakCamelCase:
    def test_a_parsed_spec_cannot_be_changed(self) -> None:
        parsed = spec_parsing.parse_spec(spec(every="10s"))
        with pytest.raises(ValueError, match="frozen"):
            parsed.suspend = True

    def test_dumping_uses_the_wire_names(self) -> None:
        raw = spec(every="10s", missedRuns={"maxCatchUp": 3})
        dumped = spec_parsing.parse_spec(raw).model_dump(mode="json", exclude_defaults=True)

        assert dumped == raw

    def test_code_may_build_a_spec_by_python_names(self) -> None:
        built = models.ScheduledJobSpec(
            every="10s",
            time_zone="Asia/Kolkata",
            target=models.Target(queue=queue_models.QueueTarget(stream="s")),
        )
        assert built.time_zone == "Asia/Kolkata"


class TestStatusRoundTripsThroughItsWireForm:
    def test_a_status_as_written_reads_back_and_dumps_the_same(self) -> None:
        wire = {
            "observedGeneration": 4,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Scheduled",
                    "message": "next run at 2026-12-01T01:30:12Z",
                    "lastTransitionTime": "2026-11-30T01:00:00Z",
                    "observedGeneration": 4,
                }
            ],
            "nextRunTime": "2026-12-01T01:30:12Z",
            "lastScheduleTime": "2026-11-30T01:30:00Z",
            "lastSuccessfulTime": "2026-11-30T01:30:13.015Z",
            "lastRun": {
                "slot": "2026-11-30T01:30:00Z",
                "scheduledTime": "2026-11-30T01:30:12Z",
                "startedAt": "2026-11-30T01:30:12.003Z",
                "finishedAt": "2026-11-30T01:30:12.815Z",
                "latenessMillis": 3,
                "durationMillis": 812,
                "result": "Succeeded",
                "message": "HTTP 204",
                "replica": "punctual-7d9f-x2",
            },
            "recentRuns": [
                {
                    "slot": "2026-11-29T01:30:00Z",
                    "scheduledTime": "2026-11-29T01:30:12Z",
                    "result": "Missed",
                    "message": "",
                    "replica": "",
                }
            ],
            "active": [
                {
                    "slot": "2026-12-01T01:30:00Z",
                    "startedAt": "2026-12-01T01:30:12Z",
                    "replica": "punctual-7d9f-x2",
                    "jobName": "nightly-report-1795995000",
                }
            ],
            "counts": {
                "succeeded": 120,
                "failed": 2,
                "timedOut": 0,
                "skippedOverlap": 1,
                "skippedInFlightLimit": 0,
                "skippedQueueLimit": 0,
                "missed": 0,
                "lost": 0,
                "suspended": 0,
                "excluded": 0,
                "cancelled": 0,
            },
        }

        status = status_models.ScheduledJobStatus.model_validate(wire)

        assert status.last_schedule_time == datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
        assert status.last_run is not None
        assert status.last_run.result is records.RunResult.SUCCEEDED
        assert status.model_dump(mode="json", exclude_none=True) == wire

    def test_timestamps_in_other_offsets_are_written_in_utc(self) -> None:
        status = status_models.ScheduledJobStatus.model_validate(
            {"nextRunTime": "2026-12-01T02:30:12+01:00"}
        )
        assert status.model_dump(mode="json")["nextRunTime"] == "2026-12-01T01:30:12Z"

    def test_a_timestamp_without_an_offset_is_refused(self) -> None:
        with pytest.raises(ValueError, match="timezone"):
            status_models.ScheduledJobStatus.model_validate({"nextRunTime": "2026-12-01T01:30:12"})
