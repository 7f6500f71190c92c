"""The Helm chart (``charts/punctual``) against a real control plane.

- Rendering: ``helm lint --strict`` and ``helm template`` over a matrix of documented option
  combinations; every rendered object passes ``kubectl apply --dry-run=server`` (the API
  server's own validation, admission included); the schema refuses unknown values; the chart
  refuses contradictory settings.
- Life cycle: ``helm install`` installs the CRD and the operator's Deployment becomes Available
  (kwok plays kubelet: its ``pod-running`` stage makes any pod bound to the fake node Running and
  Ready whatever its image, so the unpullable image does not matter); ``helm upgrade`` applies a
  changed value; ``helm uninstall`` leaves nothing but the CRD.
- The bundled Redis: rendered twice with ``helm template`` (Argo CD), the operator and Redis read
  the same password and carry the same hash of it; with ``redis.bundled.auth.existingSecret``
  every render is the same, and ``helm upgrade`` after a new password rolls both; Redis' start
  command, as rendered, runs here and takes the password the operator's URL carries.
- The Sentinel-managed bundled Redis (``redis.bundled.sentinel.enabled``): a StatefulSet of three
  members, each a server and a Sentinel named by its pod's DNS name, its servers refusing writes
  without a replica; the operator's URL names the three Sentinels and its claims wait for a
  replica; spread, disruption budget and NetworkPolicy.
- The templated CRD (``crds.install``) is the ``crds/`` file; a CRD installed from ``crds/`` is
  refused until adopted as documented, then upgraded, then kept on uninstall.
- The built-in ``view``/``edit``/``admin`` roles include ScheduledJobs (aggregation, for real).
- The ``helm test`` script, as rendered, passes against the operator with its own Role.
- RBAC: ``kubectl auth can-i`` as the chart's ServiceAccount says yes to every call the
  operator makes and no to a list it must not make, cluster-wide and in namespaced mode; then the
  operator itself runs as a local process with a token of that ServiceAccount, and a 2-second
  ScheduledJob with an HTTP target (and a Secret for headersFrom, and a Warning Event) works:
  the RBAC is sufficient, not only minimal.

The module runs its own ``LocalCluster`` rather than the session's: the life-cycle test must see
the CRD absent before ``helm install`` (other modules install it and keep it for the session),
and a cluster-wide operator must not meet other modules' ScheduledJobs. Starting one costs a few
seconds.
"""

import base64
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_harness import (
    CHART,
    Helm,
    HelmError,
    Receiver,
    eventually,
    install_crds,
    is_helm_test,
    kind_names,
    one,
    operator_process,
    service_account_kubeconfig,
    third_party_crds,
)

from localcluster import LocalCluster, ports, processes
from localcluster.binaries import REPO_ROOT, kubernetes_version

WATCHED = ("chart-team-a", "chart-team-b")
"""The namespaces of the namespaced-mode cases (created once in this module's cluster)."""
UNWATCHED = "chart-team-c"
REDIS_URL = "redis://:n0t-a-real-pa55word@redis.example.internal:6379/0"
# Values whose hash (16 hex digits) holds only decimal digits: unquoted, YAML reads it as a
# number. A generated password's hash is like that about once in 1,800 renders.
URL_WITH_DIGITS_HASH = f"{REDIS_URL}?n=5882"
BUNDLED_WITH_DIGITS_HASH = {"enabled": True, "auth": {"existingSecret": "redis-password-1441"}}
CRD_NAME = "scheduledjobs.punctual.dev"
APP_VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
INSTANCE_LABEL = "app.kubernetes.io/instance"
RECOMMENDED_LABELS = (
    "app.kubernetes.io/name",
    INSTANCE_LABEL,
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/part-of",
    "app.kubernetes.io/component",
    "helm.sh/chart",
)
SMOKE_TIMEOUT = 60.0
"""A 2-second job: Ready=True and a counted success come within seconds of the operator start."""

WEBHOOK_CLIENT_CA = "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n"
"""The chart only carries it: no operator starts from these renders."""
# Documented option combinations (see charts/punctual/README.md), each rendered, linted and
# validated by the API server.
MATRIX: dict[str, dict[str, Any]] = {
    "defaults": {},
    "namespaced": {"watchNamespaces": list(WATCHED)},
    "redis-existing-secret": {
        "lock": {
            "backend": "redis",
            "redis": {"existingSecret": "my-redis", "existingSecretKey": "u"},
        }
    },
    "redis-url": {"lock": {"backend": "redis", "redis": {"url": REDIS_URL}}},
    "bundled-redis": {"lock": {"backend": "redis"}, "redis": {"bundled": {"enabled": True}}},
    "service-monitor": {"metrics": {"serviceMonitor": {"enabled": True, "labels": {"team": "a"}}}},
    "single-replica": {"replicaCount": 1},
    "memory-lock": {"replicaCount": 1, "lock": {"backend": "memory"}},
    "custom-resources": {
        "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}, "limits": {"cpu": ""}},
        "image": {"repository": "registry.example/punctual", "digest": "sha256:" + "ab" * 32},
        "warmStart": {
            "gateImage": {"repository": "registry.example/punctual-gate", "tag": "mirrored"}
        },
        "imagePullSecrets": [{"name": "registry-pull"}],
        "podAntiAffinity": "hard",
        # What "hard" needs on exactly replicaCount nodes (values.yaml, podAntiAffinity).
        "strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
        "topologySpreadConstraints": [],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "ops", "effect": "NoSchedule"}
        ],
        "priorityClassName": "system-cluster-critical",
        "podAnnotations": {"example.com/team": "ops"},
        "serviceAccount": {"annotations": {"example.com/role": "punctual"}},
        "operator": {
            "replicaStagger": "250ms",
            "statusInterval": "10s",
            "statusWritesPerSecond": 50,
        },
        "ports": {"metrics": 9090, "health": 9091},
        "podDisruptionBudget": {"minAvailable": "50%"},
        "replicaCount": 3,
    },
    "least-privilege": {
        "jobTarget": {"enabled": False},
        "rbac": {"readSecrets": False, "watchCustomResourceDefinitions": False},
    },
    "no-rbac-existing-service-account": {
        "rbac": {"create": False},
        "serviceAccount": {"create": False, "name": "default"},
        "metrics": {"service": {"enabled": False}},
    },
    "monitoring": {
        "metrics": {
            "serviceMonitor": {"enabled": False},
            "podMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
            "prometheusRule": {
                "enabled": True,
                "alertLabels": {"team": "ops"},
                "disabled": ["PunctualSlotsMissed"],
            },
            "dashboard": {"enabled": True, "annotations": {"grafana_folder": "Punctual"}},
            "kubeStateMetrics": {
                "enabled": True,
                "serviceAccount": {"name": "kube-state-metrics", "namespace": "monitoring"},
            },
        }
    },
    "templated-crd": {"crds": {"install": True, "keep": True}},
    "recreate-strategy": {"strategy": {"type": "Recreate"}},
    "conventions": {
        "global": {"imageRegistry": "mirror.example/punctual"},
        "namespaceOverride": UNWATCHED,
        "commonLabels": {"example.com/team": "ops"},
        # A YAML string, as users write them: it may include the chart's labels.
        "extraObjects": [
            "apiVersion: v1\n"
            "kind: ConfigMap\n"
            "metadata:\n"
            "  name: {{ .Release.Name }}-extra\n"
            "  labels:\n"
            '    {{- include "punctual.labels" . | nindent 4 }}\n'
            "    app.kubernetes.io/component: extra\n"
            "data:\n"
            '  fullname: {{ include "punctual.fullname" . | quote }}\n'
        ],
        "operator": {"logLevel": "DEBUG", "logFormat": "json"},
        "lock": {"backend": "redis"},
        "redis": {"bundled": {"enabled": True}},
        "networkPolicy": {"enabled": True, "egress": [{"ports": [{"port": 443}]}]},
        "metrics": {
            "serviceMonitor": {
                "enabled": True,
                "honorLabels": True,
                "relabelings": [{"action": "replace", "targetLabel": "tier", "replacement": "ops"}],
                "metricRelabelings": [
                    {"action": "drop", "sourceLabels": ["__name__"], "regex": "python_gc_.*"}
                ],
            },
            "prometheusRule": {"enabled": True},
            "dashboard": {"enabled": True},
        },
    },
    "webhook-cert-manager": {"webhook": {"enabled": True, "certManager": {"enabled": True}}},
    "openshift-restricted": {
        "podSecurityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None},
        "redis": {
            "bundled": {
                "enabled": True,
                "podSecurityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None},
            }
        },
        "lock": {"backend": "redis"},
    },
    "private-ca-and-extras": {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
                            ]
                        }
                    ]
                }
            }
        },
        "extraArgs": ["--http-allowed-hosts=*.svc.cluster.local"],
        "extraEnv": [{"name": "SSL_CERT_FILE", "value": "/etc/punctual/ca/ca.crt"}],
        "extraVolumes": [{"name": "ca", "configMap": {"name": "private-ca"}}],
        "extraVolumeMounts": [{"name": "ca", "mountPath": "/etc/punctual/ca", "readOnly": True}],
        "imagePullSecrets": [{"name": "registry-pull"}],
    },
    "bundled-redis-existing-secret-network-policy": {
        "lock": {"backend": "redis"},
        "redis": {
            "bundled": {
                "enabled": True,
                "auth": {"existingSecret": "my-redis-password"},
                "image": {"digest": "sha256:" + "cd" * 32},
            }
        },
        "networkPolicy": {
            "enabled": True,
            "metricsFrom": [
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                    }
                }
            ],
            "redisFrom": [{"podSelector": {"matchLabels": {"app": "queue-consumer"}}}],
            "egress": [{"ports": [{"port": 443, "protocol": "TCP"}]}],
        },
    },
    "sentinel-redis": {
        "lock": {"backend": "redis"},
        "redis": {"bundled": {"enabled": True, "sentinel": {"enabled": True}}},
        "networkPolicy": {
            "enabled": True,
            "redisFrom": [{"podSelector": {"matchLabels": {"app": "queue-consumer"}}}],
            "egress": [{"ports": [{"port": 443, "protocol": "TCP"}]}],
        },
    },
    "no-helm-test-no-aggregation": {
        "helmTest": {"enabled": False},
        "rbac": {"aggregateToDefaultRoles": False},
    },
    "webhook-behind-network-policy": {
        "webhook": {"enabled": True},
        "networkPolicy": {"enabled": True},
    },
    "webhook-for-the-control-plane-only": {
        "webhook": {"enabled": True, "clientCA": WEBHOOK_CLIENT_CA},
        "networkPolicy": {"enabled": True, "webhookFrom": [{"ipBlock": {"cidr": "172.16.0.0/28"}}]},
    },
}

# The rules of punctual.namespacedRules / punctual.clusterReadRules, written out: the contract
# with the operator's code (each rule's "why" is in charts/punctual/README.md, Permissions).
SCHEDULED_JOBS = {
    "apiGroups": ["punctual.dev"],
    "resources": ["scheduledjobs"],
    "verbs": ["get", "list", "watch", "patch"],
}
CALENDARS = {"apiGroups": ["punctual.dev"], "resources": ["calendars"], "verbs": ["list", "watch"]}
STATUS = {"apiGroups": ["punctual.dev"], "resources": ["scheduledjobs/status"], "verbs": ["patch"]}
EVENTS = {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}
RUN_EVENTS = {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}
SECRETS = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}
JOBS = {
    "apiGroups": ["batch"],
    "resources": ["jobs"],
    "verbs": ["create", "get", "list", "watch", "delete"],
}
PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}
CRDS = {
    "apiGroups": ["apiextensions.k8s.io"],
    "resources": ["customresourcedefinitions"],
    "verbs": ["list", "watch"],
}
NAMESPACES = {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list", "watch"]}


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chart_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(kwok=True, run_dir=tmp_path_factory.mktemp("chart-cluster")) as local:
        for name in (*WATCHED, UNWATCHED):
            create_namespace(local, name)
        # The real Prometheus Operator and cert-manager CRDs: the server-side dry runs check
        # the chart's monitors, rules and certificate against their full schemas.
        install_crds(local, third_party_crds())
        # The monitoring case binds kube-state-metrics' ServiceAccount there.
        create_namespace(local, "monitoring")
        yield local
    assert processes.alive(local.pids) == []
    assert ports.listening(local.ports) == []


@pytest.fixture(scope="module")
def helm(chart_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(chart_cluster, tmp_path_factory.mktemp("helm-home"))


@pytest.fixture
def release_namespace(chart_cluster: LocalCluster) -> Iterator[str]:
    name = f"chart-{uuid.uuid4().hex[:8]}"
    create_namespace(chart_cluster, name)
    yield name
    chart_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def create_namespace(cluster: LocalCluster, name: str) -> None:
    cluster.kubectl("create", "namespace", name)
    # Pods (and tokens) need the namespace's default ServiceAccount, made by a controller.
    eventually(
        lambda: cluster.api.exists(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
        timeout=60,
        what=f"ServiceAccount {name}/default",
        interval=0.2,
    )


def get_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def containers(objects: list[dict[str, Any]], deployment: str) -> dict[str, Any]:
    return dict(one(objects, "Deployment", deployment)["spec"]["template"]["spec"])


def operator_container(objects: list[dict[str, Any]], name: str = "punctual") -> dict[str, Any]:
    [container] = containers(objects, name)["containers"]
    return dict(container)


def membership_roles(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        o
        for o in objects
        if o["kind"] in ("Role", "RoleBinding") and o["metadata"]["name"].endswith("-membership")
    ]


def rules_of(
    objects: list[dict[str, Any]], kind: str, name: str, namespace: str | None = None
) -> list[dict[str, Any]]:
    matching = [
        o
        for o in objects
        if o["kind"] == kind
        and o["metadata"]["name"] == name
        and o["metadata"].get("namespace") == namespace
    ]
    assert len(matching) == 1, kind_names(matching)
    return list(matching[0]["rules"])


# -- rendering -----------------------------------------------------------------------------------


class TestRendering:
    @pytest.mark.parametrize("case", MATRIX)
    def test_helm_lint_strict_passes(self, helm: Helm, case: str) -> None:
        helm.run_with_input(
            [
                "lint",
                "--strict",
                str(CHART),
                f"--kube-version={kubernetes_version()}",
                "--values=-",
            ],
            json.dumps(MATRIX[case]),
        )

    def test_helm_renders_and_lints_without_being_told_the_kubernetes_version(
        self, helm: Helm
    ) -> None:
        # As an official helm does: it knows its own version and assumes a real Kubernetes
        # release (its client-go's), not 1.20, below the chart's kubeVersion.
        version = helm.run("version", "--template={{ .Version }}").stdout
        rendered = helm.run("template", "punctual", str(CHART)).stdout
        helm.run("lint", "--strict", str(CHART))

        assert version == "v3.22.0"
        assert "kind: Deployment" in rendered

    @pytest.mark.parametrize("case", MATRIX)
    def test_every_rendered_object_passes_server_side_validation(
        self, helm: Helm, chart_cluster: LocalCluster, release_namespace: str, case: str
    ) -> None:
        objects = helm.template(MATRIX[case], namespace=release_namespace, include_crds=True)
        # The ServiceAccount admission plugin looks up a pod's ServiceAccount even in a dry run:
        # the helm test pod's must exist (helm test creates it first, by hook weight).
        for account in [o for o in objects if is_helm_test(o) and o["kind"] == "ServiceAccount"]:
            chart_cluster.kubectl("apply", "-f", "-", input=json.dumps(account))

        # The API server validates each object (schema, admission) without storing it; the CRD
        # goes through the same path (it is applied, as an update if already installed).
        result = chart_cluster.kubectl(
            "apply",
            "--dry-run=server",
            "--validate=strict",
            "-f",
            "-",
            input="\n---\n".join(json.dumps(o) for o in objects),
            check=False,
        )

        assert result.returncode == 0, result.stderr
        assert len(result.stdout.strip().splitlines()) == len(objects), result.stdout
        for o in objects:
            if o["kind"] == "CustomResourceDefinition":
                continue  # crds/ is plain YAML, not a template: Helm does not label it
            labels = o["metadata"].get("labels", {})
            assert [k for k in RECOMMENDED_LABELS if k not in labels] == [], kind_names([o])

    @pytest.mark.parametrize(
        ("value", "complaint"),
        [
            ("nope=1", "additional properties 'nope' not allowed"),
            ("lock.nope=1", "additional properties 'nope' not allowed"),
            ("redis.bundled.image.tagg=7", "additional properties 'tagg' not allowed"),
            ("lock.backend=etcd", "at '/lock/backend': value must be one of"),
            ("replicaCount=0", "at '/replicaCount': minimum: got 0"),
            ("operator.statusInterval=5 seconds", "at '/operator/statusInterval'"),
        ],
    )
    def test_the_schema_refuses_unknown_and_invalid_values(
        self, helm: Helm, value: str, complaint: str
    ) -> None:
        result = helm.run(
            "template",
            "punctual",
            str(CHART),
            f"--kube-version={kubernetes_version()}",
            "--set",
            value,
            check=False,
        )

        assert result.returncode != 0
        assert "values don't meet the specifications of the schema" in result.stderr
        assert complaint in result.stderr

    @pytest.mark.parametrize(
        ("values", "complaint"),
        [
            (
                {"lock": {"backend": "redis"}, "redis": {"bundled": {"enabled": False}}},
                "lock.backend=redis needs a Redis URL",
            ),
            (
                {"lock": {"redis": {"url": REDIS_URL}}, "redis": {"bundled": {"enabled": True}}},
                "choose one Redis URL source",
            ),
            (
                {"lock": {"backend": "redis", "redis": {"url": REDIS_URL, "existingSecret": "s"}}},
                "choose one Redis URL source",
            ),
            ({"lock": {"backend": "memory"}}, "lock.backend=memory works with one replica only"),
            (
                {"metrics": {"service": {"enabled": False}, "serviceMonitor": {"enabled": True}}},
                "metrics.serviceMonitor.enabled needs metrics.service.enabled",
            ),
            ({"serviceAccount": {"create": False}}, "serviceAccount.name is required"),
            (
                {
                    "lock": {"backend": "kubernetes"},
                    "redis": {"bundled": {"sentinel": {"enabled": True}}},
                },
                "redis.bundled.sentinel.enabled needs the bundled Redis",
            ),
            (
                MATRIX["sentinel-redis"]
                | {"lock": {"backend": "redis", "redis": {"waitReplicas": 3}}},
                "lock.redis.waitReplicas: the bundled Sentinel-managed Redis has two replicas",
            ),
        ],
    )
    def test_contradictory_settings_fail_at_render_time(
        self, helm: Helm, values: dict[str, Any], complaint: str
    ) -> None:
        with pytest.raises(HelmError) as failure:
            helm.template(values)

        assert complaint in str(failure.value)

    def test_the_operator_pods_are_hardened_and_probed_on_healthz(self, helm: Helm) -> None:
        objects = helm.template({})
        pod = containers(objects, "punctual")
        container = operator_container(objects)

        assert pod["securityContext"] == {
            "runAsNonRoot": True,
            "runAsUser": 10001,
            "runAsGroup": 10001,
            "fsGroup": 10001,
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        # The user is the pod's: dropping it there (OpenShift) drops it everywhere.
        assert container["securityContext"] == {
            "runAsNonRoot": True,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        for probe in ("livenessProbe", "readinessProbe"):
            assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
        assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
            "metrics": 8080,
            "health": 8081,
        }
        assert container["resources"]["requests"]
        assert container["resources"]["limits"]
        assert one(objects, "Deployment", "punctual")["spec"]["replicas"] == 2
        assert (
            "preferredDuringSchedulingIgnoredDuringExecution" in pod["affinity"]["podAntiAffinity"]
        )
        assert {c["topologyKey"] for c in pod["topologySpreadConstraints"]} == {
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
        }
        # Only the operator pods carry an API token, and only because they ask for it.
        assert pod["automountServiceAccountToken"] is True
        assert one(objects, "ServiceAccount", "punctual")["automountServiceAccountToken"] is False

    def test_the_rollout_strategy_surges_one_replica_by_default_and_is_a_value(
        self, helm: Helm
    ) -> None:
        def strategy(values: dict[str, Any]) -> Any:
            return one(helm.template(values), "Deployment", "punctual")["spec"]["strategy"]

        assert strategy({}) == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
        }
        assert strategy(MATRIX["custom-resources"]) == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
        }
        # Helm merges the default rollingUpdate in; the API server refuses it beside Recreate.
        assert strategy(MATRIX["recreate-strategy"]) == {"type": "Recreate"}

    def test_the_arguments_come_from_values_and_the_replica_id_from_the_pod_name(
        self, helm: Helm
    ) -> None:
        objects = helm.template(MATRIX["custom-resources"] | {"watchNamespaces": list(WATCHED)})
        container = operator_container(objects)

        assert container["args"] == [
            "run",
            "--lock-backend=redis",
            "--redis-wait-replicas=0",
            "--redis-wait-timeout=500ms",
            f"--namespace={WATCHED[0]}",
            f"--namespace={WATCHED[1]}",
            "--replica-id=$(POD_NAME)",
            "--sharding=on",
            "--backup-delay=250ms",
            "--membership-namespace=punctual-system",
            "--replica-stagger=250ms",
            "--status-interval=10s",
            "--status-writes-per-second=50",
            "--run-log-lines-per-second=1",
            "--queue-max-len=100000",
            "--max-stream-bytes=8388608",
            "--stream-idle-expiry=168h",
            "--bind-address=0.0.0.0",
            "--log-level=INFO",
            "--log-format=text",
            "--min-period=1s",
            "--max-timeout=24h",
            "--max-runs-in-flight-per-job=10",
            "--max-runs-in-flight-per-namespace=1000",
            "--max-queued-runs-per-job=100",
            "--max-queued-runs-per-namespace=1000",
            "--max-backfills-per-namespace=2",
            "--max-job-template-bytes=65536",
            "--max-http-body-bytes=65536",
            "--max-http-headers-bytes=16384",
            "--max-queue-payload-bytes=65536",
            "--schedule-horizon-years=10",
            "--http-connections-per-namespace=50",
            "--warm-start-gate-image=registry.example/punctual-gate:mirrored",
            "--metrics-port=9090",
            "--health-port=9091",
        ]
        pod_name = next(e for e in container["env"] if e["name"] == "POD_NAME")
        assert pod_name["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
        assert container["image"] == "registry.example/punctual@sha256:" + "ab" * 32
        # An empty limit is left out rather than rendered as an invalid "".
        assert container["resources"] == {
            "requests": {"cpu": "100m", "memory": "200Mi", "ephemeral-storage": "64Mi"},
            "limits": {"memory": "384Mi"},
        }

    @pytest.mark.parametrize(
        ("gate_image", "argument"),
        [
            ({}, f"punctual-gate:{APP_VERSION}"),
            ({"tag": "0.0.9"}, "punctual-gate:0.0.9"),
            (
                {"repository": "mirror.example/gate", "tag": "x", "digest": "sha256:" + "cd" * 32},
                "mirror.example/gate@sha256:" + "cd" * 32,
            ),
        ],
        ids=["the-operators-own-version", "a-tag", "a-digest-over-the-tag"],
    )
    def test_the_gate_image_of_warm_jobs_is_passed_as_a_flag(
        self, helm: Helm, gate_image: dict[str, str], argument: str
    ) -> None:
        objects = helm.template({"warmStart": {"gateImage": gate_image}})

        assert f"--warm-start-gate-image={argument}" in operator_container(objects)["args"]

    @pytest.mark.parametrize(
        ("case", "secret", "key"),
        [
            ("redis-existing-secret", "my-redis", "u"),
            ("redis-url", "punctual-redis-url", "url"),
        ],
    )
    def test_the_redis_url_reaches_the_operator_only_from_a_secret(
        self, helm: Helm, case: str, secret: str, key: str
    ) -> None:
        objects = helm.template(MATRIX[case])
        container = operator_container(objects)

        [url_env] = [e for e in container["env"] if e["name"] == "PUNCTUAL_REDIS_URL"]
        assert url_env["valueFrom"] == {"secretKeyRef": {"name": secret, "key": key}}
        assert "--lock-backend=redis" in container["args"]
        assert not any(a.startswith("--redis-url") for a in container["args"])
        # Nothing but a Secret, base64-encoded, holds the URL or the password: not the pod
        # spec, not an annotation, not a ConfigMap.
        secrets = [o for o in objects if o["kind"] == "Secret"]
        others = json.dumps([o for o in objects if o["kind"] != "Secret"])
        urls = [base64.b64decode(s["data"]["url"]).decode() for s in secrets if "url" in s["data"]]
        for url in urls:
            assert url not in others
            assert url.split("@")[0].removeprefix("redis://:") not in others  # the password
        if case == "redis-url":
            assert urls == [REDIS_URL]
            assert REDIS_URL not in json.dumps(secrets)  # only its base64 form

    def test_the_bundled_redis_is_hardened_and_gets_its_password_from_a_file(
        self, helm: Helm
    ) -> None:
        objects = helm.template(MATRIX["bundled-redis"])
        pod = containers(objects, "punctual-redis")
        [redis] = pod["containers"]

        assert pod["securityContext"]["runAsUser"] == 10001
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert redis["securityContext"]["readOnlyRootFilesystem"] is True
        assert redis["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        # Written from the Secret's password at start, into an in-memory volume: not in args.
        assert redis["command"][:2] == ["sh", "-c"]
        assert "/run/redis/redis.conf" in redis["command"][2]
        assert not any("requirepass" in a for a in redis["args"])
        [auth] = [e for e in redis["env"] if e["name"] == "REDISCLI_AUTH"]
        assert auth["valueFrom"] == {"secretKeyRef": {"name": "punctual-redis", "key": "password"}}
        assert pod["automountServiceAccountToken"] is False
        assert one(objects, "Service", "punctual-redis")["spec"]["ports"][0]["port"] == 6379

    def test_the_bundled_redis_never_evicts_a_claim(self, helm: Helm) -> None:
        # An evicted slot key or run lease is a slot run twice: a full Redis refuses instead.
        [redis] = containers(helm.template(MATRIX["bundled-redis"]), "punctual-redis")["containers"]
        args = redis["args"]

        assert args[args.index("--maxmemory-policy") + 1] == "noeviction"

    def test_the_queue_streams_are_bounded_by_the_operators_flag(self, helm: Helm) -> None:
        operator = operator_container(helm.template({"operator": {"queueMaxLen": 500}}))

        assert "--queue-max-len=500" in operator["args"]

    def test_a_pod_disruption_budget_only_with_more_than_one_replica(self, helm: Helm) -> None:
        assert one(helm.template({}), "PodDisruptionBudget")["spec"]["minAvailable"] == 1
        assert [
            o for o in helm.template({"replicaCount": 1}) if o["kind"] == "PodDisruptionBudget"
        ] == []

    def test_the_service_monitor_scrapes_the_metrics_service(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["service-monitor"])
        monitor = one(objects, "ServiceMonitor")
        service = one(objects, "Service", "punctual-metrics")

        assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
        assert monitor["metadata"]["labels"]["team"] == "a"
        selector = monitor["spec"]["selector"]["matchLabels"]
        assert selector.items() <= service["metadata"]["labels"].items()
        assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
        assert service["spec"]["ports"] == [
            {"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}
        ]
        assert [o for o in helm.template({}) if o["kind"] == "ServiceMonitor"] == []


def pod_template(objects: list[dict[str, Any]], deployment: str) -> dict[str, Any]:
    return dict(one(objects, "Deployment", deployment)["spec"]["template"])


def env_of(container: Mapping[str, Any], name: str) -> dict[str, Any]:
    [found] = [e for e in container["env"] if e["name"] == name]
    return dict(found)


def members(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The pod spec of the Sentinel-managed Redis' StatefulSet."""
    return dict(one(objects, "StatefulSet", "punctual-redis")["spec"]["template"]["spec"])


class TestTheDefaultLock:
    """The default lock backend is redis, on a Redis the chart deploys for it unless another is
    named: the kubernetes lock collapses past about a hundred runs a second (the chart's
    README), and a user following the README must get a lock that holds their load."""

    @pytest.mark.parametrize(
        ("values", "backend", "url_from"),
        [
            pytest.param({}, "redis", "bundled", id="defaults-the-bundled-redis"),
            pytest.param(
                {"lock": {"redis": {"url": REDIS_URL}}}, "redis", "secret", id="a-url-no-bundled"
            ),
            pytest.param(
                {"lock": {"redis": {"existingSecret": "my-redis"}}},
                "redis",
                "secret",
                id="an-existing-secret-no-bundled",
            ),
            pytest.param(
                {"lock": {"backend": "kubernetes"}}, "kubernetes", None, id="kubernetes-no-redis"
            ),
            pytest.param(
                {"lock": {"backend": "kubernetes"}, "redis": {"bundled": {"enabled": True}}},
                "kubernetes",
                "bundled",
                id="kubernetes-with-the-bundled-redis-for-queues",
            ),
        ],
    )
    def test_the_bundled_redis_is_deployed_when_the_lock_needs_a_redis_and_none_is_named(
        self, helm: Helm, values: dict[str, Any], backend: str, url_from: str | None
    ) -> None:
        objects = helm.template(values)
        operator = operator_container(objects)
        bundled = [o for o in objects if o["metadata"]["name"] == "punctual-redis"]
        url = [e for e in operator["env"] if e["name"] == "PUNCTUAL_REDIS_URL"]

        assert f"--lock-backend={backend}" in operator["args"]
        assert bool(bundled) == (url_from == "bundled")
        match url_from:
            case "bundled":
                [env] = url
                assert env["value"].startswith("redis://:$(REDIS_PASSWORD)@punctual-redis.")
            case "secret":
                [env] = url
                assert "secretKeyRef" in env["valueFrom"]
            case _:
                assert url == []


class TestSentinelManagedRedis:
    """redis.bundled.sentinel.enabled: a primary, two replicas and three Sentinels, named by
    their pods' DNS names, and the operator following the primary the Sentinels name."""

    SENTINELS = ",".join(
        f"punctual-redis-{member}.punctual-redis.punctual-system.svc:26379" for member in range(3)
    )

    def test_three_members_each_a_server_and_a_sentinel_with_stable_names(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["sentinel-redis"])
        statefulset = one(objects, "StatefulSet", "punctual-redis")["spec"]
        service = one(objects, "Service", "punctual-redis")["spec"]
        pod = members(objects)

        assert statefulset["replicas"] == 3
        assert statefulset["serviceName"] == "punctual-redis"
        assert statefulset["podManagementPolicy"] == "Parallel"
        assert service["clusterIP"] == "None"
        # Members find each other by name while they start, before any is ready.
        assert service["publishNotReadyAddresses"] is True
        assert [(p["name"], p["port"]) for p in service["ports"]] == [
            ("redis", 6379),
            ("sentinel", 26379),
        ]
        assert [c["name"] for c in pod["containers"]] == ["redis", "sentinel"]
        assert [c["command"] for c in pod["containers"]] == [
            ["sh", "/opt/redis/redis-sentinel.sh", "server"],
            ["sh", "/opt/redis/redis-sentinel.sh", "sentinel"],
        ]
        assert [
            o for o in objects if o["kind"] == "Deployment" and "redis" in o["metadata"]["name"]
        ] == []

    def test_the_start_script_is_the_charts_file_and_a_new_one_restarts_the_members(
        self, helm: Helm
    ) -> None:
        objects = helm.template(MATRIX["sentinel-redis"])
        script = (CHART / "files" / "redis-sentinel.sh").read_text()
        template = one(objects, "StatefulSet", "punctual-redis")["spec"]["template"]

        assert one(objects, "ConfigMap", "punctual-redis-start")["data"] == {
            "redis-sentinel.sh": script
        }
        assert (
            template["metadata"]["annotations"]["checksum/start"]
            == (hashlib.sha256(script.encode()).hexdigest()[:16])
        )

    def test_every_member_knows_the_others_by_name_and_the_password_from_the_secret(
        self, helm: Helm
    ) -> None:
        pod = members(helm.template(MATRIX["sentinel-redis"]))

        for container in pod["containers"]:
            assert env_of(container, "REDISCLI_AUTH")["valueFrom"] == {
                "secretKeyRef": {"name": "punctual-redis", "key": "password"}
            }
            assert env_of(container, "POD_NAME")["valueFrom"] == {
                "fieldRef": {"fieldPath": "metadata.name"}
            }
            settings = {e["name"]: e.get("value") for e in container["env"] if "value" in e}
            assert settings == {
                "HEADLESS": "punctual-redis.punctual-system.svc",
                "MEMBERS": "3",
                "SERVICE": "punctual",
                "REDIS_PORT": "6379",
                "SENTINEL_PORT": "26379",
                "QUORUM": "2",
                "DOWN_AFTER_MS": "5000",
                "FAILOVER_TIMEOUT_MS": "60000",
            }
            assert not any("requirepass" in a for a in container.get("args", []))

    def test_the_servers_refuse_writes_without_a_replica_and_never_evict(self, helm: Helm) -> None:
        values = MATRIX["sentinel-redis"] | {
            "redis": {
                "bundled": {"enabled": True, "sentinel": {"enabled": True, "minReplicasMaxLag": 2}}
            }
        }
        [server, _] = members(helm.template(values))["containers"]
        args = server["args"]

        assert args[args.index("--min-replicas-to-write") + 1] == "1"
        assert args[args.index("--min-replicas-max-lag") + 1] == "2"
        assert args[args.index("--maxmemory-policy") + 1] == "noeviction"

    @pytest.mark.parametrize(
        ("values", "wait_replicas"),
        [
            (MATRIX["sentinel-redis"], 1),
            (
                MATRIX["sentinel-redis"]
                | {"lock": {"backend": "redis", "redis": {"waitReplicas": 2}}},
                2,
            ),
            (
                MATRIX["sentinel-redis"]
                | {"lock": {"backend": "redis", "redis": {"waitReplicas": 0}}},
                0,
            ),
            (MATRIX["bundled-redis"], 0),
        ],
    )
    def test_claims_wait_for_one_replica_by_default_with_sentinel_only(
        self, helm: Helm, values: dict[str, Any], wait_replicas: int
    ) -> None:
        operator = operator_container(helm.template(values))

        assert f"--redis-wait-replicas={wait_replicas}" in operator["args"]

    def test_the_operator_asks_the_three_sentinels_with_the_bundled_password(
        self, helm: Helm
    ) -> None:
        operator = operator_container(helm.template(MATRIX["sentinel-redis"]))

        assert env_of(operator, "REDIS_PASSWORD")["valueFrom"] == {
            "secretKeyRef": {"name": "punctual-redis", "key": "password"}
        }
        assert env_of(operator, "PUNCTUAL_REDIS_URL")["value"] == (
            f"redis+sentinel://:$(REDIS_PASSWORD)@{self.SENTINELS}/punctual"
        )

    @pytest.mark.parametrize(
        ("preset", "rule"),
        [
            ("soft", "preferredDuringSchedulingIgnoredDuringExecution"),
            ("hard", "requiredDuringSchedulingIgnoredDuringExecution"),
        ],
    )
    def test_members_spread_over_nodes_and_a_drain_takes_one_at_a_time(
        self, helm: Helm, preset: str, rule: str
    ) -> None:
        objects = helm.template(MATRIX["sentinel-redis"] | {"podAntiAffinity": preset})
        anti_affinity = members(objects)["affinity"]["podAntiAffinity"]
        budget = one(objects, "PodDisruptionBudget", "punctual-redis")["spec"]

        [term] = anti_affinity[rule]
        term = term.get("podAffinityTerm", term)
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert term["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == "redis"
        assert budget == {
            "maxUnavailable": 1,
            "selector": {"matchLabels": term["labelSelector"]["matchLabels"]},
        }

    def test_the_members_take_the_operator_each_other_and_redis_from_only(self, helm: Helm) -> None:
        values = MATRIX["sentinel-redis"]
        objects = helm.template(values)
        redis = one(objects, "NetworkPolicy", "punctual-redis")["spec"]
        operator = one(objects, "NetworkPolicy", "punctual")["spec"]

        [ingress] = redis["ingress"]
        components = [
            peer["podSelector"]["matchLabels"].get("app.kubernetes.io/component")
            for peer in ingress["from"][:2]
        ]
        assert components == ["operator", "redis"]
        assert ingress["from"][2:] == values["networkPolicy"]["redisFrom"]
        assert [p["port"] for p in ingress["ports"]] == ["redis", "sentinel"]
        [to_redis] = [rule for rule in operator["egress"] if "to" in rule]
        assert [p["port"] for p in to_redis["ports"]] == [6379, 26379]


class TestBundledRedisUnderHelmTemplate:
    """Argo CD renders with `helm template`, where lookup finds nothing: each render is a sync.
    Generated, the password changes at every sync but the operator and Redis change together;
    what an Argo CD user sets is redis.bundled.auth.existingSecret, and then nothing changes."""

    def test_each_render_agrees_with_itself_and_a_new_password_rolls_both(self, helm: Helm) -> None:
        first, second = (helm.template(MATRIX["bundled-redis"]) for _ in range(2))

        hashes = []
        for objects in (first, second):
            password = base64.b64decode(
                one(objects, "Secret", "punctual-redis")["data"]["password"]
            )
            operator = pod_template(objects, "punctual")
            redis = pod_template(objects, "punctual-redis")
            [redis_container] = redis["spec"]["containers"]
            container = operator["spec"]["containers"][0]
            # Both read the one password of the chart's Secret; the operator's URL is made of it.
            source = {"secretKeyRef": {"name": "punctual-redis", "key": "password"}}
            assert env_of(container, "REDIS_PASSWORD")["valueFrom"] == source
            assert env_of(redis_container, "REDISCLI_AUTH")["valueFrom"] == source
            assert env_of(container, "PUNCTUAL_REDIS_URL")["value"] == (
                "redis://:$(REDIS_PASSWORD)@punctual-redis.punctual-system.svc:6379/0"
            )
            # The same hash of that password on both pod templates: they restart together.
            checksum = hashlib.sha256(password).hexdigest()[:16]
            assert operator["metadata"]["annotations"]["checksum/redis-url"] == checksum
            assert redis["metadata"]["annotations"]["checksum/redis-url"] == checksum
            assert password.decode() not in json.dumps(
                [o for o in objects if o["kind"] != "Secret"]
            )
            hashes.append(checksum)
        # Without lookup every render makes a new password: both roll, neither keeps the old one.
        assert hashes[0] != hashes[1]

    def test_with_an_existing_secret_every_render_is_the_same(self, helm: Helm) -> None:
        values = MATRIX["bundled-redis"] | {
            "redis": {"bundled": {"enabled": True, "auth": {"existingSecret": "my-redis-password"}}}
        }
        first, second = (helm.template(values) for _ in range(2))

        assert first == second
        assert [o for o in first if o["kind"] == "Secret"] == []
        source = {"secretKeyRef": {"name": "my-redis-password", "key": "password"}}
        operator = pod_template(first, "punctual")
        redis = pod_template(first, "punctual-redis")
        assert env_of(operator["spec"]["containers"][0], "REDIS_PASSWORD")["valueFrom"] == source
        assert env_of(redis["spec"]["containers"][0], "REDISCLI_AUTH")["valueFrom"] == source
        assert (
            operator["metadata"]["annotations"]["checksum/redis-url"]
            == redis["metadata"]["annotations"]["checksum/redis-url"]
        )

    @pytest.mark.parametrize(
        "values",
        [
            pytest.param(
                {"lock": {"backend": "redis", "redis": {"url": URL_WITH_DIGITS_HASH}}},
                id="a-url",
            ),
            pytest.param(
                MATRIX["bundled-redis"] | {"redis": {"bundled": BUNDLED_WITH_DIGITS_HASH}},
                id="a-bundled-redis-password",
            ),
        ],
    )
    def test_a_hash_of_only_digits_is_still_a_string(
        self, helm: Helm, values: dict[str, Any]
    ) -> None:
        objects = helm.template(values)

        checksums = [
            value
            for obj in objects
            if obj["kind"] == "Deployment"
            for key, value in obj["spec"]["template"]["metadata"]["annotations"].items()
            if key.startswith("checksum/")
        ]
        assert checksums
        assert all(isinstance(value, str) and value.isdigit() for value in checksums), checksums

    def test_the_redis_image_is_pinned_by_its_digest(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["bundled-redis-existing-secret-network-policy"])
        [redis] = containers(objects, "punctual-redis")["containers"]

        assert redis["image"] == "redis@sha256:" + "cd" * 32


def redis_ping(port: int, password: str) -> bytes:
    """AUTH then PING on a fresh connection: both raw RESP answers (or AUTH's error)."""
    with socket.create_connection((ports.LOOPBACK, port), timeout=5) as connection:
        connection.sendall(b"AUTH %s\r\nPING\r\n" % password.encode())
        answer = b""
        while answer.count(b"\r\n") < 2:
            chunk = connection.recv(4096)
            if not chunk:
                break
            answer += chunk
        return answer


def test_the_rendered_redis_takes_the_password_the_rendered_operator_url_carries(
    helm: Helm, tmp_path: Path
) -> None:
    """Redis' start command and the operator's URL, exactly as rendered, run here: the kubelet's
    part (env from the Secret, $(VAR) expansion, the in-memory volume) done by the test."""
    objects = helm.template(MATRIX["bundled-redis"])
    password = base64.b64decode(
        one(objects, "Secret", "punctual-redis")["data"]["password"]
    ).decode()
    [redis] = containers(objects, "punctual-redis")["containers"]
    operator = operator_container(objects)
    port = ports.free_port()
    config = tmp_path / "run-redis"
    config.mkdir()
    script = redis["command"][2].replace("/run/redis", str(config))
    arguments = list(redis["args"])
    arguments[arguments.index("--port") + 1] = str(port)
    arguments[arguments.index("--dir") + 1] = str(tmp_path)
    env = {"PATH": os.environ["PATH"], "REDISCLI_AUTH": password}
    argv = ["sh", "-c", script, *redis["command"][3:], *arguments, "--bind", ports.LOOPBACK]
    url = env_of(operator, "PUNCTUAL_REDIS_URL")["value"].replace("$(REDIS_PASSWORD)", password)
    parsed = urllib.parse.urlsplit(url)

    server = processes.start("bundled-redis", argv, tmp_path, env=env)
    try:
        answer = eventually(
            lambda: _ping_or_none(port, urllib.parse.unquote(str(parsed.password))),
            timeout=30,
            what="redis-server answering",
        )
        refused = redis_ping(port, "not-the-password")
    finally:
        server.stop()

    assert answer == b"+OK\r\n+PONG\r\n"
    assert refused.startswith(b"-WRONGPASS")
    assert parsed.hostname == "punctual-redis.punctual-system.svc"
    assert (config / "redis.conf").stat().st_mode & 0o077 == 0
    assert password not in " ".join(argv)


def _ping_or_none(port: int, password: str) -> bytes | None:
    try:
        return redis_ping(port, password)
    except OSError:
        return None


def test_a_new_password_in_the_existing_secret_rolls_the_operator_and_redis_on_upgrade(
    helm: Helm, chart_cluster: LocalCluster, release_namespace: str
) -> None:
    """With helm (not helm template) the chart reads the user's Secret: its content, not its
    name, is what both pod templates hash."""
    release = "redis-auth"
    values = MATRIX["bundled-redis"] | {
        "redis": {"bundled": {"enabled": True, "auth": {"existingSecret": "redis-password"}}}
    }

    def set_password(password: str) -> None:
        secret = chart_cluster.kubectl(
            "create", "secret", "generic", "redis-password", f"--namespace={release_namespace}",
            f"--from-literal=password={password}", "--dry-run=client", "-o", "json",
        ).stdout  # fmt: skip
        chart_cluster.kubectl("apply", "-f", "-", input=secret)

    def checksums() -> tuple[str, str]:
        operator, redis = (
            get_json(chart_cluster, "deployment", name, "-n", release_namespace)["spec"]["template"]
            for name in (f"{release}-punctual", f"{release}-punctual-redis")
        )
        return (
            operator["metadata"]["annotations"]["checksum/redis-url"],
            redis["metadata"]["annotations"]["checksum/redis-url"],
        )

    set_password("first-password")
    helm.install(release, release_namespace, values)
    before = checksums()
    helm.install(release, release_namespace, values, upgrade=True)
    unchanged = checksums()
    set_password("second-password")
    helm.install(release, release_namespace, values, upgrade=True)
    after = checksums()
    helm.uninstall(release, release_namespace)

    assert before[0] == before[1]
    assert unchanged == before
    assert after[0] == after[1]
    assert after != before


class TestSecurityContexts:
    def test_openshift_restricted_drops_every_fixed_id(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["openshift-restricted"])

        for deployment in ("punctual", "punctual-redis"):
            pod = containers(objects, deployment)
            assert pod["securityContext"] == {
                "runAsNonRoot": True,
                "seccompProfile": {"type": "RuntimeDefault"},
            }
            for container in pod["containers"]:
                assert "runAsUser" not in container["securityContext"]
                assert container["securityContext"]["readOnlyRootFilesystem"] is True

    def test_extras_reach_the_operator_container(self, helm: Helm) -> None:
        values = MATRIX["private-ca-and-extras"]
        objects = helm.template(values)
        pod = containers(objects, "punctual")
        container = operator_container(objects)

        assert container["args"][-1] == "--http-allowed-hosts=*.svc.cluster.local"
        assert env_of(container, "SSL_CERT_FILE")["value"] == "/etc/punctual/ca/ca.crt"
        assert values["extraVolumeMounts"][0] in container["volumeMounts"]
        assert values["extraVolumes"][0] in pod["volumes"]
        assert pod["imagePullSecrets"] == [{"name": "registry-pull"}]
        # A nodeAffinity of one's own keeps the chart's soft podAntiAffinity beside it.
        assert pod["affinity"]["nodeAffinity"] == values["affinity"]["nodeAffinity"]
        assert (
            "preferredDuringSchedulingIgnoredDuringExecution"
            in (pod["affinity"]["podAntiAffinity"])
        )


class TestMonitoring:
    def test_the_pod_monitor_scrapes_the_operator_pods(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["monitoring"])
        monitor = one(objects, "PodMonitor")
        pod = pod_template(objects, "punctual")

        assert monitor["metadata"]["labels"]["release"] == "prometheus"
        assert (
            monitor["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        )
        assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"
        assert [o for o in objects if o["kind"] == "ServiceMonitor"] == []

    def test_the_alerts_are_the_documented_ones_less_the_disabled(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["monitoring"])
        [group] = one(objects, "PrometheusRule")["spec"]["groups"]

        alerts = {rule["alert"]: rule for rule in group["rules"]}
        assert sorted(alerts) == [
            "PunctualJobNeverSucceeded",
            "PunctualJobNoRecentSuccess",
            "PunctualJobNotReady",
            "PunctualLockBackendDown",
            "PunctualOperatorAbsent",
            "PunctualRunLatenessHigh",
            "PunctualRunsFailing",
            "PunctualRunsLost",
        ]
        assert {rule["labels"]["team"] for rule in group["rules"]} == {"ops"}
        assert alerts["PunctualRunLatenessHigh"]["expr"].endswith(") > 1")
        assert (
            "3 * (kube_scheduledjob_status_next_run_time"
            in (alerts["PunctualJobNoRecentSuccess"]["expr"])
        )
        assert 'namespace="punctual-system"' in alerts["PunctualLockBackendDown"]["expr"]
        assert alerts["PunctualJobNeverSucceeded"]["expr"].startswith(
            '(sum by (namespace, scheduledjob) (kube_scheduledjob_status_runs{result!="succeeded"})'
            " >= 3)"
        )
        assert 'type="Ready",status="False"' in alerts["PunctualJobNotReady"]["expr"]

    @pytest.mark.parametrize("monitor", ["serviceMonitor", "podMonitor"])
    def test_the_operator_absent_alert_selects_the_job_label_either_monitor_sets(
        self, helm: Helm, monitor: str
    ) -> None:
        # Every other alert reads the operator's own series: with no replica they fall silent.
        values = {"metrics": {monitor: {"enabled": True}, "prometheusRule": {"enabled": True}}}
        objects = helm.template(values)
        [group] = one(objects, "PrometheusRule")["spec"]["groups"]
        [monitor_object] = [o for o in objects if o["kind"] in ("ServiceMonitor", "PodMonitor")]
        [endpoint] = monitor_object["spec"].get("endpoints") or monitor_object["spec"].get(
            "podMetricsEndpoints"
        )

        [absent] = [rule for rule in group["rules"] if rule["alert"] == "PunctualOperatorAbsent"]
        up = 'up{job="punctual",namespace="punctual-system"}'
        assert absent["expr"] == f"(max by (job, namespace) ({up}) == 0) or absent({up})"
        assert {"action": "replace", "targetLabel": "job", "replacement": "punctual"} in endpoint[
            "relabelings"
        ]
        unmonitored = helm.template({"metrics": {"prometheusRule": {"enabled": True}}})
        assert "PunctualOperatorAbsent" not in json.dumps(unmonitored)

    def test_the_dashboard_and_kube_state_metrics_configuration_are_config_maps(
        self, helm: Helm
    ) -> None:
        objects = helm.template(MATRIX["monitoring"])
        dashboard = one(objects, "ConfigMap", "punctual-dashboard")
        ksm = one(objects, "ConfigMap", "punctual-kube-state-metrics")

        assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert dashboard["metadata"]["annotations"] == {"grafana_folder": "Punctual"}
        assert json.loads(dashboard["data"]["punctual.json"])["uid"] == "punctual-operator"
        config = yaml.safe_load(ksm["data"]["config.yaml"])
        assert config["kind"] == "CustomResourceStateMetrics"
        binding = one(objects, "ClusterRoleBinding", "punctual-kube-state-metrics")
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "kube-state-metrics", "namespace": "monitoring"}
        ]
        assert rules_of(objects, "ClusterRole", "punctual-kube-state-metrics") == [
            {
                "apiGroups": ["punctual.dev"],
                "resources": ["scheduledjobs"],
                "verbs": ["list", "watch"],
            }
        ]


class TestTemplatedCrd:
    def test_it_is_the_crds_folder_file_with_the_release_labels_and_kept(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["templated-crd"])
        crd = one(objects, "CustomResourceDefinition", CRD_NAME)
        calendar_crd = one(objects, "CustomResourceDefinition", "calendars.punctual.dev")
        assert calendar_crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        source = yaml.safe_load((CHART / "crds" / f"{CRD_NAME}.yaml").read_text())

        assert crd["spec"] == source["spec"]
        assert crd["metadata"]["name"] == CRD_NAME
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        assert crd["metadata"]["labels"]["app.kubernetes.io/instance"] == "punctual"
        unkept = helm.template({"crds": {"install": True, "keep": False}})
        assert "annotations" not in one(unkept, "CustomResourceDefinition", CRD_NAME)["metadata"]
        assert [o for o in helm.template({}) if o["kind"] == "CustomResourceDefinition"] == []


class TestNetworkPolicy:
    def test_the_operator_takes_metrics_and_probes_and_redis_only_the_operator(
        self, helm: Helm
    ) -> None:
        values = MATRIX["bundled-redis-existing-secret-network-policy"]
        objects = helm.template(values)
        operator = one(objects, "NetworkPolicy", "punctual")["spec"]
        redis = one(objects, "NetworkPolicy", "punctual-redis")["spec"]

        assert operator["policyTypes"] == ["Ingress", "Egress"]
        assert [rule["ports"][0]["port"] for rule in operator["ingress"]] == ["metrics", "health"]
        assert operator["ingress"][0]["from"] == values["networkPolicy"]["metricsFrom"]
        assert values["networkPolicy"]["egress"][0] in operator["egress"]
        assert operator["egress"][0]["ports"][0]["port"] == 53
        [ingress] = redis["ingress"]
        assert ingress["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == (
            "operator"
        )
        assert ingress["from"][1:] == values["networkPolicy"]["redisFrom"]
        assert [o for o in helm.template({}) if o["kind"] == "NetworkPolicy"] == []

    def test_the_api_server_reaches_the_webhook_behind_it(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["webhook-behind-network-policy"])
        operator = one(objects, "NetworkPolicy", "punctual")["spec"]

        assert [rule["ports"][0]["port"] for rule in operator["ingress"]] == [
            "metrics",
            "health",
            "webhook",
        ]
        assert "from" not in operator["ingress"][2]

    def test_only_the_control_plane_reaches_the_webhook_when_named(self, helm: Helm) -> None:
        values = MATRIX["webhook-for-the-control-plane-only"]
        objects = helm.template(values)
        operator = one(objects, "NetworkPolicy", "punctual")["spec"]

        assert operator["ingress"][2]["ports"][0]["port"] == "webhook"
        assert operator["ingress"][2]["from"] == values["networkPolicy"]["webhookFrom"]


def named_values(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every scalar under a key that names an object or a namespace (``name``, ``namespace``,
    ``serviceAccountName``, the items of ``matchNames``...) and every label and annotation, with
    its path, anywhere in ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}"
            named = key.lower().endswith(("name", "names", "namespace", "namespaces"))
            labels = key == "matchLabels" or (
                key in ("labels", "annotations") and path.endswith("metadata")
            )
            if named and not isinstance(value, dict | list):
                yield here, value
            elif labels:
                for label, text in value.items():
                    yield f"{here}.{label}", text
            else:
                yield from named_values(value, here)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            if path.lower().endswith(("names", "namespaces")) and not isinstance(item, dict):
                yield f"{path}[{index}]", item
            else:
                yield from named_values(item, f"{path}[{index}]")


class TestConventions:
    """What users of cert-manager's and kube-prometheus-stack's charts expect to find."""

    def test_one_registry_before_every_image(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["conventions"])
        pods = [
            o["spec"].get("template", o)["spec"]
            for o in objects
            if o["kind"] in ("Deployment", "Pod")
        ]
        images = [container["image"] for pod in pods for container in pod["containers"]]

        assert sorted(images) == [
            "mirror.example/punctual/punctual:0.1.0",
            "mirror.example/punctual/punctual:0.1.0",
            "mirror.example/punctual/redis:7.2.16-alpine",
        ]

    @pytest.mark.parametrize("case", MATRIX)
    def test_names_that_yaml_would_read_as_numbers_or_booleans_stay_strings(
        self, helm: Helm, case: str
    ) -> None:
        # Valid DNS labels that YAML 1.1 reads as a number (decimal or hex) or a boolean.
        names = {"nameOverride": "0x1f", "fullnameOverride": "2026", "namespaceOverride": "yes"}
        values = MATRIX[case] | names
        objects = helm.template(values, namespace="1441", release="1441")

        not_strings = [
            (o["kind"], path, value)
            for o in objects
            for path, value in named_values(o)
            if not isinstance(value, str)
        ]
        assert not_strings == []

    def test_common_labels_and_the_namespace_override_reach_every_object(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["conventions"], namespace="punctual-system")

        unlabelled = [
            o for o in objects if o["metadata"].get("labels", {}).get("example.com/team") != "ops"
        ]
        assert kind_names(unlabelled) == []
        namespaces = {o["metadata"]["namespace"] for o in objects if "namespace" in o["metadata"]}
        assert namespaces == {UNWATCHED}
        subjects = one(objects, "ClusterRoleBinding", "punctual")["subjects"]
        assert subjects[0]["namespace"] == UNWATCHED
        container = operator_container(objects)
        assert f"--membership-namespace={UNWATCHED}" in container["args"]
        assert (
            f"@punctual-redis.{UNWATCHED}.svc:6379/0"
            in env_of(container, "PUNCTUAL_REDIS_URL")["value"]
        )

    def test_extra_objects_are_rendered_with_the_releases_values(self, helm: Helm) -> None:
        extra = one(helm.template(MATRIX["conventions"]), "ConfigMap", "punctual-extra")

        assert extra["data"] == {"fullname": "punctual"}

    def test_log_level_and_format_ephemeral_storage_and_a_startup_probe(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["conventions"])
        operator = operator_container(objects)
        [redis] = containers(objects, "punctual-redis")["containers"]

        assert [a for a in operator["args"] if a.startswith("--log-")] == [
            "--log-level=DEBUG",
            "--log-format=json",
        ]
        assert operator["resources"]["requests"]["ephemeral-storage"] == "64Mi"
        assert redis["resources"]["requests"]["ephemeral-storage"] == "64Mi"
        assert operator["startupProbe"] == {
            "httpGet": {"path": "/healthz", "port": "health"},
            "periodSeconds": 2,
            "timeoutSeconds": 5,
            "failureThreshold": 30,
        }

    def test_every_alert_has_a_runbook_section(self, helm: Helm) -> None:
        [group] = one(helm.template(MATRIX["monitoring"]), "PrometheusRule")["spec"]["groups"]
        runbooks = (REPO_ROOT / "docs" / "runbooks.md").read_text()

        base = "https://github.com/punctual-dev/punctual/blob/main/docs/runbooks.md"
        for rule in group["rules"]:
            assert rule["annotations"]["runbook_url"] == f"{base}#{rule['alert'].lower()}"
            assert f"\n## {rule['alert']}\n" in runbooks

    def test_the_monitors_relabel_and_keep_one_job_label(self, helm: Helm) -> None:
        values = MATRIX["conventions"]["metrics"]["serviceMonitor"]
        objects = helm.template(MATRIX["conventions"])
        [endpoint] = one(objects, "ServiceMonitor")["spec"]["endpoints"]

        assert endpoint["honorLabels"] is True
        assert endpoint["relabelings"] == [
            {"action": "replace", "targetLabel": "job", "replacement": "punctual"},
            *values["relabelings"],
        ]
        assert endpoint["metricRelabelings"] == values["metricRelabelings"]
        # With a jobLabel the job is that label's value on the scraped objects, and the alert
        # selects it.
        labelled = {
            "commonLabels": {"example.com/job": "batch"},
            "metrics": {
                "podMonitor": {"enabled": True, "jobLabel": "example.com/job"},
                "prometheusRule": {"enabled": True},
            },
        }
        objects = helm.template(labelled)
        monitor = one(objects, "PodMonitor")["spec"]
        [endpoint] = monitor["podMetricsEndpoints"]
        assert monitor["jobLabel"] == "example.com/job"
        assert "relabelings" not in endpoint
        [group] = one(objects, "PrometheusRule")["spec"]["groups"]
        [absent] = [rule for rule in group["rules"] if rule["alert"] == "PunctualOperatorAbsent"]
        assert absent["expr"].startswith('(max by (job, namespace) (up{job="batch",')
        with pytest.raises(HelmError, match="the scraped objects carry no such label"):
            helm.template({"metrics": {"podMonitor": {"enabled": True, "jobLabel": "nope"}}})

    def test_a_restricted_egress_reaches_the_bundled_redis(self, helm: Helm) -> None:
        operator = one(helm.template(MATRIX["conventions"]), "NetworkPolicy", "punctual")["spec"]

        [to_redis] = [rule for rule in operator["egress"] if "to" in rule]
        assert to_redis["ports"] == [{"port": 6379, "protocol": "TCP"}]
        assert to_redis["to"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == (
            "redis"
        )


class TestWebhookCertificate:
    def test_cert_manager_gets_no_common_name_over_its_64_bytes_only_the_dns_names(
        self, helm: Helm
    ) -> None:
        long_namespace = "platform-batch-scheduling-prod"
        objects = helm.template(
            MATRIX["webhook-cert-manager"], release="batch-scheduling", namespace=long_namespace
        )
        certificate = one(objects, "Certificate")["spec"]

        service = f"batch-scheduling-punctual-webhook.{long_namespace}.svc"
        assert len(service) > 64
        assert "commonName" not in certificate
        assert service in certificate["dnsNames"]
        short = one(helm.template(MATRIX["webhook-cert-manager"]), "Certificate")["spec"]
        assert short["commonName"] == "punctual-webhook.punctual-system.svc"


class TestNotes:
    """What `helm install` prints names the Secret that really holds the Redis password or URL."""

    @pytest.mark.parametrize(
        ("values", "named", "not_named"),
        [
            (
                MATRIX["bundled-redis"],
                ["Secret punctual-redis, key password", "PUNCTUAL_REDIS_URL"],
                ["Secret punctual-redis-url"],
            ),
            (
                MATRIX["bundled-redis-existing-secret-network-policy"],
                ["Secret my-redis-password, key password", "PUNCTUAL_REDIS_URL"],
                ["Secret punctual-redis,", "made by the chart"],
            ),
            (
                MATRIX["redis-url"],
                ["Secret punctual-redis-url, key url"],
                ["Secret punctual-redis,"],
            ),
            (
                MATRIX["redis-existing-secret"],
                ["Secret my-redis, key u"],
                ["Secret punctual-redis"],
            ),
        ],
        ids=["bundled", "bundled-existing-secret", "url", "existing-secret"],
    )
    def test_they_name_the_secret_that_holds_the_redis_password_or_url(
        self,
        helm: Helm,
        release_namespace: str,
        values: dict[str, Any],
        named: list[str],
        not_named: list[str],
    ) -> None:
        notes = helm.notes(values, namespace=release_namespace)

        assert [text for text in named if text not in notes] == [], notes
        assert [text for text in not_named if text in notes] == [], notes


class TestHelmTestHook:
    def test_it_is_a_test_hook_in_the_operator_image_allowed_only_scheduled_jobs(
        self, helm: Helm
    ) -> None:
        objects = helm.template(MATRIX["namespaced"])
        pod = one(objects, "Pod", "punctual-test")
        [container] = pod["spec"]["containers"]

        assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
        assert container["image"] == operator_container(objects)["image"]
        assert container["command"] == ["python", "/etc/punctual-test/helm-test.py"]
        assert env_of(container, "TEST_NAMESPACE")["value"] == WATCHED[0]
        script = one(objects, "ConfigMap", "punctual-test")["data"]["helm-test.py"]
        assert script == (CHART / "files" / "helm-test.py").read_text()
        assert rules_of(objects, "Role", "punctual-test", WATCHED[0]) == [
            {
                "apiGroups": ["punctual.dev"],
                "resources": ["scheduledjobs"],
                "verbs": ["create", "get", "delete"],
            }
        ]
        off = helm.template(MATRIX["no-helm-test-no-aggregation"])
        assert [
            o for o in off if o["kind"] == "Pod" or o["metadata"]["name"].endswith("-view")
        ] == []


class TestRbacRules:
    """The rendered rules are exactly the operator's calls (README, Permissions)."""

    def test_cluster_wide_one_cluster_role_with_every_rule(self, helm: Helm) -> None:
        objects = helm.template({})

        assert rules_of(objects, "ClusterRole", "punctual") == [
            SCHEDULED_JOBS,
            CALENDARS,
            STATUS,
            EVENTS,
            RUN_EVENTS,
            SECRETS,
            JOBS,
            PODS,
            CRDS,
        ]
        operator = [o for o in objects if not is_helm_test(o)]
        roles = [o for o in operator if o["kind"] in ("Role", "RoleBinding")]
        assert kind_names(roles) == kind_names(membership_roles(objects))
        binding = one(objects, "ClusterRoleBinding", "punctual")
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "punctual", "namespace": "punctual-system"}
        ]

    def test_namespaced_a_role_per_watched_namespace_and_only_reads_cluster_wide(
        self, helm: Helm
    ) -> None:
        objects = helm.template(MATRIX["namespaced"])

        for namespace in WATCHED:
            assert rules_of(objects, "Role", "punctual", namespace) == [
                SCHEDULED_JOBS,
                CALENDARS,
                STATUS,
                EVENTS,
                RUN_EVENTS,
                SECRETS,
                JOBS,
                PODS,
            ]
            one(
                [o for o in objects if o["metadata"].get("namespace") == namespace],
                "RoleBinding",
                "punctual",
            )
        assert rules_of(objects, "ClusterRole", "punctual-cluster-reads") == [CRDS, NAMESPACES]
        assert [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole"] == [
            "punctual-view",
            "punctual-edit",
            "punctual-cluster-reads",
        ]

    def test_the_replicas_membership_leases_only_in_the_release_namespace(self, helm: Helm) -> None:
        objects = helm.template({})

        assert rules_of(objects, "Role", "punctual-membership", "punctual-system") == [
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "verbs": ["get", "list", "watch", "create", "update", "delete"],
            }
        ]
        args = operator_container(objects)["args"]
        assert "--sharding=on" in args
        assert "--membership-namespace=punctual-system" in args
        unsharded = helm.template({"operator": {"sharding": False}})
        assert membership_roles(unsharded) == []
        assert "--sharding=off" in operator_container(unsharded)["args"]

    def test_each_grant_beyond_the_core_can_be_turned_off(self, helm: Helm) -> None:
        objects = helm.template(
            MATRIX["least-privilege"]
            | {"watchNamespaces": [WATCHED[0]]}
            | {
                "rbac": {
                    "readSecrets": False,
                    "watchCustomResourceDefinitions": False,
                    "listNamespaces": False,
                    "aggregateToDefaultRoles": False,
                }
            }
        )

        assert rules_of(objects, "Role", "punctual", WATCHED[0]) == [
            SCHEDULED_JOBS,
            CALENDARS,
            STATUS,
            EVENTS,
            RUN_EVENTS,
        ]
        assert [o for o in objects if o["kind"].startswith("Cluster")] == []

    def test_no_rbac_objects_when_rbac_create_is_off(self, helm: Helm) -> None:
        objects = helm.template(MATRIX["no-rbac-existing-service-account"])

        operator = [o for o in objects if not is_helm_test(o)]
        assert [o for o in operator if "Role" in o["kind"] or o["kind"] == "ServiceAccount"] == []
        assert containers(objects, "punctual")["serviceAccountName"] == "default"


# -- the life cycle ------------------------------------------------------------------------------


def labelled_objects(cluster: LocalCluster, release: str) -> list[str]:
    """Every object of every listable kind, in all namespaces, labelled with the release."""
    kinds = cluster.kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
    # Events are not the chart's objects (and are not labelled); listing them is noise.
    kinds = [k for k in kinds if k not in ("events", "events.events.k8s.io")]
    listed = cluster.kubectl(
        "get",
        ",".join(kinds),
        "--all-namespaces",
        "-l",
        f"{INSTANCE_LABEL}={release}",
        "-o",
        "name",
        "--ignore-not-found",
    )
    return sorted(listed.stdout.split())


def release_records(cluster: LocalCluster, release: str, namespace: str) -> list[str]:
    """Helm's own release Secrets (``owner=helm``), which ``helm uninstall`` must remove too."""
    listed = cluster.kubectl(
        "get", "secrets", "-n", namespace, "-l", f"owner=helm,name={release}", "-o", "name"
    )
    return listed.stdout.split()


def test_install_upgrade_uninstall_leaves_only_the_crd(
    helm: Helm, chart_cluster: LocalCluster, release_namespace: str
) -> None:
    cluster = chart_cluster
    release = "lifecycle"
    # This module's cluster is its own: remove a CRD an earlier test's install left, so that
    # this install demonstrably creates it.
    cluster.kubectl("delete", "crd", CRD_NAME, "--ignore-not-found", "--wait=true")
    assert cluster.kubectl("get", "crd", CRD_NAME, check=False).returncode != 0

    helm.install(release, release_namespace, {})

    crd = get_json(cluster, "crd", CRD_NAME)
    established = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert established["Established"] == "True"
    chart_crd = yaml.safe_load((CHART / "crds" / f"{CRD_NAME}.yaml").read_text())
    assert crd["spec"]["versions"][0]["schema"] == chart_crd["spec"]["versions"][0]["schema"]
    # `--wait` returned: the Deployment is Available, with both (kwok-faked) replicas Ready.
    deployment = get_json(cluster, "deployment", f"{release}-punctual", "-n", release_namespace)
    eventually(
        lambda: ready_replicas(cluster, f"{release}-punctual", release_namespace) == 2,
        timeout=90,
        what="2 ready operator replicas",
    )
    deployment = get_json(cluster, "deployment", f"{release}-punctual", "-n", release_namespace)
    available = {c["type"]: c["status"] for c in deployment["status"]["conditions"]}
    assert available["Available"] == "True"
    installed = labelled_objects(cluster, release)
    for expected in (
        "deployment.apps/lifecycle-punctual",
        "serviceaccount/lifecycle-punctual",
        "service/lifecycle-punctual-metrics",
        "poddisruptionbudget.policy/lifecycle-punctual",
        "clusterrole.rbac.authorization.k8s.io/lifecycle-punctual",
        "clusterrolebinding.rbac.authorization.k8s.io/lifecycle-punctual",
    ):
        assert expected in installed

    helm.install(
        release,
        release_namespace,
        {"replicaCount": 3, "operator": {"statusInterval": "10s"}},
        upgrade=True,
    )

    deployment = get_json(cluster, "deployment", f"{release}-punctual", "-n", release_namespace)
    eventually(
        lambda: ready_replicas(cluster, f"{release}-punctual", release_namespace) == 3,
        timeout=90,
        what="3 ready operator replicas",
    )
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert "--status-interval=10s" in container["args"]
    history = json.loads(helm.run("history", release, "-n", release_namespace, "-o", "json").stdout)
    assert [entry["status"] for entry in history] == ["superseded", "deployed"]

    helm.uninstall(release, release_namespace)

    assert labelled_objects(cluster, release) == []
    assert release_records(cluster, release, release_namespace) == []
    # Helm never deletes CRDs from crds/: the ScheduledJobs of every namespace would go with it.
    assert cluster.kubectl("get", "crd", CRD_NAME, check=False).returncode == 0


def test_the_bundled_redis_keeps_its_password_across_upgrades(
    helm: Helm, chart_cluster: LocalCluster, release_namespace: str
) -> None:
    release = "bundled"
    helm.install(release, release_namespace, MATRIX["bundled-redis"])
    secret = f"{release}-punctual-redis"

    first = get_json(chart_cluster, "secret", secret, "-n", release_namespace)["data"]
    helm.install(
        release, release_namespace, MATRIX["bundled-redis"] | {"replicaCount": 3}, upgrade=True
    )
    second = get_json(chart_cluster, "secret", secret, "-n", release_namespace)["data"]

    assert len(base64.b64decode(first["password"])) == 32
    assert second == first
    password = base64.b64decode(first["password"]).decode()
    assert password.isalnum()
    eventually(
        lambda: ready_replicas(chart_cluster, secret, release_namespace) == 1,
        timeout=90,
        what="ready bundled Redis",
    )
    helm.uninstall(release, release_namespace)
    assert labelled_objects(chart_cluster, release) == []


def ready_replicas(cluster: LocalCluster, deployment: str, namespace: str) -> int:
    status = get_json(cluster, "deployment", deployment, "-n", namespace).get("status", {})
    return int(status.get("readyReplicas", 0))


# -- RBAC, for real ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Installed:
    mode: str
    release: str
    namespace: str
    service_account: str
    job_namespace: str
    """Where the smoke test's ScheduledJobs go: watched by this installation."""

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"


@pytest.fixture(scope="module", params=["cluster-wide", "namespaced"])
def installed(
    request: pytest.FixtureRequest, helm: Helm, chart_cluster: LocalCluster
) -> Iterator[Installed]:
    mode = request.param
    release = f"rbac-{mode}"
    namespace = f"{release}-system"
    create_namespace(chart_cluster, namespace)
    # The kubernetes lock: the operator these tests run on this machine with the chart's
    # arguments and the ServiceAccount's token has no bundled Redis to reach (no pod runs
    # here), and the claims' status writes are what the chart's RBAC must grant it.
    values: dict[str, Any] = {"lock": {"backend": "kubernetes"}}
    if mode == "namespaced":
        values["watchNamespaces"] = list(WATCHED)
    helm.install(release, namespace, values)
    job_namespace = WATCHED[0] if mode == "namespaced" else f"{release}-jobs"
    if mode == "cluster-wide":
        create_namespace(chart_cluster, job_namespace)
    yield Installed(mode, release, namespace, f"{release}-punctual", job_namespace)
    helm.uninstall(release, namespace)
    chart_cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def can_i(
    cluster: LocalCluster, user: str, verb: str, resource: str, namespace: str | None
) -> bool:
    scope = [f"--namespace={namespace}"] if namespace else ["--all-namespaces"]
    # "kind/status" is a subresource here; kubectl reads "kind/x" as the object named x.
    resource, _, subresource = resource.partition("/")
    if subresource:
        scope.append(f"--subresource={subresource}")
    # A loaded API server sometimes answers neither (a timeout): ask again, a few times.
    for _ in range(CAN_I_ATTEMPTS):
        result = cluster.kubectl(
            "auth", "can-i", verb, resource, f"--as={user}", *scope, check=False
        )
        if result.stdout.strip() in ("yes", "no"):
            return result.stdout.strip() == "yes"
        time.sleep(1)
    raise AssertionError(f"can-i {verb} {resource}: {result.stderr}")


CAN_I_ATTEMPTS = 5
RBAC_SETTLE_SECONDS = 30.0
"""The authorizer learns new (Cluster)RoleBindings through its informers: a loaded API
server can take seconds to say yes to a grant the chart just made."""


def test_the_service_account_may_make_every_call_of_the_operator_and_nothing_else(
    installed: Installed, chart_cluster: LocalCluster
) -> None:
    watched = installed.job_namespace
    # In cluster-wide mode every namespace is watched: "elsewhere" is any other one.
    elsewhere = UNWATCHED
    everywhere = None if installed.mode == "cluster-wide" else watched
    allowed = [
        ("get", "scheduledjobs.punctual.dev", watched),
        ("list", "scheduledjobs.punctual.dev", watched),
        ("watch", "scheduledjobs.punctual.dev", watched),
        ("list", "scheduledjobs.punctual.dev", everywhere),
        ("watch", "scheduledjobs.punctual.dev", everywhere),
        ("list", "calendars.punctual.dev", everywhere),
        ("watch", "calendars.punctual.dev", everywhere),
        ("patch", "scheduledjobs.punctual.dev/status", watched),
        # spec.suspend, set by the operator itself (spec.suspendAfterFailures).
        ("patch", "scheduledjobs.punctual.dev", watched),
        ("create", "events", watched),
        ("create", "events.events.k8s.io", watched),
        ("patch", "events.events.k8s.io", watched),
        ("get", "secrets", watched),
        ("create", "jobs.batch", watched),
        ("get", "jobs.batch", watched),
        ("list", "jobs.batch", everywhere),
        ("watch", "jobs.batch", everywhere),
        ("delete", "jobs.batch", watched),
        ("list", "customresourcedefinitions.apiextensions.k8s.io", None),
        ("watch", "customresourcedefinitions.apiextensions.k8s.io", None),
        *(
            (verb, "leases.coordination.k8s.io", installed.namespace)
            for verb in ("get", "list", "watch", "create", "update", "delete")
        ),
    ]
    refused = [
        ("create", "scheduledjobs.punctual.dev", watched),
        ("delete", "scheduledjobs.punctual.dev", watched),
        ("update", "scheduledjobs.punctual.dev", watched),
        ("update", "scheduledjobs.punctual.dev/status", watched),
        ("list", "secrets", watched),
        ("watch", "secrets", watched),
        ("update", "secrets", watched),
        ("create", "pods", watched),
        ("get", "pods", watched),
        ("get", "configmaps", watched),
        ("delete", "events", watched),
        ("update", "jobs.batch", watched),
        ("create", "cronjobs.batch", watched),
        ("update", "nodes", None),
        ("get", "customresourcedefinitions.apiextensions.k8s.io", None),
        ("create", "customresourcedefinitions.apiextensions.k8s.io", None),
        ("create", "clusterroles.rbac.authorization.k8s.io", None),
        ("create", "rolebindings.rbac.authorization.k8s.io", watched),
        ("create", "leases.coordination.k8s.io", watched),
        ("*", "*", None),
        ("*", "*", watched),
    ]
    if installed.mode == "namespaced":
        allowed += [
            ("list", "namespaces", None),
            ("watch", "namespaces", None),
            ("get", "scheduledjobs.punctual.dev", WATCHED[1]),
            ("patch", "scheduledjobs.punctual.dev/status", WATCHED[1]),
        ]
        refused += [
            ("get", "secrets", elsewhere),
            ("get", "scheduledjobs.punctual.dev", elsewhere),
            ("list", "scheduledjobs.punctual.dev", elsewhere),
            ("patch", "scheduledjobs.punctual.dev/status", elsewhere),
            ("create", "events", elsewhere),
            ("create", "jobs.batch", elsewhere),
            ("list", "scheduledjobs.punctual.dev", None),
            ("list", "jobs.batch", None),
            ("get", "secrets", None),
        ]
    else:
        refused += [("list", "namespaces", None), ("get", "namespaces", None)]

    def answer(verb: str, resource: str, namespace: str | None) -> bool:
        return can_i(chart_cluster, installed.user, verb, resource, namespace)

    # Collected, so that one run names every wrong answer at once.
    deadline = time.monotonic() + RBAC_SETTLE_SECONDS
    denied = [(v, r, n) for v, r, n in allowed if not answer(v, r, n)]
    while denied and time.monotonic() < deadline:
        time.sleep(2)
        denied = [(v, r, n) for v, r, n in denied if not answer(v, r, n)]
    assert denied == []
    assert [(v, r, n) for v, r, n in refused if answer(v, r, n)] == []


def chart_arguments(cluster: LocalCluster, installed: Installed) -> list[str]:
    """The arguments the chart's Deployment gives the operator (lock backend, namespaces, status
    interval), less the ones a local process sets itself: its replica id and loopback ports."""
    deployment = get_json(
        cluster, "deployment", f"{installed.release}-punctual", "-n", installed.namespace
    )
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][0] == "run"
    local = ("--replica-id", "--bind-address", "--metrics-port", "--health-port")
    return [a for a in container["args"][1:] if a.split("=")[0] not in local]


@pytest.fixture
def scheduled_jobs(chart_cluster: LocalCluster) -> Iterator[Callable[..., None]]:
    """Applies ScheduledJobs, and deletes them afterwards: the next test's cluster-wide operator
    must not run this test's jobs against a receiver that is gone."""
    applied: list[tuple[str, str]] = []

    def apply(namespace: str, name: str, spec: Mapping[str, Any]) -> None:
        body = {
            "apiVersion": "punctual.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
        chart_cluster.kubectl("apply", "-f", "-", input=json.dumps(body))
        applied.append((namespace, name))

    yield apply
    for namespace, name in applied:
        chart_cluster.kubectl("delete", "sj", name, "-n", namespace, "--wait=false", check=False)


def condition(body: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return next((c for c in body.get("status", {}).get("conditions", []) if c["type"] == kind), {})


def counted_success(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any] | None:
    """The ScheduledJob once it is Ready and has counted a successful run, else None."""
    body: dict[str, Any] = get_json(cluster, "sj", name, "-n", namespace)
    ready = condition(body, "Ready").get("status") == "True"
    succeeded = body.get("status", {}).get("counts", {}).get("succeeded", 0)
    return body if ready and succeeded > 0 else None


def events_about(cluster: LocalCluster, namespace: str, name: str, reason: str) -> list[Any]:
    items = get_json(cluster, "events", "-n", namespace)["items"]
    return [e for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason]


def test_the_operator_runs_with_nothing_but_the_service_account(
    installed: Installed,
    chart_cluster: LocalCluster,
    scheduled_jobs: Callable[..., None],
    tmp_path: Path,
) -> None:
    cluster = chart_cluster
    namespace = installed.job_namespace
    suffix = uuid.uuid4().hex[:6]
    kubeconfig = service_account_kubeconfig(
        cluster, installed.namespace, installed.service_account, tmp_path / "kubeconfig"
    )
    token = f"token-{suffix}"
    cluster.kubectl(
        "create",
        "secret",
        "generic",
        token,
        f"--namespace={namespace}",
        "--from-literal=Authorization=Bearer chart-smoke",
    )

    with Receiver() as receiver:
        path = f"/smoke-{suffix}"
        # headersFrom makes the operator read the Secret (secrets: get).
        http = {"url": receiver.url(path), "headersFrom": [{"secretRef": {"name": token}}]}
        scheduled_jobs(namespace, f"smoke-{suffix}", {"every": "2s", "target": {"http": http}})
        # An unknown time zone: the operator says so with a Warning Event (events: create).
        never = {"http": {"url": receiver.url("/never")}}
        bad = {"schedule": "* * * * *", "timeZone": "Mars/Olympus", "target": never}
        scheduled_jobs(namespace, f"bad-{suffix}", bad)
        if installed.mode == "namespaced":
            # Outside the watched namespaces: the operator must not see it at all.
            outside = {"http": {"url": receiver.url("/unwatched")}}
            scheduled_jobs(UNWATCHED, f"out-{suffix}", {"every": "2s", "target": outside})

        with operator_process(
            kubeconfig,
            tmp_path,
            name=f"operator-{installed.mode}",
            arguments=chart_arguments(cluster, installed),
        ) as operator:
            body = eventually(
                lambda: counted_success(cluster, namespace, f"smoke-{suffix}"),
                timeout=SMOKE_TIMEOUT,
                what="Ready=True and a counted success",
            )
            [warning, *_] = eventually(
                lambda: events_about(cluster, namespace, f"bad-{suffix}", "InvalidSpec"),
                timeout=SMOKE_TIMEOUT,
                what="a Warning Event InvalidSpec",
            )
            invalid = get_json(cluster, "sj", f"bad-{suffix}", "-n", namespace)
            log = operator.log_path.read_text()

    assert body["status"]["lastRun"]["result"] == "Succeeded"
    assert body["status"]["lastRun"]["replica"] == f"operator-{installed.mode}"
    calls = receiver.calls(path)
    assert calls
    assert {call.headers.get("Authorization") for call in calls} == {"Bearer chart-smoke"}
    assert warning["type"] == "Warning"
    assert condition(invalid, "Ready")["reason"] == "InvalidSpec"
    if installed.mode == "namespaced":
        assert receiver.calls("/unwatched") == []
        assert "status" not in get_json(cluster, "sj", f"out-{suffix}", "-n", UNWATCHED)
    # Not one refused call, kopf's included (its CRD and namespace observers retry and log).
    assert "Forbidden" not in log
    assert " 403" not in log


@pytest.mark.skipif(
    find_spec("punctual.targets.job.executor") is None,
    reason="the job target is not implemented yet",
)
def test_a_job_target_runs_with_the_service_account(
    installed: Installed,
    chart_cluster: LocalCluster,
    scheduled_jobs: Callable[..., None],
    tmp_path: Path,
) -> None:
    """jobTarget.enabled: creating, watching and cleaning up batch Jobs as the ServiceAccount."""
    cluster = chart_cluster
    namespace = installed.job_namespace
    name = f"job-{uuid.uuid4().hex[:6]}"
    kubeconfig = service_account_kubeconfig(
        cluster, installed.namespace, installed.service_account, tmp_path / "kubeconfig"
    )
    # kwok completes a Job's pod as soon as it runs (kwok-stages.yaml), whatever the image.
    pod = {"restartPolicy": "Never", "containers": [{"name": "noop", "image": "noop:never"}]}
    job = {"template": {"spec": {"backoffLimit": 0, "template": {"spec": pod}}}}
    spec = {"every": "5s", "history": {"succeeded": 1, "failed": 1}, "target": {"job": job}}
    scheduled_jobs(namespace, name, spec)

    with operator_process(
        kubeconfig,
        tmp_path,
        name=f"job-operator-{installed.mode}",
        arguments=chart_arguments(cluster, installed),
    ) as operator:
        body = eventually(
            lambda: counted_success(cluster, namespace, name),
            timeout=90,
            what="a Job run counted as succeeded",
        )
        log = operator.log_path.read_text()

    assert body["status"]["lastRun"]["result"] == "Succeeded"
    assert "Forbidden" not in log


def test_namespace_users_of_the_built_in_roles_may_use_scheduled_jobs(
    installed: Installed, chart_cluster: LocalCluster
) -> None:
    """rbac.aggregateToDefaultRoles: kube-controller-manager's aggregation copies the chart's
    rules into view, edit and admin; a RoleBinding to them is all a namespace user needs."""
    namespace = installed.job_namespace
    users = {}
    for role in ("view", "edit", "admin"):
        user = f"{role}-user-{installed.mode}"
        chart_cluster.kubectl(
            "create", "rolebinding", user, f"--clusterrole={role}", f"--user={user}",
            f"--namespace={namespace}",
        )  # fmt: skip
        users[role] = user
    expected = {
        ("view", "list"): True,
        ("view", "get"): True,
        ("view", "create"): False,
        ("view", "delete"): False,
        ("edit", "list"): True,
        ("edit", "create"): True,
        ("edit", "patch"): True,
        ("edit", "delete"): True,
        ("admin", "create"): True,
        ("admin", "deletecollection"): True,
    }

    def answers() -> dict[tuple[str, str], bool]:
        return {
            (role, verb): can_i(
                chart_cluster, users[role], verb, "scheduledjobs.punctual.dev", namespace
            )
            for role, verb in expected
        }

    # The aggregation controller and the authorizer's informers take a moment.
    eventually(lambda: answers() == expected, timeout=RBAC_SETTLE_SECONDS, what="aggregated roles")
    # The status stays the operator's.
    assert not can_i(
        chart_cluster, users["edit"], "patch", "scheduledjobs.punctual.dev/status", namespace
    )
    for user in users.values():
        chart_cluster.kubectl("delete", "rolebinding", user, f"--namespace={namespace}")


def test_the_helm_test_script_runs_a_scheduled_job_through_the_operator(
    installed: Installed, helm: Helm, chart_cluster: LocalCluster, tmp_path: Path
) -> None:
    """The `helm test` hook's script, exactly as rendered, with its own ServiceAccount's token
    and Role, beside the operator running as the chart's ServiceAccount. (kwok would only fake
    the test pod; the script itself runs here, as a local process listening on loopback.)"""
    cluster = chart_cluster
    values = {"watchNamespaces": list(WATCHED)} if installed.mode == "namespaced" else {}
    rendered = helm.template(values, namespace=installed.namespace, release=installed.release)
    hook = [o for o in rendered if is_helm_test(o)]
    pod = one(hook, "Pod")
    [container] = pod["spec"]["containers"]
    script = tmp_path / "helm-test.py"
    script.write_text(one(hook, "ConfigMap")["data"]["helm-test.py"])
    cluster.kubectl(
        "apply", "-f", "-",
        input="\n---\n".join(json.dumps(o) for o in hook if o["kind"] not in ("Pod", "ConfigMap")),
    )  # fmt: skip
    account = tmp_path / "serviceaccount"
    account.mkdir()
    token = cluster.kubectl(
        "create", "token", pod["spec"]["serviceAccountName"], f"--namespace={installed.namespace}",
    ).stdout.strip()  # fmt: skip
    (account / "token").write_text(token)
    admin = yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]
    (account / "ca.crt").write_bytes(base64.b64decode(admin["certificate-authority-data"]))
    server = urllib.parse.urlsplit(admin["server"])
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env |= {
        "PATH": os.environ["PATH"],
        "POD_IP": ports.LOOPBACK,
        "TEST_PORT": str(ports.free_port()),
        "TEST_TIMEOUT_SECONDS": "60",
        "SERVICE_ACCOUNT_DIR": str(account),
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port),
    }
    kubeconfig = service_account_kubeconfig(
        cluster, installed.namespace, installed.service_account, tmp_path / "kubeconfig"
    )

    with operator_process(
        kubeconfig,
        tmp_path,
        name=f"test-hook-operator-{installed.mode}",
        arguments=chart_arguments(cluster, installed),
    ):
        result = subprocess.run(
            [sys.executable, str(script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "punctual-test: PASS: slot " in result.stdout
    assert "Idempotency-Key " in result.stdout
    # It cleans up after itself: no ScheduledJob of the test is left.
    left = get_json(cluster, "sj", "-n", env["TEST_NAMESPACE"])["items"]
    assert [
        o["metadata"]["name"] for o in left if o["metadata"]["name"].startswith(installed.release)
    ] == []
    cluster.kubectl(
        "delete", "-f", "-", "--ignore-not-found",
        input="\n---\n".join(json.dumps(o) for o in hook if o["kind"] not in ("Pod", "ConfigMap")),
    )  # fmt: skip


def test_the_templated_crd_takes_over_a_crd_from_the_crds_folder_and_upgrades_it(
    helm: Helm, chart_cluster: LocalCluster, release_namespace: str
) -> None:
    """The documented path from crds/ (installed once, never upgraded) to crds.install."""
    cluster = chart_cluster
    release = "crd-adoption"
    helm.install(release, release_namespace, {})
    # A CRD older than the chart's: a printer column the chart does not have.
    cluster.kubectl(
        "patch", "crd", CRD_NAME, "--type=json",
        '--patch=[{"op": "add", "path": "/spec/versions/0/additionalPrinterColumns/-", '
        '"value": {"name": "Stale", "type": "string", "jsonPath": ".spec.every"}}]',
    )  # fmt: skip

    with pytest.raises(AssertionError, match="install with --skip-crds; to adopt"):
        helm.install(release, release_namespace, {"crds": {"install": True}}, upgrade=True)
    # Both CRDs of crds/ are adopted, as the chart's README says (ScheduledJob and Calendar).
    for name in (CRD_NAME, "calendars.punctual.dev"):
        cluster.kubectl("label", "crd", name, "app.kubernetes.io/managed-by=Helm")
        cluster.kubectl(
            "annotate", "crd", name,
            f"meta.helm.sh/release-name={release}",
            f"meta.helm.sh/release-namespace={release_namespace}",
        )  # fmt: skip
    helm.install(release, release_namespace, {"crds": {"install": True}}, upgrade=True)

    crd = get_json(cluster, "crd", CRD_NAME)
    chart_crd = yaml.safe_load((CHART / "crds" / f"{CRD_NAME}.yaml").read_text())
    assert crd["spec"]["versions"] == chart_crd["spec"]["versions"]
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    helm.uninstall(release, release_namespace)
    # Kept: deleting it would delete every ScheduledJob of the cluster.
    crd = get_json(cluster, "crd", CRD_NAME)
    assert crd["metadata"]["labels"]["app.kubernetes.io/instance"] == release
