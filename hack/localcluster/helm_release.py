"""Punctual installed with Helm from ``charts/punctual`` onto a real node, as users install it.

The images come from this repository, never from a registry: ``make image``'s operator archive
(``hack/image/build.sh``, named ``docker.io/library/punctual:<version>``, which the chart's
default ``image: punctual:<appVersion>`` resolves to), its gate image for warm Jobs
(``hack/image/build-gate.sh``, ``docker.io/library/punctual-gate:<version>``: the default of
``warmStart.gateImage``, pulled IfNotPresent) and the bundled Redis's
(``hack/image/build-redis.sh``: ``localhost/punctual-redis:local``), all loaded into the node
(``LocalCluster(real_node=True, images=local_image_archives())``). ``LOCAL_VALUES`` are the
values that differ from the chart's defaults for that: the bundled Redis's image (the lock
backend is the chart's default, redis, on the bundled Redis the chart deploys for it).

``HelmRelease`` is one release: ``install`` (waiting until every Deployment is Available through
its real probes), ``upgrade``, ``test`` (the chart's ``helm test`` hook) and ``uninstall``, with
the helm built with the control plane and its caches under the release's own folder.
"""

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localcluster.binaries import REPO_ROOT
from localcluster.cluster import LocalCluster

CHART = REPO_ROOT / "charts" / "punctual"
IMAGE_SCRIPTS = REPO_ROOT / "hack" / "image"
GATE_IMAGE_BUILD = IMAGE_SCRIPTS / "build-gate.sh"
IMAGE_BUILDS = [IMAGE_SCRIPTS / "build.sh", GATE_IMAGE_BUILD, IMAGE_SCRIPTS / "build-redis.sh"]
IMAGE_BUILD_TIMEOUT = 1800.0
"""Cold, on two cores: about 1.5 minutes for the operator, seconds for the gate, 1 for Redis."""
LOCAL_REDIS_IMAGE = {"repository": "localhost/punctual-redis", "tag": "local"}
LOCAL_VALUES: dict[str, Any] = {"redis": {"bundled": {"image": LOCAL_REDIS_IMAGE}}}
INSTALL_TIMEOUT = "180s"


def local_image_archives() -> list[Path]:
    """The OCI archives of the operator, the gate of warm Jobs and the bundled Redis (built once,
    then reused)."""
    return [built_image(script) for script in IMAGE_BUILDS]


def built_image(script: Path) -> Path:
    """The OCI archive an image script builds (or reuses): the last line it prints."""
    result = subprocess.run(
        [str(script)], check=True, stdout=subprocess.PIPE, text=True, timeout=IMAGE_BUILD_TIMEOUT
    )
    return Path(result.stdout.strip().splitlines()[-1])


def merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` on top of ``base``, maps merged key by key (as helm merges values)."""
    result = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result


def helm_environment(cluster: LocalCluster, home: Path) -> dict[str, str]:
    """A helm child's environment: the cluster's kubeconfig, helm's caches and config in ``home``
    (not the developer's ~/.cache and ~/.config)."""
    return {
        **cluster.env,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }


class HelmError(subprocess.CalledProcessError):
    def __str__(self) -> str:
        return f"{super().__str__()}\n{self.stdout}\n{self.stderr}".rstrip()


class HelmRelease:
    """The release ``name`` of ``charts/punctual`` in ``namespace``; helm's state in ``home``."""

    def __init__(
        self, cluster: LocalCluster, home: Path, *, name: str = "punctual", namespace: str
    ) -> None:
        self.cluster = cluster
        self.name = name
        self.namespace = namespace
        self.binary = cluster.binaries.directory / "helm"
        self.env = helm_environment(cluster, home)

    def helm(
        self, *args: str, values: Mapping[str, Any] | None = None, timeout: float = 300
    ) -> "subprocess.CompletedProcess[str]":
        argv = [str(self.binary), *args, f"--namespace={self.namespace}"]
        if values is not None:
            argv.append("--values=-")
        result = subprocess.run(
            argv,
            input=json.dumps(dict(values)) if values is not None else None,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            state = self.cluster.kubectl(
                "get", "deployments,replicasets,pods,events", f"--namespace={self.namespace}",
                "-o", "wide", check=False,
            )  # fmt: skip
            raise HelmError(result.returncode, argv, result.stdout, result.stderr + state.stdout)
        return result

    def install(self, values: Mapping[str, Any]) -> None:
        """``helm install --create-namespace --wait``: every Deployment Available."""
        self.helm(
            "install", self.name, str(CHART), "--create-namespace", "--wait",
            f"--timeout={INSTALL_TIMEOUT}", values=values,
        )  # fmt: skip

    def upgrade(self, values: Mapping[str, Any]) -> None:
        """``helm upgrade --reuse-values --wait`` with ``values`` on top."""
        self.helm(
            "upgrade", self.name, str(CHART), "--reuse-values", "--wait",
            f"--timeout={INSTALL_TIMEOUT}", values=values,
        )  # fmt: skip

    def test(self) -> "subprocess.CompletedProcess[str]":
        # No --logs: the hook's pod is deleted once it succeeded (hook-delete-policy).
        return self.helm("test", self.name, "--timeout=180s")

    def uninstall(self) -> None:
        self.helm("uninstall", self.name, "--wait", "--timeout=120s")

    def operator_pods(self) -> list[dict[str, Any]]:
        """The release's operator pods, those terminating left out."""
        listed = self.cluster.kubectl(
            "get", "pods", f"--namespace={self.namespace}", "-o", "json",
            f"--selector=app.kubernetes.io/instance={self.name},"
            "app.kubernetes.io/component=operator",
        )  # fmt: skip
        pods = json.loads(listed.stdout)["items"]
        return [pod for pod in pods if not pod["metadata"].get("deletionTimestamp")]
