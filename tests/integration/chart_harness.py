"""What the Helm chart tests need: helm, rendered manifests, a ServiceAccount's kubeconfig, an HTTP
receiver and the operator as a local process.

Nothing is faked: helm and kubectl are the binaries built by ``hack/build-control-plane.sh``,
the API server is a ``LocalCluster``'s, and the operator is the ``punctual run`` console script,
authenticated with nothing but a token of the chart's ServiceAccount, so a permission the
chart forgot shows up as a Forbidden error in a real run.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import http_targets
import yaml

from localcluster import LocalCluster, helm_release, manifests, ports, processes
from localcluster.binaries import REPO_ROOT, kubernetes_version, locate_chart_crds

T = TypeVar("T")

CHART = helm_release.CHART
PUNCTUAL = Path(sys.executable).parent / "punctual"
"""The console script of the environment the tests run in (``uv run`` installs it there)."""
OPERATOR_READY_TIMEOUT = 60.0
"""The operator answers /healthz in a few seconds on two cores; a loaded machine takes longer."""


def eventually(
    probe: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.5
) -> T:
    """The first truthy value of ``probe``; fails naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout:.0f}s")
        time.sleep(interval)


HelmError = helm_release.HelmError


def third_party_crds() -> list[dict[str, Any]]:
    """The Prometheus Operator's and cert-manager's CRDs, from their Go modules."""
    return [yaml.safe_load(path.read_text()) for path in locate_chart_crds()]


def install_crds(cluster: LocalCluster, crds: Sequence[Mapping[str, Any]]) -> list[str]:
    """``crds`` on the cluster's API server, Established; returns their ``crd/<name>``.
    Server-side apply: the largest are too big for a client-side apply's annotation."""
    names = [f"crd/{crd['metadata']['name']}" for crd in crds]
    manifest = "\n---\n".join(json.dumps(crd) for crd in crds)
    cluster.kubectl("apply", "--server-side", "-f", "-", input=manifest)
    manifests.wait_established(cluster, names)
    return names


class Helm:
    """The helm built for the cluster, with its caches and config in ``home`` (not ~/.cache)."""

    def __init__(self, cluster: LocalCluster, home: Path) -> None:
        self.cluster = cluster
        self.binary = cluster.binaries.directory / "helm"
        self.env = helm_release.helm_environment(cluster, home)

    def run(
        self, *args: str, check: bool = True, timeout: float = 180
    ) -> "subprocess.CompletedProcess[str]":
        result = subprocess.run(
            [str(self.binary), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise HelmError(result.returncode, result.args, result.stdout, result.stderr)
        return result

    def template(
        self,
        values: Mapping[str, Any],
        *,
        namespace: str = "punctual-system",
        release: str = "punctual",
        include_crds: bool = False,
    ) -> list[dict[str, Any]]:
        """The chart rendered with ``values``, as a list of objects."""
        args = [
            "template",
            release,
            str(CHART),
            f"--namespace={namespace}",
            # The cluster's version, not the one helm assumes by default (its client-go's).
            f"--kube-version={kubernetes_version()}",
            "--values=-",
        ]
        if include_crds:
            args.append("--include-crds")
        return _documents(self.run_with_input(args, json.dumps(dict(values))).stdout)

    def notes(self, values: Mapping[str, Any], *, namespace: str, release: str = "punctual") -> str:
        """What ``helm install`` prints after the objects (NOTES.txt), from a server-side dry
        run: rendered as for a real install, nothing created."""
        args = ["install", release, str(CHART), f"--namespace={namespace}", "--dry-run=server"]
        output = self.run_with_input([*args, "--values=-"], json.dumps(dict(values))).stdout
        return output.split("\nNOTES:\n", 1)[1]

    def run_with_input(self, args: Sequence[str], stdin: str) -> "subprocess.CompletedProcess[str]":
        result = subprocess.run(
            [str(self.binary), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise HelmError(result.returncode, result.args, result.stdout, result.stderr)
        return result

    def install(
        self,
        release: str,
        namespace: str,
        values: Mapping[str, Any],
        *,
        upgrade: bool = False,
    ) -> None:
        """``helm install`` (or ``upgrade``) and wait until every Deployment is Available."""
        verb = "upgrade" if upgrade else "install"
        arguments = [verb, release, str(CHART), f"--namespace={namespace}", "--values=-"]
        try:
            self.run_with_input([*arguments, "--wait", "--timeout=90s"], json.dumps(dict(values)))
        except (HelmError, subprocess.TimeoutExpired) as error:
            # What --wait was waiting for, in the failure itself: pods, their node, events.
            state = self.cluster.kubectl(
                "get", "deployments,replicasets,pods,events", f"--namespace={namespace}",
                "-o", "wide", check=False,
            )  # fmt: skip
            raise AssertionError(f"helm {verb} {release}: {error}\n{state.stdout}") from error

    def uninstall(self, release: str, namespace: str) -> None:
        self.run("uninstall", release, f"--namespace={namespace}", "--wait", "--timeout=120s")


def _documents(text: str) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(text) if document]


def kind_names(objects: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted(
        f"{o['kind']}/{o['metadata'].get('namespace', '-')}/{o['metadata']['name']}"
        for o in objects
    )


def is_helm_test(o: Mapping[str, Any]) -> bool:
    """Whether a rendered object is the `helm test` hook's (created by `helm test` only)."""
    return bool(o["metadata"].get("annotations", {}).get("helm.sh/hook") == "test")


def one(objects: Sequence[Mapping[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {kind_names(found)}"
    return dict(found[0])


# -- the ServiceAccount's own kubeconfig -------------------------------------------------------


def service_account_kubeconfig(
    cluster: LocalCluster, namespace: str, service_account: str, path: Path
) -> Path:
    """A kubeconfig with the cluster's server and CA and a fresh token of the ServiceAccount.

    The same identity the pods would have: a bound token from the TokenRequest API, which is
    what kubelet mounts, not a client certificate of the admin's.
    """
    token = cluster.kubectl(
        "create", "token", service_account, f"--namespace={namespace}", "--duration=1h"
    ).stdout.strip()
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": admin["clusters"],
        "users": [{"name": service_account, "user": {"token": token}}],
        "contexts": [
            {
                "name": "service-account",
                "context": {
                    "cluster": admin["clusters"][0]["name"],
                    "user": service_account,
                    "namespace": namespace,
                },
            }
        ],
        "current-context": "service-account",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


# -- an HTTP target ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    path: str
    headers: dict[str, str]
    arrived: datetime
    """Stamped before anything of the request is read."""


class Receiver(http_targets.LocalHttpTarget):
    """Answers 204 and records every call with its headers."""

    def __init__(self, *, host: str = ports.LOOPBACK) -> None:
        self._calls: list[Call] = []
        self._lock = threading.Lock()
        super().__init__(host=host)

    def __enter__(self) -> "Receiver":
        super().__enter__()
        return self

    def respond(self, path: str, headers: Mapping[str, str], *, arrived: datetime) -> int:
        with self._lock:
            self._calls.append(Call(path, dict(headers), arrived))
        return 204

    def calls(self, path: str) -> list[Call]:
        with self._lock:
            return [call for call in self._calls if call.path == path]


# -- the operator, as the chart's ServiceAccount --------------------------------------------------


@contextlib.contextmanager
def operator_process(
    kubeconfig: Path, run_dir: Path, *, name: str, arguments: Sequence[str]
) -> Iterator[processes.ManagedProcess]:
    """``punctual run`` with the ServiceAccount's kubeconfig, until /healthz answers.

    Metrics and health listen on free loopback ports (the chart's 8080/8081 may be taken on a
    developer's machine). The process is stopped, and its group reaped, on the way out.
    """
    health_port = ports.free_port()
    argv = [
        str(PUNCTUAL),
        "run",
        "--bind-address",
        ports.LOOPBACK,
        "--metrics-port",
        str(ports.free_port()),
        "--health-port",
        str(health_port),
        "--replica-id",
        name,
        *arguments,
    ]
    # Only the ServiceAccount's kubeconfig: no admin credentials and no Redis URL leak in from
    # the developer's environment.
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("KUBECONFIG", "PUNCTUAL_REDIS_URL")
    }
    env["KUBECONFIG"] = str(kubeconfig)
    process = processes.start(name, argv, run_dir, env=env, cwd=REPO_ROOT)
    try:
        processes.wait_until(
            process,
            lambda: _answers(f"http://{ports.LOOPBACK}:{health_port}/healthz"),
            "GET /healthz answers 200",
            OPERATOR_READY_TIMEOUT,
        )
        yield process
    finally:
        process.stop()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


# -- a container SIGKILLed -------------------------------------------------------------------


def kill_container_processes(container_id: str) -> int:
    """SIGKILLs every process of the container (found by its cgroup); how many there were."""
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if container_id in (entry / "cgroup").read_text():
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
    return killed
