"""The generated CRD, applied to the real kube-apiserver, accepts and refuses what we designed.

Objects go through ``kubectl apply --server-side --validate=strict``, the way users apply them.
Every refusal is checked for the message users see, and against the operator's own reading
(``spec_parsing.parse_spec``), which must refuse the same object naming the same field: the API
server and the operator may not disagree about what a valid ScheduledJob is.

The CRD stays installed after this module: the session's cluster is throwaway, and other
modules may rely on the same CRD (they install it from the same file).
"""

import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from localcluster import LocalCluster, manifests
from punctual.api import models, planning, spec_parsing, status_models
from punctual.scheduling.errors import InvalidSpecError

T = TypeVar("T")

CRD_FILE = Path(__file__).resolve().parents[2] / "crds" / "scheduledjobs.punctual.dev.yaml"
FIELD_MANAGER = "punctual-crd-tests"
HTTP = {"http": {"url": "http://report-svc.reports.svc:8080/run"}}

DESIGN_EXAMPLE: dict[str, Any] = {
    "schedule": "30 2 * * *",
    "timeZone": "Europe/Copenhagen",
    "dst": {"nonexistent": "ShiftForward", "ambiguous": "First"},
    "jitter": "30s",
    "missedRuns": {"policy": "RunOnce", "maxCatchUp": 10, "startingDeadline": "5m"},
    "concurrencyPolicy": "Forbid",
    "maxQueued": 1,
    "timeout": "10m",
    "suspend": False,
    "history": {"succeeded": 3, "failed": 3},
    "target": {
        "http": {
            "url": "http://report-svc.reports.svc:8080/run",
            "method": "POST",
            "headers": {"X-Env": "prod"},
            "headersFrom": [{"secretRef": {"name": "report-token"}}],
            "body": '{"kind": "nightly"}',
            "successCodes": [200, 201, 202, 204],
        }
    },
}


def eventually(probe: Callable[[], T | None], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        assert time.monotonic() < deadline, f"no {what} after {timeout:.0f}s"
        time.sleep(0.5)


def manifest(namespace: str, name: str, spec: dict[str, Any]) -> str:
    return json.dumps(
        {
            "apiVersion": models.API_VERSION,
            "kind": models.KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    )


def apply(cluster: LocalCluster, document: str) -> "subprocess.CompletedProcess[str]":
    return cluster.kubectl(
        "apply",
        "--server-side",
        f"--field-manager={FIELD_MANAGER}",
        "--validate=strict",
        "-f",
        "-",
        input=document,
        check=False,
    )


def get_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


pytestmark = pytest.mark.usefixtures("crd_installed")


@pytest.fixture(scope="module")
def crd_installed(cluster: LocalCluster) -> str:
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}",
        "-f", str(CRD_FILE),
    )  # fmt: skip
    manifests.wait_established(cluster, [manifests.crd_name(CRD_FILE)])
    return "scheduledjobs.punctual.dev"


class TestTheApiServerTakesTheCrd:
    def test_it_is_established_and_served_under_its_short_name_and_category(
        self, cluster: LocalCluster
    ) -> None:
        resources = cluster.kubectl("api-resources", "--api-group=punctual.dev", "-o", "wide")
        # The group also serves Calendars once their CRD is installed (by another test of the
        # session's cluster): the ScheduledJob's row is the one checked here.
        [row] = [
            line for line in resources.stdout.splitlines()[1:] if line.split()[0] == "scheduledjobs"
        ]
        assert row.split()[:5] == [
            "scheduledjobs",
            "sj",
            "punctual.dev/v1alpha1",
            "true",
            "ScheduledJob",
        ]
        assert "punctual" in row.split()[-1]

    def test_the_cel_rules_compiled_within_the_cost_budget(
        self, cluster: LocalCluster, crd_installed: str
    ) -> None:
        conditions = get_json(cluster, "crd", crd_installed)["status"]["conditions"]
        by_type = {condition["type"]: condition["status"] for condition in conditions}
        assert by_type["Established"] == "True"
        assert by_type["NamesAccepted"] == "True"
        assert by_type.get("NonStructuralSchema", "False") == "False"


class TestValidObjectsAreAccepted:
    @pytest.mark.parametrize(
        "spec",
        [
            pytest.param(DESIGN_EXAMPLE, id="design-example"),
            pytest.param({"every": "10s", "target": HTTP}, id="minimal-every"),
            pytest.param(
                {
                    "schedule": "H H * * *",
                    "startsAt": "2026-07-01T00:00:00Z",
                    "endsAt": "2026-08-01T00:00:00Z",
                    "target": HTTP,
                },
                id="hashed-schedule-in-a-window",
            ),
            pytest.param({"startsAt": "2026-12-24T17:00:00Z", "target": HTTP}, id="one-off"),
            pytest.param(
                {
                    "schedule": "0 9 * * *",
                    "exclude": {
                        "dates": ["2026-12-24/2026-12-26", "2027-01-01"],
                        "days": ["* * SAT,SUN"],
                        "calendars": ["public-holidays"],
                        "timeZone": "Europe/Copenhagen",
                    },
                    "target": HTTP,
                },
                id="exclusions",
            ),
            pytest.param(
                {
                    "schedules": [
                        {"name": "hourly", "schedule": "0 * * * *"},
                        {
                            "name": "noon",
                            "schedule": "0 12 * * *",
                            "timeZone": "Europe/Copenhagen",
                            "dst": {"ambiguous": "Both"},
                        },
                        {"name": "halves", "every": "30m"},
                    ],
                    "target": HTTP,
                },
                id="several-schedules",
            ),
            pytest.param(
                {
                    "every": "1h30m",
                    "jitter": "250ms",
                    "concurrencyPolicy": "Queue",
                    "maxQueued": 3,
                    "target": {
                        "queue": {
                            "stream": "reports:jobs",
                            "payload": {"kind": "nightly", "nested": {"list": [1, "two"]}},
                            "maxLen": 10000,
                        }
                    },
                },
                id="queue",
            ),
            pytest.param(
                {
                    "schedule": "@hourly",
                    "missedRuns": {"policy": "CatchUp", "maxCatchUp": 1000},
                    "history": {"succeeded": 0, "failed": 100},
                    "target": {
                        "job": {
                            "template": {
                                "metadata": {"labels": {"team": "reports"}},
                                "spec": {
                                    "backoffLimit": 0,
                                    "template": {
                                        "spec": {
                                            "restartPolicy": "Never",
                                            "containers": [{"name": "report", "image": "r:1"}],
                                        }
                                    },
                                },
                            }
                        }
                    },
                },
                id="job",
            ),
        ],
    )
    def test_it_is_stored_and_reads_back_as_the_same_spec_with_defaults(
        self, cluster: LocalCluster, namespace: str, spec: dict[str, Any]
    ) -> None:
        result = apply(cluster, manifest(namespace, "valid", spec))
        assert result.returncode == 0, result.stderr

        stored = get_json(cluster, "sj", "valid", "-n", namespace)["spec"]
        # Free-form objects are kept verbatim, and the server's defaults are the models'.
        assert spec_parsing.parse_spec(stored) == spec_parsing.parse_spec(spec)
        planning.plan_for(
            spec_parsing.parse_spec(stored),
            uid=f"uid-of-{namespace}",
            hash_key=f"{namespace}/valid",
        )

    def test_the_api_server_fills_in_the_documented_defaults(
        self, cluster: LocalCluster, namespace: str
    ) -> None:
        apply(cluster, manifest(namespace, "defaults", {"schedule": "@daily", "target": HTTP}))

        stored = get_json(cluster, "sj", "defaults", "-n", namespace)["spec"]

        assert stored == {
            "schedule": "@daily",
            "timeZone": "UTC",
            "dst": {"nonexistent": "ShiftForward", "ambiguous": "First"},
            "missedRuns": {"policy": "RunOnce", "maxCatchUp": 10},
            "concurrencyPolicy": "Forbid",
            "maxQueued": 1,
            "timeout": "10m",
            "suspend": False,
            "retryLostRuns": False,
            "history": {"succeeded": 3, "failed": 3},
            "target": {"http": {"url": HTTP["http"]["url"], "method": "POST"}},
        }


SCHEDULE_ENTRY = {"name": "hourly", "schedule": "0 * * * *"}


class TestInvalidObjectsAreRefusedWithAUsefulMessage:
    @pytest.mark.parametrize(
        ("spec", "field", "messages"),
        [
            pytest.param(
                {"schedule": "@daily", "every": "10s", "target": HTTP},
                "spec.schedule",
                ["spec: Invalid value", "set exactly one of schedule (a cron expression) or every"],
                id="both-schedule-and-every",
            ),
            pytest.param(
                {"target": HTTP},
                "spec.schedule",
                ["spec: Invalid value", "set exactly one of schedule (a cron expression) or every"],
                id="neither-schedule-nor-every",
            ),
            pytest.param(
                {"every": "10s"},
                "spec.target",
                ["spec.target: Required value"],
                id="no-target",
            ),
            pytest.param(
                {"every": "10s", "target": {}},
                "spec.target",
                ["spec.target: Invalid value", "set exactly one of http, queue or job"],
                id="empty-target",
            ),
            pytest.param(
                {"every": "10s", "target": {**HTTP, "queue": {"stream": "s"}}},
                "spec.target",
                ["spec.target: Invalid value", "set exactly one of http, queue or job"],
                id="two-targets",
            ),
            pytest.param(
                {"every": "10s", "target": {"queue": {"stream": "}:stream:jobs"}}},
                "spec.target.queue.stream",
                ["spec.target.queue.stream: Invalid value", "should match"],
                id="a-stream-name-outside-the-safe-charset",
            ),
            pytest.param(
                {"every": "10s", "timeout": "-5s", "target": HTTP},
                "spec.timeout",
                ['spec.timeout: Invalid value: "-5s"', "must be a positive duration"],
                id="negative-timeout",
            ),
            pytest.param(
                {"every": "10s", "timeout": "0s", "target": HTTP},
                "spec.timeout",
                ['spec.timeout: Invalid value: "0s"', "must be a positive duration"],
                id="zero-timeout",
            ),
            pytest.param(
                {"every": "0s", "target": HTTP},
                "spec.every",
                ['spec.every: Invalid value: "0s"', "must be a positive duration"],
                id="zero-every",
            ),
            pytest.param(
                {"every": "10s", "jitter": "0ms", "target": HTTP},
                "spec.jitter",
                ['spec.jitter: Invalid value: "0ms"', "must be a positive duration"],
                id="zero-jitter",
            ),
            pytest.param(
                {"every": "10s", "missedRuns": {"startingDeadline": "0s"}, "target": HTTP},
                "spec.missedRuns.startingDeadline",
                ["spec.missedRuns.startingDeadline: Invalid value", "must be a positive duration"],
                id="zero-starting-deadline",
            ),
            pytest.param(
                {"every": "10s", "timeout": "10", "target": HTTP},
                "spec.timeout",
                ['spec.timeout: Invalid value: "10"', "should match '^([0-9]+(ms|h|m|s))+$'"],
                id="duration-without-unit",
            ),
            pytest.param(
                {"every": "10s", "timeout": "1.5s", "target": HTTP},
                "spec.timeout",
                ['spec.timeout: Invalid value: "1.5s"', "should match"],
                id="fractional-duration",
            ),
            pytest.param(
                {"every": "10s", "jitter": "10s", "target": HTTP},
                "spec.jitter",
                ["spec.jitter: Invalid value", "jitter must be shorter than every"],
                id="jitter-equal-to-every",
            ),
            pytest.param(
                {"every": "10s", "jitter": "1m", "target": HTTP},
                "spec.jitter",
                ["spec.jitter: Invalid value", "jitter must be shorter than every"],
                id="jitter-above-every",
            ),
            pytest.param(
                {
                    "every": "10s",
                    "startsAt": "2026-07-01T00:00:00Z",
                    "endsAt": "2026-07-01T02:00:00+02:00",
                    "target": HTTP,
                },
                "spec.endsAt",
                ["spec.endsAt: Invalid value", "endsAt must be after startsAt"],
                id="an-empty-window",
            ),
            pytest.param(
                {"endsAt": "2026-07-01T00:00:00Z", "target": HTTP},
                "spec.schedule",
                ["spec: Invalid value", "or neither with startsAt for a one-off run"],
                id="an-end-alone",
            ),
            pytest.param(
                {"every": "10s", "startsAt": "2026-07-01T00:00:00", "target": HTTP},
                "spec.startsAt",
                ["spec.startsAt: Invalid value", "should match"],
                id="a-start-without-an-offset",
            ),
            pytest.param(
                {"schedule": "@daily", "schedules": [SCHEDULE_ENTRY], "target": HTTP},
                "spec.schedule",
                ["spec: Invalid value", "or schedules (several named ones)"],
                id="schedule-beside-schedules",
            ),
            pytest.param(
                {
                    "schedules": [SCHEDULE_ENTRY, {**SCHEDULE_ENTRY, "name": "b", "every": "1h"}],
                    "target": HTTP,
                },
                "spec.schedules[1].schedule",
                ["spec.schedules[1]: Invalid value", "set exactly one of schedule"],
                id="an-entry-with-schedule-and-every",
            ),
            pytest.param(
                {
                    "schedules": [SCHEDULE_ENTRY, {"name": "hourly", "every": "1h"}],
                    "target": HTTP,
                },
                "spec.schedules[1].name",
                ['.spec.schedules: duplicate entries for key [name="hourly"]'],
                id="an-entry-name-twice",
            ),
            pytest.param(
                {"schedules": [{**SCHEDULE_ENTRY, "name": "Hourly"}], "target": HTTP},
                "spec.schedules[0].name",
                ['spec.schedules[0].name: Invalid value: "Hourly"', "should match"],
                id="an-entry-name-that-is-no-dns-label",
            ),
            pytest.param(
                {"every": "10s", "exclude": {"dates": ["25.12.2026"]}, "target": HTTP},
                "spec.exclude.dates[0]",
                ['spec.exclude.dates[0]: Invalid value: "25.12.2026"', "should match"],
                id="an-excluded-date-that-is-no-date",
            ),
            pytest.param(
                {"every": "10s", "exclude": {"calendars": ["Holidays"]}, "target": HTTP},
                "spec.exclude.calendars[0]",
                ['spec.exclude.calendars[0]: Invalid value: "Holidays"', "should match"],
                id="a-calendar-name-that-is-no-object-name",
            ),
            pytest.param(
                {"every": "10s", "bogus": True, "target": HTTP},
                "spec.bogus",
                [".spec.bogus: field not declared in schema"],
                id="unknown-field",
            ),
            pytest.param(
                {"every": "10s", "target": {"http": {**HTTP["http"], "verb": "GET"}}},
                "spec.target.http.verb",
                [".spec.target.http.verb: field not declared in schema"],
                id="unknown-nested-field",
            ),
            pytest.param(
                {"every": "10s", "concurrencyPolicy": "Sometimes", "target": HTTP},
                "spec.concurrencyPolicy",
                [
                    'spec.concurrencyPolicy: Unsupported value: "Sometimes"',
                    'supported values: "Forbid", "Allow", "Replace", "Queue"',
                ],
                id="bad-enum-value",
            ),
            pytest.param(
                {"every": "10s", "missedRuns": {"policy": "Always"}, "target": HTTP},
                "spec.missedRuns.policy",
                ['spec.missedRuns.policy: Unsupported value: "Always"'],
                id="bad-nested-enum-value",
            ),
            pytest.param(
                {"every": "10s", "maxQueued": 0, "target": HTTP},
                "spec.maxQueued",
                ["spec.maxQueued: Invalid value: 0", "greater than or equal to 1"],
                id="below-minimum",
            ),
            pytest.param(
                {"every": "10s", "missedRuns": {"maxCatchUp": 1.5}, "target": HTTP},
                "spec.missedRuns.maxCatchUp",
                ["spec.missedRuns.maxCatchUp: Invalid value", "integer"],
                id="float-for-an-integer",
            ),
            pytest.param(
                {"every": "10s", "target": {"http": {"url": "ftp://files/x"}}},
                "spec.target.http.url",
                ['spec.target.http.url: Invalid value: "ftp://files/x"', "should match"],
                id="url-not-http",
            ),
        ],
    )
    def test_it_is_refused_and_the_operator_refuses_it_on_the_same_field(
        self,
        cluster: LocalCluster,
        namespace: str,
        spec: dict[str, Any],
        field: str,
        messages: list[str],
    ) -> None:
        result = apply(cluster, manifest(namespace, "invalid", spec))

        assert result.returncode != 0, "the API server accepted it"
        for message in messages:
            assert message in result.stderr
        assert "type conversion error" not in result.stderr
        not_stored = cluster.kubectl("get", "sj", "invalid", "-n", namespace, check=False)
        assert "NotFound" in not_stored.stderr
        with pytest.raises(InvalidSpecError) as caught:
            spec_parsing.parse_spec(spec)
        assert caught.value.field == field


class TestStatusAndColumns:
    def test_status_written_through_the_subresource_shows_in_the_columns(
        self, cluster: LocalCluster, namespace: str
    ) -> None:
        apply(cluster, manifest(namespace, "nightly", DESIGN_EXAMPLE))
        status = status_models.ScheduledJobStatus.model_validate(
            {
                "observedGeneration": 1,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "Scheduled",
                        "message": "armed",
                        "lastTransitionTime": "2026-11-30T01:00:00Z",
                        "observedGeneration": 1,
                    }
                ],
                "schedule": "30 2 * * *",
                "target": "http",
                "nextRunTime": "2026-12-01T01:30:12Z",
                "lastScheduleTime": "2026-11-30T01:30:00Z",
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
                "counts": {"succeeded": 1},
            }
        )
        patch = {"status": status.model_dump(mode="json", exclude_none=True)}

        cluster.kubectl(
            "patch", "sj", "nightly", "-n", namespace, "--subresource=status",
            "--type=merge", "-p", json.dumps(patch),
        )  # fmt: skip

        stored = get_json(cluster, "sj", "nightly", "-n", namespace)["status"]
        assert status_models.ScheduledJobStatus.model_validate(stored) == status
        table = cluster.kubectl("get", "sj", "nightly", "-n", namespace).stdout.splitlines()
        assert re.split(r"\s{2,}", table[0].strip()) == [
            "NAME", "SCHEDULE", "TARGET", "SUSPEND", "ACTIVE", "NEXT", "LAST", "LATENESS(MS)",
            "LAST RESULT", "READY",
        ]  # fmt: skip
        row = table[1]
        for value in ("30 2 * * *", "http", "false", "2026-12-01T01:30:12Z"):
            assert value in row
        assert row[table[0].index("ACTIVE") : table[0].index("NEXT")].strip() == ""  # none runs
        assert row.split()[-3:] == ["3", "Succeeded", "True"]
        wide = cluster.kubectl("get", "sj", "nightly", "-n", namespace, "-o", "wide").stdout
        header, row = wide.splitlines()
        assert re.split(r"\s{2,}", header.strip()) == [
            "NAME", "SCHEDULE", "TARGET", "TIMEZONE", "SUSPEND", "ACTIVE", "NEXT", "LAST",
            "LATENESS(MS)", "LAST RESULT", "READY", "AGE",
        ]  # fmt: skip
        assert "Europe/Copenhagen" in row

        # No length() in Kubernetes JSONPath: ACTIVE is the age of the first active run's slot.
        running = {"slot": "2026-11-30T01:30:00Z", "startedAt": "2026-11-30T01:30:12Z"}
        cluster.kubectl(
            "patch", "sj", "nightly", "-n", namespace, "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {"active": [{**running, "replica": "r1"}]}}),
        )  # fmt: skip
        header, row = cluster.kubectl("get", "sj", "nightly", "-n", namespace).stdout.splitlines()
        active = row[header.index("ACTIVE") : header.index("NEXT")].strip()
        assert re.fullmatch(r"\d+[smhdy]\w*", active), row

    def test_status_with_a_bad_result_is_refused(
        self, cluster: LocalCluster, namespace: str
    ) -> None:
        apply(cluster, manifest(namespace, "bad-status", {"every": "1m", "target": HTTP}))
        patch = {
            "status": {
                "lastRun": {
                    "slot": "2026-11-30T01:30:00Z",
                    "scheduledTime": "2026-11-30T01:30:00Z",
                    "result": "Exploded",
                }
            }
        }

        result = cluster.kubectl(
            "patch", "sj", "bad-status", "-n", namespace, "--subresource=status",
            "--type=merge", "-p", json.dumps(patch), check=False,
        )  # fmt: skip

        assert result.returncode != 0
        assert 'status.lastRun.result: Unsupported value: "Exploded"' in result.stderr

    def test_a_spec_write_does_not_touch_status_and_bumps_the_generation(
        self, cluster: LocalCluster, namespace: str
    ) -> None:
        apply(cluster, manifest(namespace, "gen", {"every": "1m", "target": HTTP}))
        before = get_json(cluster, "sj", "gen", "-n", namespace)["metadata"]["generation"]

        with_status = json.loads(manifest(namespace, "gen", {"every": "2m", "target": HTTP}))
        with_status["status"] = {"observedGeneration": 99}
        apply(cluster, json.dumps(with_status))

        stored = get_json(cluster, "sj", "gen", "-n", namespace)
        assert stored["metadata"]["generation"] == before + 1
        assert "observedGeneration" not in stored.get("status", {})


class TestKubectlExplainShowsTheDescriptions:
    def test_explain_missed_runs(self, cluster: LocalCluster) -> None:
        # The API server publishes a new CRD's OpenAPI a moment after it is Established.
        def explained() -> str | None:
            result = cluster.kubectl("explain", "scheduledjob.spec.missedRuns", check=False)
            return (
                result.stdout if result.returncode == 0 and "maxCatchUp" in result.stdout else None
            )

        text = " ".join(eventually(explained, timeout=60, what="kubectl explain output").split())

        assert "What happens to slots that came due while no replica could run them" in text
        for field in ("policy", "maxCatchUp", "startingDeadline"):
            assert field in text
        assert "enum: Skip, RunOnce, CatchUp" in text
        assert "RunOnce (default): run the newest missed slot once, now." in text
        assert "counted as missed instead of running late" in text

    def test_explain_the_short_name_reaches_the_top_level_description(
        self, cluster: LocalCluster
    ) -> None:
        def explained() -> str | None:
            result = cluster.kubectl("explain", "sj.spec", check=False)
            return result.stdout if result.returncode == 0 and "schedule" in result.stdout else None

        text = " ".join(eventually(explained, timeout=60, what="kubectl explain output").split())

        assert "concurrencyPolicy" in text
        assert "At most one of schedule or every" in text
