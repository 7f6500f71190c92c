"""The chart's output read by the tools that consume it, built here from their Go modules
(``hack/build-go-tools.sh``, versions in ``hack/programs.tsv``).

- ``promtool check metrics`` lints what a live replica serves on ``/metrics`` (names, types, help)
  after it has run a job, as Prometheus' own conventions have it.
- ``promtool check rules`` loads the rendered PrometheusRule's groups as Prometheus would, and
  ``promtool test rules`` plays series into them: each alert fires on a series that should fire
  it (the operator absent, a job that never succeeded, a job failing, lateness p99 high, the lock
  backend down, a job not Ready) and stays silent on its neighbour that should not. The test copy
  of the rules has no annotations: promtool compares them whole, templates expanded, and what is
  tested here is when each alert fires; ``check rules`` checks the annotations' templates.
- ``kubeconform -strict`` validates the rendered objects of several value sets against JSON
  schemas made from this API server's own OpenAPI documents (``/openapi/v3``), made strict as
  kubeconform's own are (no field they do not describe). The custom resources of the Prometheus
  Operator and cert-manager are skipped (``SKIPPED_KINDS``): the harness installs placeholder
  CRDs for them, whose schemas accept anything, so validating against them would prove nothing.
"""

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_harness import Helm, eventually, one
from operator_harness import Operators, Receiver, apply, http_target, scheduled_job
from test_helm_chart import MATRIX

from localcluster import LocalCluster
from localcluster.binaries import locate_go_tool

pytest_plugins = ["operator_fixtures"]

NAMESPACE = "punctual-system"
ALERTING_VALUES: dict[str, Any] = {
    "metrics": {
        "serviceMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True},
        "kubeStateMetrics": {"enabled": True},
    }
}
KUBECONFORM_CASES = (
    "defaults",
    "namespaced",
    "bundled-redis-existing-secret-network-policy",
    "sentinel-redis",
    "monitoring",
    "conventions",
    "custom-resources",
    "templated-crd",
    "webhook-cert-manager",
    "webhook-for-the-control-plane-only",
)
SKIPPED_KINDS = ("ServiceMonitor", "PodMonitor", "PrometheusRule", "Certificate", "Issuer")
TOOL_TIMEOUT = 120


@pytest.fixture(scope="module")
def helm(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(cluster, tmp_path_factory.mktemp("helm-home"))


@pytest.fixture(scope="module")
def promtool() -> Path:
    return locate_go_tool("promtool")


@pytest.fixture(scope="module")
def kubeconform() -> Path:
    return locate_go_tool("kubeconform")


def run(tool: Path, *args: str, stdin: str | None = None) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(
        [str(tool), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT,
        check=False,
    )


# -- promtool --------------------------------------------------------------------------------------


def test_promtool_accepts_what_a_live_replica_serves_on_metrics(  # noqa: PLR0917 - fixtures
    promtool: Path,
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    receiver: Receiver,
    tmp_path: Path,
) -> None:
    target = http_target(receiver, module_namespace, "tick")
    with Operators(cluster, tmp_path, namespace=module_namespace) as operators:
        apply(cluster, scheduled_job(module_namespace, "tick", {"every": "1s", "target": target}))

        def after_a_success() -> str | None:
            served = operators["r1"].metrics()
            succeeded = [
                line
                for line in served.splitlines()
                if line.startswith("punctual_runs_total{") and 'result="Succeeded"' in line
            ]
            return served if any(float(line.split()[-1]) >= 1 for line in succeeded) else None

        served = eventually(after_a_success, timeout=60, what="a successful run on /metrics")

    result = run(promtool, "check", "metrics", stdin=served)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "punctual_runs_total" in served


@pytest.fixture(scope="module")
def rule_groups(helm: Helm) -> list[dict[str, Any]]:
    """The groups of the rendered PrometheusRule: a Prometheus rule file's content."""
    rule = one(helm.template(ALERTING_VALUES, namespace=NAMESPACE), "PrometheusRule")
    return list(rule["spec"]["groups"])


def test_promtool_loads_the_rendered_rules(
    promtool: Path, rule_groups: list[dict[str, Any]], tmp_path: Path
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule_groups}))

    result = run(promtool, "check", "rules", str(rules))

    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 9 rules found" in result.stdout


CRITICAL = {"PunctualOperatorAbsent", "PunctualLockBackendDown"}


def expect(name: str, at: str, *alerts: dict[str, str]) -> dict[str, Any]:
    """At ``at``, alert ``name`` fires once for each of ``alerts`` (the labels the expression
    keeps; the rule adds its severity), and for nothing else."""
    severity = "critical" if name in CRITICAL else "warning"
    return {
        "eval_time": at,
        "alertname": name,
        "exp_alerts": [{"exp_labels": {**labels, "severity": severity}} for labels in alerts],
    }


def series(selector: str, values: str) -> dict[str, str]:
    return {"series": selector, "values": values}


OURS = f'namespace="{NAMESPACE}"'
RULE_TESTS: list[dict[str, Any]] = [
    {
        "name": "the operator absent: its last replica stops being up, and then no series at all",
        "input_series": [series(f'up{{job="punctual",{OURS},pod="a"}}', "1x4 0x10 _x10")],
        "alert_rule_test": [
            expect("PunctualOperatorAbsent", "4m"),
            expect("PunctualOperatorAbsent", "8m"),  # down, not yet for 5m
            expect("PunctualOperatorAbsent", "12m", {"job": "punctual", "namespace": NAMESPACE}),
            expect("PunctualOperatorAbsent", "22m", {"job": "punctual", "namespace": NAMESPACE}),
        ],
    },
    {
        "name": "the operator up, and another release's replica down: silent",
        "input_series": [
            series(f'up{{job="punctual",{OURS},pod="a"}}', "1x20"),
            series(f'up{{job="other-punctual",{OURS},pod="b"}}', "0x20"),
        ],
        "alert_rule_test": [expect("PunctualOperatorAbsent", "15m")],
    },
    {
        "name": "a job that never succeeded fires; one that did, and a suspended one, do not",
        "input_series": [
            series(
                'kube_scheduledjob_status_runs{namespace="team",scheduledjob="broken",result="failed"}',
                "0+1x20",
            ),
            series(
                'kube_scheduledjob_status_runs{namespace="team",scheduledjob="broken",result="succeeded"}',
                "0x20",
            ),
            series(
                'kube_scheduledjob_status_runs{namespace="team",scheduledjob="fine",result="failed"}',
                "0+1x20",
            ),
            series(
                'kube_scheduledjob_status_runs{namespace="team",scheduledjob="fine",result="succeeded"}',
                "0 0 1x18",
            ),
            series(
                'kube_scheduledjob_status_runs{namespace="team",scheduledjob="paused",result="missed"}',
                "0+1x20",
            ),
            series(
                'kube_scheduledjob_status_condition{namespace="team",scheduledjob="paused",type="Suspended",status="True",reason="Suspended"}',
                "1x20",
            ),
        ],
        "alert_rule_test": [
            expect("PunctualJobNeverSucceeded", "6m"),  # 3 slots at 3m, not yet for 5m
            expect(
                "PunctualJobNeverSucceeded",
                "10m",
                {"namespace": "team", "scheduledjob": "broken"},
            ),
        ],
    },
    {
        "name": "runs failing fire within the window, not after it nor for successes",
        "input_series": [
            series(f'punctual_runs_total{{{OURS},pod="a",result="Failed"}}', "0 0 0 1x40"),
            series(f'punctual_runs_total{{{OURS},pod="a",result="TimedOut"}}', "0x40"),
            series(f'punctual_runs_total{{{OURS},pod="a",result="Succeeded"}}', "0+5x40"),
        ],
        "alert_rule_test": [
            expect("PunctualRunsFailing", "2m"),
            expect("PunctualRunsFailing", "5m", {"namespace": NAMESPACE, "result": "Failed"}),
            expect("PunctualRunsFailing", "30m"),  # the failure is older than the 15m window
        ],
    },
    {
        "name": "lateness p99 above 1s for 10m fires",
        "input_series": [
            series(f'punctual_run_lateness_seconds_bucket{{{OURS},pod="a",le="0.1"}}', "0x30"),
            series(f'punctual_run_lateness_seconds_bucket{{{OURS},pod="a",le="1"}}', "0x30"),
            series(f'punctual_run_lateness_seconds_bucket{{{OURS},pod="a",le="5"}}', "0+10x30"),
            series(f'punctual_run_lateness_seconds_bucket{{{OURS},pod="a",le="+Inf"}}', "0+10x30"),
        ],
        "alert_rule_test": [
            expect("PunctualRunLatenessHigh", "8m"),  # high, not yet for 10m
            expect("PunctualRunLatenessHigh", "20m", {"namespace": NAMESPACE}),
        ],
    },
    {
        "name": "lateness p99 under 1s stays silent",
        "input_series": [
            series(f'punctual_run_lateness_seconds_bucket{{{OURS},pod="a",le="0.1"}}', "0+10x30"),
            series(f'punctual_run_lateness_seconds_bucket{{{OURS},pod="a",le="+Inf"}}', "0+10x30"),
        ],
        "alert_rule_test": [expect("PunctualRunLatenessHigh", "20m")],
    },
    {
        "name": "the replica that cannot reach its lock backend fires, the other does not",
        "input_series": [
            series(f'punctual_lock_backend_up{{{OURS},pod="a",backend="redis"}}', "1 1 0x10"),
            series(f'punctual_lock_backend_up{{{OURS},pod="b",backend="redis"}}', "1x12"),
        ],
        "alert_rule_test": [
            expect("PunctualLockBackendDown", "1m"),
            expect(
                "PunctualLockBackendDown",
                "5m",
                {"namespace": NAMESPACE, "pod": "a", "backend": "redis"},
            ),
        ],
    },
    {
        "name": "a job Ready=False for 10m fires, a Ready one does not",
        "input_series": [
            series(
                'kube_scheduledjob_status_condition{namespace="team",scheduledjob="bad",type="Ready",status="False",reason="InvalidSpec"}',
                "1x20",
            ),
            series(
                'kube_scheduledjob_status_condition{namespace="team",scheduledjob="good",type="Ready",status="True",reason="Scheduled"}',
                "1x20",
            ),
        ],
        "alert_rule_test": [
            expect("PunctualJobNotReady", "5m"),
            expect(
                "PunctualJobNotReady",
                "15m",
                {"namespace": "team", "scheduledjob": "bad", "reason": "InvalidSpec"},
            ),
        ],
    },
]


def without_annotations(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **group,
            "rules": [
                {key: value for key, value in rule.items() if key != "annotations"}
                for rule in group["rules"]
            ],
        }
        for group in groups
    ]


def test_each_alert_fires_on_what_should_fire_it_and_only_on_that(
    promtool: Path, rule_groups: list[dict[str, Any]], tmp_path: Path
) -> None:
    (tmp_path / "rules.yaml").write_text(
        yaml.safe_dump({"groups": without_annotations(rule_groups)})
    )
    suite = tmp_path / "tests.yaml"
    suite.write_text(
        yaml.safe_dump(
            {
                "rule_files": ["rules.yaml"],
                "evaluation_interval": "1m",
                "tests": [{"interval": "1m", **test} for test in RULE_TESTS],
            }
        )
    )
    tested = {case["alertname"] for test in RULE_TESTS for case in test["alert_rule_test"]}

    result = run(promtool, "test", "rules", str(suite))

    assert result.returncode == 0, result.stdout + result.stderr
    alerts = {rule["alert"] for group in rule_groups for rule in group["rules"]}
    assert alerts - tested == {
        "PunctualRunsLost",
        "PunctualSlotsMissed",
        "PunctualJobNoRecentSuccess",
    }


# -- kubeconform -----------------------------------------------------------------------------------


def strict(schema: Any) -> Any:
    """The schema refusing fields it does not describe, as kubeconform's -strict schemas do:
    every object with properties and no additionalProperties of its own gets
    ``additionalProperties: false``, unless Kubernetes keeps unknown fields there."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    closed = {key: strict(value) for key, value in schema.items()}
    if (
        "properties" in closed
        and "additionalProperties" not in closed
        and not closed.get("x-kubernetes-preserve-unknown-fields")
    ):
        closed["additionalProperties"] = False
    return closed


def write_schemas(cluster: LocalCluster, objects: list[Mapping[str, Any]], folder: Path) -> None:
    """One standalone JSON schema per kind of ``objects``, named as kubeconform looks them up
    (``{kind}-{group's first part}-{version}.json``, ``{kind}-{version}.json`` for the core
    group): the component of the API server's OpenAPI v3 document of its group and version
    that has its group-version-kind, with the document's other components beside it for its
    $refs."""
    kinds: dict[str, set[str]] = {}
    for o in objects:
        kinds.setdefault(o["apiVersion"], set()).add(o["kind"])
    for api_version, names in kinds.items():
        path = "api/v1" if api_version == "v1" else f"apis/{api_version}"
        document = json.loads(cluster.kubectl("get", "--raw", f"/openapi/v3/{path}").stdout)
        components = strict(document["components"])
        group, _, version = api_version.rpartition("/")
        for name, schema in document["components"]["schemas"].items():
            for gvk in schema.get("x-kubernetes-group-version-kind", []):
                if (gvk["group"], gvk["version"], gvk["kind"]) != (group, version, gvk["kind"]):
                    continue
                if gvk["kind"] not in names:
                    continue
                suffix = f"-{group.split('.')[0]}-{version}" if group else f"-{version}"
                standalone = {"$ref": f"#/components/schemas/{name}", "components": components}
                (folder / f"{gvk['kind'].lower()}{suffix}.json").write_text(json.dumps(standalone))


@pytest.mark.parametrize("case", KUBECONFORM_CASES)
def test_kubeconform_strict_accepts_every_rendered_object(
    helm: Helm, cluster: LocalCluster, kubeconform: Path, tmp_path: Path, case: str
) -> None:
    objects = helm.template(MATRIX[case], namespace=NAMESPACE, include_crds=True)
    validated = [o for o in objects if o["kind"] not in SKIPPED_KINDS]
    write_schemas(cluster, validated, tmp_path)

    result = run(
        kubeconform,
        "-strict",
        "-summary",
        "-output=json",
        f"-schema-location={tmp_path}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json",
        f"-skip={','.join(SKIPPED_KINDS)}",
        stdin="\n---\n".join(yaml.safe_dump(o) for o in objects),
    )

    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout)["summary"]
    assert summary["valid"] == len(validated), summary
    assert summary["skipped"] == len(objects) - len(validated), summary


def test_kubeconform_strict_refuses_a_field_the_api_server_does_not_know(
    helm: Helm, cluster: LocalCluster, kubeconform: Path, tmp_path: Path
) -> None:
    # The schemas are the API server's and closed: a misspelt field deep in a pod is refused.
    deployment = one(helm.template({}, namespace=NAMESPACE), "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    write_schemas(cluster, [deployment], tmp_path)

    result = run(
        kubeconform,
        "-strict",
        f"-schema-location={tmp_path}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json",
        stdin=yaml.safe_dump(deployment),
    )

    assert result.returncode == 1
    assert "readinesProbe" in result.stdout
