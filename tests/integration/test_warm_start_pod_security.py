"""A warm Job's pod passes PodSecurity ``restricted`` on the real API server: in a namespace
enforcing it, the pod of a compliant template, rewritten for Exec and for Init
(``targets.job.warm``), is accepted by a server-side dry run; the same pod with one added
container's security context removed is refused, so the check bites. No node is needed: the
API server's admission decides, nothing is stored."""

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from localcluster import LocalCluster
from localcluster.api import ApiError
from punctual.api import job_models
from punctual.targets.job import warm

RESTRICTED = "pod-security.kubernetes.io/enforce=restricted"
RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}
# Compliant as users write it: non-root and RuntimeDefault seccomp for the whole pod, the rest
# per container; an init container, a native sidecar, one container with a command, one without.
TEMPLATE: dict[str, Any] = {
    "spec": {
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": 1000,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "initContainers": [
                    {
                        "name": "proxy",
                        "image": "registry.example/proxy:1",
                        "command": ["/proxy"],
                        "restartPolicy": "Always",
                        "securityContext": RESTRICTED_CONTAINER,
                    },
                    {
                        "name": "setup",
                        "image": "registry.example/setup:1",
                        "command": ["/setup"],
                        "securityContext": RESTRICTED_CONTAINER,
                    },
                ],
                "containers": [
                    {
                        "name": "report",
                        "image": "registry.example/report:1",
                        "command": ["/report"],
                        "args": ["--day", "today"],
                        "securityContext": RESTRICTED_CONTAINER,
                    },
                    {
                        "name": "shipper",
                        "image": "registry.example/shipper:1",
                        "securityContext": RESTRICTED_CONTAINER,
                    },
                ],
            }
        }
    }
}


@pytest.fixture
def restricted_namespace(cluster: LocalCluster, namespace: str) -> str:
    cluster.kubectl("label", "namespace", namespace, RESTRICTED)
    return namespace


def warm_pod_spec(mode: job_models.WarmStartMode) -> dict[str, Any]:
    job = warm.rewrite(
        TEMPLATE,
        release_at=datetime.now(UTC) + timedelta(seconds=30),
        mode=mode,
        gate_image="registry.example/punctual-gate:1",
    )
    assert job.mode is mode
    spec: dict[str, Any] = job.template["spec"]["template"]["spec"]
    return spec


def dry_run_pod(cluster: LocalCluster, namespace: str, pod_spec: dict[str, Any]) -> None:
    """Raises ``ApiError`` when the API server refuses the pod."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "warm", "namespace": namespace},
        "spec": pod_spec,
    }
    cluster.api.request_text("POST", f"/api/v1/namespaces/{namespace}/pods?dryRun=All", pod)


MODES = [job_models.WarmStartMode.EXEC, job_models.WarmStartMode.INIT]


@pytest.mark.parametrize("mode", MODES, ids=[mode.value for mode in MODES])
def test_a_warm_pod_of_a_compliant_template_is_accepted(
    cluster: LocalCluster, restricted_namespace: str, mode: job_models.WarmStartMode
) -> None:
    dry_run_pod(cluster, restricted_namespace, warm_pod_spec(mode))


@pytest.mark.parametrize("mode", MODES, ids=[mode.value for mode in MODES])
def test_one_added_container_without_its_security_context_is_refused(
    cluster: LocalCluster, restricted_namespace: str, mode: job_models.WarmStartMode
) -> None:
    pod_spec = copy.deepcopy(warm_pod_spec(mode))
    [pull, *_] = [c for c in pod_spec["initContainers"] if c["name"].startswith("punctual-pull-")]
    del pull["securityContext"]

    with pytest.raises(ApiError) as refused:
        dry_run_pod(cluster, restricted_namespace, pod_spec)

    assert refused.value.status == 403
    assert "violates PodSecurity" in str(refused.value)
    assert f'container \\"{pull["name"]}\\"' in str(refused.value)
