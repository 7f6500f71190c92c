"""From a CronJob to the ScheduledJob that behaves the same (``punctual.api.cronjobs``).

Field by field: what each CronJob field becomes, every default where the two differ written
out; what cannot be carried over is a problem naming the CronJob's field; and every ScheduledJob
that comes out passes the operator's own check (``spec_parsing.parse_spec`` and ``plan_for``).
"""

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.api import cronjobs, models, planning, spec_bounds, spec_parsing
from punctual.scheduling import cron, interval, missed, overlap
from punctual.scheduling.errors import InvalidSpecError

UID = "6c1f0a52-3f4e-4f55-9f0e-2b1d1f6f2a11"
JOB_SPEC: dict[str, Any] = {
    "backoffLimit": 1,
    "template": {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "report", "image": "busybox:1.36", "args": ["report"]}],
        }
    },
}


def cronjob(**spec: Any) -> dict[str, Any]:
    """A CronJob with ``spec`` over ``30 2 * * *`` and a plain jobTemplate."""
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "reports"},
        "spec": {"schedule": "30 2 * * *", "jobTemplate": {"spec": JOB_SPEC}, **spec},
    }


def with_job_spec(**fields: Any) -> dict[str, Any]:
    return cronjob(jobTemplate={"spec": {**JOB_SPEC, **fields}})


def converted(source: dict[str, Any], **defaults: Any) -> cronjobs.Conversion:
    conversion = cronjobs.convert(source, defaults=cronjobs.Defaults(**defaults))
    if conversion.scheduled_job is not None:
        assert_the_operator_accepts(conversion.scheduled_job)
    return conversion


def assert_the_operator_accepts(manifest: dict[str, Any]) -> None:
    assert manifest["apiVersion"] == models.API_VERSION
    assert manifest["kind"] == models.KIND
    # Within the API's own limits: the platform's bounds (--max-timeout and the like) are the
    # operator's flags, checked when the ScheduledJob is applied, not the conversion's.
    planning.plan_for(
        spec_parsing.parse_spec(manifest["spec"]), uid=UID, bounds=spec_bounds.UNBOUNDED
    )


def spec_of(source: dict[str, Any], **defaults: Any) -> dict[str, Any]:
    """The converted spec of a CronJob that converts without any problem."""
    conversion = converted(source, **defaults)
    assert conversion.problems == ()
    assert conversion.scheduled_job is not None
    spec: dict[str, Any] = conversion.scheduled_job["spec"]
    return spec


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            cronjob(),
            {"concurrencyPolicy": "Allow"},
            id="an unset concurrencyPolicy is written Allow, CronJob's default (ours is Forbid)",
        ),
        pytest.param(
            cronjob(concurrencyPolicy="Forbid"),
            {"concurrencyPolicy": "Forbid"},
            id="concurrencyPolicy Forbid stays Forbid",
        ),
        pytest.param(
            cronjob(concurrencyPolicy="Replace"),
            {"concurrencyPolicy": "Replace"},
            id="concurrencyPolicy Replace stays Replace",
        ),
        pytest.param(
            cronjob(),
            {"history": {"succeeded": 3, "failed": 1}},
            id="unset history limits are written as CronJob's defaults, 3 succeeded and 1 failed",
        ),
        pytest.param(
            cronjob(successfulJobsHistoryLimit=10, failedJobsHistoryLimit=0),
            {"history": {"succeeded": 10, "failed": 0}},
            id="the two history limits become history.succeeded and history.failed",
        ),
        pytest.param(
            cronjob(successfulJobsHistoryLimit=100),
            {"history": {"succeeded": 100, "failed": 1}},
            id="a history limit of 100 is the most a ScheduledJob keeps, and is kept",
        ),
        pytest.param(
            cronjob(),
            {"missedRuns": {"policy": "RunOnce"}},
            id="missed runs are RunOnce, as CronJob runs only the newest missed slot",
        ),
        pytest.param(
            cronjob(startingDeadlineSeconds=300),
            {"missedRuns": {"policy": "RunOnce", "startingDeadline": "5m"}},
            id="startingDeadlineSeconds becomes missedRuns.startingDeadline",
        ),
        pytest.param(
            cronjob(startingDeadlineSeconds=5430),
            {"missedRuns": {"policy": "RunOnce", "startingDeadline": "1h30m30s"}},
            id="a starting deadline is written as a Go-style duration",
        ),
        pytest.param(
            cronjob(),
            {"schedule": "30 2 * * *", "timeZone": "UTC"},
            id="an unset timeZone is written UTC, where kube-controller-manager usually runs",
        ),
        pytest.param(
            cronjob(timeZone="Europe/Copenhagen"),
            {"schedule": "30 2 * * *", "timeZone": "Europe/Copenhagen"},
            id="timeZone stays timeZone",
        ),
        pytest.param(
            cronjob(schedule="TZ=America/New_York 0 9 * * 1-5"),
            {"schedule": "0 9 * * 1-5", "timeZone": "America/New_York"},
            id="a TZ= prefix in the schedule becomes timeZone",
        ),
        pytest.param(
            cronjob(schedule="CRON_TZ=Asia/Tokyo   @daily"),
            {"schedule": "@daily", "timeZone": "Asia/Tokyo"},
            id="a CRON_TZ= prefix in the schedule becomes timeZone",
        ),
        pytest.param(
            cronjob(schedule="TZ=Europe/Oslo 0 6 * * *", timeZone="Europe/Oslo"),
            {"schedule": "0 6 * * *", "timeZone": "Europe/Oslo"},
            id="a TZ= prefix that agrees with timeZone is no problem",
        ),
        pytest.param(
            cronjob(schedule="@hourly"),
            {"schedule": "@hourly"},
            id="the @hourly macro is written as is",
        ),
        pytest.param(
            cronjob(schedule="@weekly"),
            {"schedule": "@weekly"},
            id="the @weekly macro is written as is",
        ),
        pytest.param(
            cronjob(schedule="0 0 1 * ?"),
            {"schedule": "0 0 1 * ?"},
            id="a question mark for any day is written as is",
        ),
        pytest.param(
            cronjob(),
            {"dst": {"nonexistent": "Skip", "ambiguous": "Both"}},
            id="a cron schedule gets CronJob's DST rules: skip a missing time, run a repeat twice",
        ),
        pytest.param(
            cronjob(),
            {"suspend": False},
            id="an unset suspend is written false",
        ),
        pytest.param(
            cronjob(suspend=True),
            {"suspend": True},
            id="suspend stays suspend",
        ),
        pytest.param(
            cronjob(),
            {"timeout": "24h"},
            id="without activeDeadlineSeconds the timeout is a long 24h, as CronJob has none",
        ),
        pytest.param(
            with_job_spec(activeDeadlineSeconds=5400),
            {"timeout": "1h30m"},
            id="the jobTemplate's activeDeadlineSeconds becomes the timeout",
        ),
        pytest.param(
            cronjob(),
            {"target": {"job": {"template": {"spec": JOB_SPEC}}}},
            id="the jobTemplate becomes target.job.template",
        ),
    ],
)
def test_a_cronjob_field_becomes_its_scheduled_job_field(
    source: dict[str, Any], expected: dict[str, Any]
) -> None:
    spec = spec_of(source)

    assert {key: spec.get(key) for key in expected} == expected


def test_every_field_is_written_out_in_the_order_users_read_them() -> None:
    assert list(spec_of(cronjob())) == [
        "schedule",
        "timeZone",
        "dst",
        "concurrencyPolicy",
        "suspend",
        "timeout",
        "missedRuns",
        "history",
        "target",
    ]


def test_the_operator_plans_a_converted_cronjob_as_cronjob_would_run_it() -> None:
    source = cronjob(
        schedule="TZ=Europe/Copenhagen 30 2 * * *",
        concurrencyPolicy="Replace",
        startingDeadlineSeconds=120,
    )

    spec = spec_parsing.parse_spec(spec_of(source))
    plan = planning.plan_for(spec, uid=UID)

    assert isinstance(plan.schedule, cron.CronSchedule)
    assert plan.schedule.zone.key == "Europe/Copenhagen"
    assert plan.concurrency is overlap.ConcurrencyPolicy.REPLACE
    assert plan.missed_runs.policy is missed.MissedRunPolicy.RUN_ONCE
    assert plan.missed_runs.starting_deadline is not None
    assert plan.missed_runs.starting_deadline.total_seconds() == 120
    assert spec.history.failed == 1


def test_activedeadlineseconds_moves_out_of_the_template_into_the_timeout() -> None:
    spec = spec_of(with_job_spec(activeDeadlineSeconds=600))

    assert spec["timeout"] == "10m"
    assert "activeDeadlineSeconds" not in spec["target"]["job"]["template"]["spec"]


def test_the_jobtemplates_metadata_and_spec_are_copied_without_kubectls_null_timestamps() -> None:
    source = cronjob(
        jobTemplate={
            "metadata": {"creationTimestamp": None, "labels": {"job": "report"}},
            "spec": {
                **JOB_SPEC,
                "template": {
                    "metadata": {"creationTimestamp": None, "annotations": {"a": "b"}},
                    "spec": JOB_SPEC["template"]["spec"],
                },
            },
        }
    )

    template = spec_of(source)["target"]["job"]["template"]

    assert template == {
        "metadata": {"labels": {"job": "report"}},
        "spec": {
            **JOB_SPEC,
            "template": {"metadata": {"annotations": {"a": "b"}}, **JOB_SPEC["template"]},
        },
    }


def test_the_cronjob_given_is_left_as_it_was() -> None:
    source = with_job_spec(activeDeadlineSeconds=600)
    before = copy.deepcopy(source)

    converted(source)

    assert source == before


def test_metadata_keeps_name_namespace_labels_and_annotations_and_drops_what_the_server_set() -> (
    None
):
    source = cronjob()
    source["metadata"] = {
        "name": "nightly",
        "namespace": "reports",
        "labels": {"app": "reports"},
        "annotations": {
            "team": "data",
            "kubectl.kubernetes.io/last-applied-configuration": '{"kind": "CronJob"}',
        },
        "uid": "b0e5f6c2-0000-4000-8000-000000000001",
        "resourceVersion": "4711",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "generation": 3,
        "managedFields": [{"manager": "kubectl", "operation": "Update"}],
    }
    source["status"] = {"lastScheduleTime": "2026-01-01T02:30:00Z", "active": []}

    conversion = converted(source)

    assert conversion.problems == ()
    assert conversion.scheduled_job is not None
    assert conversion.scheduled_job["metadata"] == {
        "name": "nightly",
        "namespace": "reports",
        "labels": {"app": "reports"},
        "annotations": {"team": "data"},
    }
    assert "status" not in conversion.scheduled_job


def test_a_cronjob_without_namespace_converts_to_a_scheduled_job_without_namespace() -> None:
    source = cronjob()
    source["metadata"] = {"name": "nightly"}

    conversion = converted(source)

    assert conversion.subject == "CronJob nightly"
    assert conversion.scheduled_job is not None
    assert conversion.scheduled_job["metadata"] == {"name": "nightly"}


@pytest.mark.parametrize(
    ("source", "path", "says", "converted_anyway"),
    [
        pytest.param(
            cronjob(schedule="@every 90m"),
            "spec.schedule",
            "wrote every: 1h30m (the same period, another phase)",
            True,
            id="@every becomes every, whose slots count from the epoch, not the last run",
        ),
        pytest.param(
            cronjob(schedule="@every banana"),
            "spec.schedule",
            "not a Go duration after @every",
            False,
            id="@every with something that is no duration converts to nothing",
        ),
        pytest.param(
            cronjob(successfulJobsHistoryLimit=500),
            "spec.successfulJobsHistoryLimit",
            "500 is more than a ScheduledJob keeps: wrote history.succeeded: 100",
            True,
            id="a history limit over 100 is cut to 100",
        ),
        pytest.param(
            cronjob(failedJobsHistoryLimit=-1),
            "spec.failedJobsHistoryLimit",
            "left out",
            True,
            id="a negative history limit is left out",
        ),
        pytest.param(
            cronjob(startingDeadlineSeconds=0),
            "spec.startingDeadlineSeconds",
            "left out (no deadline)",
            True,
            id="a starting deadline of 0 seconds has no equivalent and is left out",
        ),
        pytest.param(
            cronjob(concurrencyPolicy="Sometimes"),
            "spec.concurrencyPolicy",
            "'Sometimes' is not one of Allow, Forbid, Replace: left out",
            True,
            id="an unknown concurrencyPolicy is left out",
        ),
        pytest.param(
            cronjob(suspend="yes"),
            "spec.suspend",
            "'yes' is not true or false",
            True,
            id="a suspend that is not a boolean is left out",
        ),
        pytest.param(
            cronjob(schedule="TZ=Europe/Oslo 0 6 * * *", timeZone="Europe/Paris"),
            "spec.timeZone",
            "'Europe/Paris' is ignored by CronJob when the schedule starts with TZ=Europe/Oslo",
            True,
            id="a timeZone that a TZ= prefix overrides is named, the prefix's zone is written",
        ),
        pytest.param(
            cronjob(parallelism=2),
            "spec.parallelism",
            "not a field of a CronJob's spec: left out",
            True,
            id="an unknown spec field is left out",
        ),
        pytest.param(
            cronjob(jobTemplate={"spec": JOB_SPEC, "x": 1}),
            "spec.jobTemplate.x",
            "not a field of a CronJob's jobTemplate: left out",
            True,
            id="an unknown jobTemplate field is left out",
        ),
        pytest.param(
            with_job_spec(backofLimit=2),
            "spec.jobTemplate.spec.backofLimit",
            "not a field of a batch/v1 JobSpec (as of Kubernetes 1.35): copied as is",
            True,
            id="a field a JobSpec does not have is named, and copied in case it is newer",
        ),
        pytest.param(
            with_job_spec(activeDeadlineSeconds="1h"),
            "spec.jobTemplate.spec.activeDeadlineSeconds",
            "kept in the template, wrote timeout 24h",
            True,
            id="an activeDeadlineSeconds that is not whole seconds stays in the template",
        ),
        pytest.param(
            {**cronjob(), "extra": {}},
            "extra",
            "not a field of a CronJob: left out",
            True,
            id="an unknown top-level field is left out",
        ),
        pytest.param(
            {**cronjob(), "metadata": {"name": "n", "ownerReferences": [{"kind": "App"}]}},
            "metadata.ownerReferences",
            "left out: the CronJob's owners would not manage the ScheduledJob",
            True,
            id="owner references are left out",
        ),
        pytest.param(
            {**cronjob(), "metadata": {"name": "n", "finalizers": ["x/y"]}},
            "metadata.finalizers",
            "left out",
            True,
            id="finalizers are left out",
        ),
        pytest.param(
            cronjob(schedule=None),
            "spec.schedule",
            "required: a cron expression",
            False,
            id="a CronJob without a schedule converts to nothing",
        ),
        pytest.param(
            cronjob(schedule="TZ=Europe/Oslo"),
            "spec.schedule",
            "has no expression after TZ=Europe/Oslo",
            False,
            id="a TZ= prefix alone converts to nothing",
        ),
        pytest.param(
            cronjob(jobTemplate=None),
            "spec.jobTemplate",
            "required",
            False,
            id="a CronJob without a jobTemplate converts to nothing",
        ),
        pytest.param(
            cronjob(jobTemplate={"metadata": {}}),
            "spec.jobTemplate.spec",
            "required: a batch/v1 JobSpec",
            False,
            id="a jobTemplate without a spec converts to nothing",
        ),
        pytest.param(
            {**cronjob(), "metadata": {"namespace": "reports"}},
            "metadata.name",
            "required",
            False,
            id="a CronJob without a name converts to nothing",
        ),
        pytest.param(
            cronjob(schedule="61 * * * *"),
            "spec.schedule",
            "minute field '61' is not valid",
            False,
            id="a schedule the operator refuses converts to nothing, the refusal named",
        ),
        pytest.param(
            cronjob(timeZone="Mars/Olympus_Mons"),
            "spec.timeZone",
            "unknown time zone 'Mars/Olympus_Mons'",
            False,
            id="a time zone the operator refuses converts to nothing, the refusal named",
        ),
        pytest.param(
            cronjob(schedule="TZ=Mars/Olympus_Mons 0 6 * * *"),
            "spec.schedule",
            "unknown time zone 'Mars/Olympus_Mons'",
            False,
            id="a refused zone from a TZ= prefix is named as the schedule",
        ),
    ],
)
def test_what_cannot_be_carried_over_is_named_by_its_cronjob_field(
    source: dict[str, Any], path: str, says: str, converted_anyway: bool
) -> None:
    conversion = converted(source)

    assert [problem.path for problem in conversion.problems] == [path]
    assert says in conversion.problems[0].message
    assert (conversion.scheduled_job is not None) is converted_anyway


@pytest.mark.parametrize(
    ("duration", "every"),
    [
        pytest.param("1h30m", "1h30m", id="whole units stay as they are"),
        pytest.param("90s", "1m30s", id="seconds are written in the largest units"),
        pytest.param("1.5h", "1h30m", id="a fraction of an hour is whole minutes"),
        pytest.param("2m30.9s", "2m30s", id="fractions of a second are cut, as robfig/cron does"),
        pytest.param("500ms", "1s", id="less than a second is one second, as robfig/cron does"),
        pytest.param("0", "1s", id="zero is one second"),
        pytest.param("+1h", "1h", id="a leading plus sign is allowed"),
        pytest.param("1h0m0s", "1h", id="zero terms vanish"),
        pytest.param("3000000us", "3s", id="microseconds add up to seconds"),
    ],
)
def test_every_takes_a_go_duration_rounded_as_cronjob_rounds_it(duration: str, every: str) -> None:
    conversion = converted(cronjob(schedule=f"@every {duration}", timeZone="Europe/Oslo"))

    assert conversion.scheduled_job is not None
    spec = conversion.scheduled_job["spec"]
    assert spec["every"] == every
    assert "schedule" not in spec
    assert "timeZone" not in spec
    assert "dst" not in spec


@pytest.mark.parametrize(
    "duration",
    [
        pytest.param("", id="nothing"),
        pytest.param("h", id="a unit without a number"),
        pytest.param(".h", id="a dot without digits"),
        pytest.param("1d", id="days, which Go has no unit for"),
        pytest.param("1h 30m", id="a space inside"),
    ],
)
def test_every_refuses_what_go_cannot_parse(duration: str) -> None:
    conversion = converted(cronjob(schedule=f"@every {duration}"))

    assert conversion.scheduled_job is None


def test_a_converted_every_schedule_is_an_interval_for_the_operator() -> None:
    conversion = converted(cronjob(schedule="@every 10m"))

    assert conversion.scheduled_job is not None
    plan = planning.plan_for(spec_parsing.parse_spec(conversion.scheduled_job["spec"]), uid=UID)
    assert isinstance(plan.schedule, interval.IntervalSchedule)


class TestDefaults:
    def test_the_time_zone_given_is_written_for_cronjobs_without_one(self) -> None:
        assert spec_of(cronjob(), time_zone="Europe/Berlin")["timeZone"] == "Europe/Berlin"

    def test_a_cronjobs_own_time_zone_wins_over_the_default(self) -> None:
        spec = spec_of(cronjob(timeZone="Asia/Tokyo"), time_zone="Europe/Berlin")

        assert spec["timeZone"] == "Asia/Tokyo"

    def test_the_timeout_given_is_written_for_jobs_without_a_deadline(self) -> None:
        assert spec_of(cronjob(), timeout="2h")["timeout"] == "2h"

    def test_a_jobtemplates_deadline_wins_over_the_default_timeout(self) -> None:
        assert spec_of(with_job_spec(activeDeadlineSeconds=60), timeout="2h")["timeout"] == "1m"

    @pytest.mark.parametrize(
        ("defaults", "field"),
        [
            pytest.param({"time_zone": "Europe/Nowhere"}, "spec.timeZone", id="an unknown zone"),
            pytest.param({"timeout": "1 day"}, "spec.timeout", id="a timeout that is no duration"),
            pytest.param({"timeout": "-5s"}, "spec.timeout", id="a negative timeout"),
            pytest.param({"timeout": "999999999h"}, "spec.timeout", id="a timeout Go cannot hold"),
        ],
    )
    def test_defaults_the_operator_would_refuse_are_refused_before_any_conversion(
        self, defaults: dict[str, str], field: str
    ) -> None:
        with pytest.raises(InvalidSpecError) as refused:
            cronjobs.Defaults(**defaults).check()

        assert refused.value.field == field


class TestDocuments:
    def test_a_kubectl_list_converts_each_of_its_items(self) -> None:
        first, second = cronjob(), cronjob(schedule="@hourly")
        second["metadata"] = {"name": "hourly", "namespace": "reports"}
        document = {"apiVersion": "v1", "kind": "List", "items": [first, second]}

        conversions = cronjobs.convert_document(document)

        assert [conversion.subject for conversion in conversions] == [
            "CronJob reports/nightly",
            "CronJob reports/hourly",
        ]
        assert all(conversion.problems == () for conversion in conversions)

    def test_the_items_of_an_api_servers_cronjoblist_need_no_kind(self) -> None:
        item = cronjob()
        del item["apiVersion"], item["kind"]
        document = {"apiVersion": "batch/v1", "kind": "CronJobList", "items": [item]}

        (conversion,) = cronjobs.convert_document(document)

        assert conversion.problems == ()
        assert conversion.scheduled_job is not None

    def test_an_empty_list_converts_to_nothing(self) -> None:
        assert cronjobs.convert_document({"apiVersion": "v1", "kind": "List", "items": []}) == []

    @pytest.mark.parametrize(
        ("document", "subject", "says"),
        [
            pytest.param(
                {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}},
                "Service web",
                "not a CronJob of batch/v1 or batch/v1beta1 (kind 'Service', apiVersion 'v1')",
                id="another kind is named and left out",
            ),
            pytest.param(
                {**cronjob(), "apiVersion": "batch/v2alpha1"},
                "CronJob reports/nightly",
                "apiVersion 'batch/v2alpha1'",
                id="a CronJob of another version is left out",
            ),
            pytest.param(
                {"apiVersion": "v1", "kind": "List", "items": ["a"]},
                "items[0]",
                "not an object but a string: left out",
                id="a list item that is no object is named by its index",
            ),
            pytest.param(
                {"apiVersion": "v1", "kind": "List", "items": [{"kind": "CronJob"}]},
                "items[0]: CronJob without a name",
                "(kind 'CronJob', apiVersion None): left out",
                id="an unnamed item is named by its index",
            ),
        ],
    )
    def test_what_is_not_a_cronjob_is_left_out_and_named(
        self, document: dict[str, Any], subject: str, says: str
    ) -> None:
        (conversion,) = cronjobs.convert_document(document, location="")

        assert conversion.scheduled_job is None
        assert conversion.subject.endswith(subject)
        assert says in str(conversion.problems[0])


def test_a_made_up_field_name_is_quoted_in_its_problem() -> None:
    conversion = converted(cronjob(**{"evil\nkey": 1}))

    assert [str(problem) for problem in conversion.problems] == [
        'spec["evil\\nkey"]: not a field of a CronJob\'s spec: left out'
    ]


ZONES = st.sampled_from(["UTC", "Europe/Copenhagen", "America/New_York", "Asia/Kolkata"])
SCHEDULES = st.sampled_from(
    ["30 2 * * *", "*/5 * * * *", "0 9 * * 1-5", "0 0 1 * ?", "@hourly", "@daily", "@yearly"]
)


@st.composite
def valid_cronjobs(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    schedule = draw(SCHEDULES)
    match draw(st.sampled_from(["none", "field", "prefix"])):
        case "field":
            spec["timeZone"] = draw(ZONES)
        case "prefix":
            schedule = f"{draw(st.sampled_from(['TZ=', 'CRON_TZ=']))}{draw(ZONES)} {schedule}"
    optional = {
        "concurrencyPolicy": st.sampled_from(["Allow", "Forbid", "Replace"]),
        "suspend": st.booleans(),
        "startingDeadlineSeconds": st.integers(1, 10**8),
        "successfulJobsHistoryLimit": st.integers(0, 100),
        "failedJobsHistoryLimit": st.integers(0, 100),
    }
    for key, values in optional.items():
        if draw(st.booleans()):
            spec[key] = draw(values)
    job_spec = dict(JOB_SPEC)
    if draw(st.booleans()):
        job_spec["activeDeadlineSeconds"] = draw(st.integers(1, 10**9))
    return cronjob(schedule=schedule, jobTemplate={"spec": job_spec}, **spec)


@settings(max_examples=200, deadline=None)
@given(source=valid_cronjobs())
def test_every_valid_cronjob_converts_whole_and_the_operator_accepts_it(
    source: dict[str, Any],
) -> None:
    conversion = converted(source)

    assert conversion.problems == ()
    assert conversion.scheduled_job is not None
