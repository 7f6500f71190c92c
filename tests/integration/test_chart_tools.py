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
  kubeconform's own are (no field they do not describe), and for the custom resources of the
  Prometheus Operator and cert-manager from their real CRDs (``hack/build-chart-crds.sh``: from
  their Go modules), as kubeconform's ``openapi2jsonschema.py`` makes them.
- The API server itself, with those CRDs installed, validates the same custom resources in a
  server-side dry run, unknown fields refused.
"""

import json
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_harness import Helm, eventually, install_crds, one, third_party_crds
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
THIRD_PARTY_CASES = ("monitoring", "conventions", "webhook-cert-manager")
"""The value sets that render the Prometheus Operator's and cert-manager's kinds between them."""
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


@pytest.fixture(scope="module")
def chart_crds() -> list[dict[str, Any]]:
    return third_party_crds()


@pytest.fixture(scope="module")
def installed_chart_crds(cluster: LocalCluster, chart_crds: list[dict[str, Any]]) -> Iterator[None]:
    """Those CRDs on the API server, for this module's tests alone."""
    names = install_crds(cluster, chart_crds)
    yield
    # Not waited for: the session's API server may take longer than a kubectl call allows to
    # finish a CRD's deletion, and no later test depends on these kinds being gone.
    cluster.kubectl("delete", "--wait=false", *names)


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


SCHEMA_LOCATION = "{{ .ResourceKind }}{{ .KindSuffix }}.json"


def schema_file(folder: Path, *, kind: str, group: str, version: str) -> Path:
    """Where kubeconform looks a kind's schema up in ``folder`` with ``SCHEMA_LOCATION``:
    ``{kind}-{group's first part}-{version}.json``, ``{kind}-{version}.json`` for the core
    group (openapi2jsonschema.py's ``FILENAME_FORMAT={kind}-{group}-{version}``)."""
    suffix = f"-{group.split('.', maxsplit=1)[0]}-{version}" if group else f"-{version}"
    return folder / f"{kind.lower()}{suffix}.json"


def write_schemas(
    cluster: LocalCluster,
    objects: list[Mapping[str, Any]],
    folder: Path,
    *,
    crds: Sequence[Mapping[str, Any]],
) -> None:
    """One standalone JSON schema per kind of ``objects``: from the CRD among ``crds`` that
    defines it, as kubeconform's ``openapi2jsonschema.py`` makes one (the version's
    ``openAPIV3Schema``, closed as ``strict`` closes the API server's), or else the component of
    the API server's OpenAPI v3 document of its group and version that has its
    group-version-kind, with the document's other components beside it for its $refs."""
    kinds: dict[str, set[str]] = {}
    for o in objects:
        kinds.setdefault(o["apiVersion"], set()).add(o["kind"])
    for crd in crds:
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            kinds.pop(f"{group}/{version['name']}", None)
            schema = strict(version["schema"]["openAPIV3Schema"])
            path = schema_file(folder, kind=kind, group=group, version=version["name"])
            path.write_text(json.dumps(schema))
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
                standalone = {"$ref": f"#/components/schemas/{name}", "components": components}
                path = schema_file(folder, kind=gvk["kind"], group=group, version=version)
                path.write_text(json.dumps(standalone))


def kubeconform_strict(
    kubeconform: Path, schemas: Path, objects: list[dict[str, Any]]
) -> "subprocess.CompletedProcess[str]":
    return run(
        kubeconform,
        "-strict",
        "-summary",
        "-output=json",
        f"-schema-location={schemas}/{SCHEMA_LOCATION}",
        stdin="\n---\n".join(yaml.safe_dump(o) for o in objects),
    )


@pytest.mark.parametrize("case", KUBECONFORM_CASES)
def test_kubeconform_strict_accepts_every_rendered_object(  # noqa: PLR0917 - fixtures
    helm: Helm,
    cluster: LocalCluster,
    kubeconform: Path,
    chart_crds: list[dict[str, Any]],
    tmp_path: Path,
    case: str,
) -> None:
    objects = helm.template(MATRIX[case], namespace=NAMESPACE, include_crds=True)
    write_schemas(cluster, objects, tmp_path, crds=chart_crds)

    result = kubeconform_strict(kubeconform, tmp_path, objects)

    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout)["summary"]
    assert summary["valid"] == len(objects), summary
    assert summary["skipped"] == 0, summary


def misspelt(o: dict[str, Any]) -> dict[str, Any]:
    """``o`` with a field its kind does not have, deep in its spec: a ServiceMonitor's or
    PodMonitor's first endpoint's, a PrometheusRule's first rule's, a Certificate's or Issuer's
    own spec's, a Deployment's first container's."""
    spec = o["spec"]
    if o["kind"] == "ServiceMonitor":
        spec["endpoints"][0]["intervall"] = "30s"
    elif o["kind"] == "PodMonitor":
        spec["podMetricsEndpoints"][0]["intervall"] = "30s"
    elif o["kind"] == "PrometheusRule":
        spec["groups"][0]["rules"][0]["fore"] = "5m"
    elif o["kind"] in {"Certificate", "Issuer"}:
        spec["commonNames"] = ["punctual"]
    else:
        spec["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    return o


THIRD_PARTY_KINDS = ("ServiceMonitor", "PodMonitor", "PrometheusRule", "Certificate", "Issuer")


def third_party_objects(helm: Helm) -> list[dict[str, Any]]:
    """Every object of the Prometheus Operator's and cert-manager's kinds the chart renders,
    across ``THIRD_PARTY_CASES``: each of ``THIRD_PARTY_KINDS`` at least once."""
    objects = [
        o
        for case in THIRD_PARTY_CASES
        for o in helm.template(MATRIX[case], namespace=NAMESPACE)
        if o["kind"] in THIRD_PARTY_KINDS
    ]
    assert {o["kind"] for o in objects} == set(THIRD_PARTY_KINDS)
    return objects


@pytest.mark.parametrize("kind", ["Deployment", *THIRD_PARTY_KINDS])
def test_kubeconform_strict_refuses_a_field_the_kind_does_not_have(  # noqa: PLR0917 - fixtures
    helm: Helm,
    cluster: LocalCluster,
    kubeconform: Path,
    chart_crds: list[dict[str, Any]],
    tmp_path: Path,
    kind: str,
) -> None:
    # The schemas are the API server's and the real CRDs', closed: a placeholder CRD's schema,
    # which accepts anything, would let these through.
    rendered = [*helm.template({}, namespace=NAMESPACE), *third_party_objects(helm)]
    wrong = misspelt(next(o for o in rendered if o["kind"] == kind))
    write_schemas(cluster, [wrong], tmp_path, crds=chart_crds)

    result = kubeconform_strict(kubeconform, tmp_path, [wrong])

    assert result.returncode == 1
    assert json.loads(result.stdout)["summary"]["invalid"] == 1, result.stdout


# -- the API server, with the real CRDs ------------------------------------------------------------


def dry_run(
    cluster: LocalCluster, objects: list[dict[str, Any]]
) -> "subprocess.CompletedProcess[str]":
    """``kubectl apply --dry-run=server``: the API server validates each object (schema,
    admission) without storing it, and refuses fields its schema does not have."""
    return cluster.kubectl(
        "apply",
        "--dry-run=server",
        "--validate=strict",
        "-f",
        "-",
        input="\n---\n".join(json.dumps(o) for o in objects),
        check=False,
    )


@pytest.fixture(scope="module")
def release_namespaces(cluster: LocalCluster, helm: Helm) -> None:
    """The namespaces the third-party objects are rendered into (one case moves them with
    ``namespaceOverride``)."""
    for name in sorted({o["metadata"]["namespace"] for o in third_party_objects(helm)}):
        cluster.kubectl("create", "namespace", name)


@pytest.mark.usefixtures("installed_chart_crds", "release_namespaces")
@pytest.mark.parametrize("case", THIRD_PARTY_CASES)
def test_the_api_server_accepts_the_monitoring_and_cert_manager_objects_under_the_real_crds(
    helm: Helm, cluster: LocalCluster, case: str
) -> None:
    objects = [
        o
        for o in helm.template(MATRIX[case], namespace=NAMESPACE)
        if o["kind"] in THIRD_PARTY_KINDS
    ]

    result = dry_run(cluster, objects)

    assert objects
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.strip().splitlines()) == len(objects), result.stdout


@pytest.mark.usefixtures("installed_chart_crds", "release_namespaces")
@pytest.mark.parametrize("kind", THIRD_PARTY_KINDS)
def test_the_api_server_refuses_a_field_the_real_crd_does_not_have(
    helm: Helm, cluster: LocalCluster, kind: str
) -> None:
    wrong = misspelt(next(o for o in third_party_objects(helm) if o["kind"] == kind))

    result = dry_run(cluster, [wrong])

    assert result.returncode != 0
    assert "unknown field" in result.stderr, result.stderr
