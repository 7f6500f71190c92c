"""The real node of the harness: containers really run (one held by the gate of warm start until its
instant), reach Services by name and the API server through the ``kubernetes`` Service, and
nothing the node made outlives it.

One cluster with a real node (no kwok, conftest's ``real_node_cluster``) is shared by the
module's tests; each test works in a namespace of its own.
"""

import http.server
import json
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from localcluster import LocalCluster, processes
from localcluster.binaries import REPO_ROOT, NodeImages, locate_node_images
from localcluster.helm_release import GATE_IMAGE_BUILD, built_image
from localcluster.node import NODE_NAME, sweep_orphaned_nodes

pytestmark = pytest.mark.real_node

WORKLOAD = NodeImages.WORKLOAD
WAIT = "60s"
VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
GATE_LEAD_MS = 5000
"""How far ahead of the pod's creation the gate's instant is: about when the pod is Running."""


def apply(cluster: LocalCluster, namespace: str, *manifests: dict[str, object]) -> None:
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=yaml.safe_dump_all(manifests))


def workload_job(
    name: str,
    env: dict[str, str],
    args: list[str] | None = None,
    *,
    retries: int = 0,
    image: str = WORKLOAD,
) -> dict[str, object]:
    container: dict[str, object] = {
        "name": "workload",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [{"name": key, "value": value} for key, value in env.items()],
    }
    if args:
        container["args"] = args
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": retries,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


def run_job_to_completion(
    cluster: LocalCluster, namespace: str, name: str, env: dict[str, str], *, retries: int = 0
) -> str:
    """Runs a workload Job, waits until it completes and returns its container's log."""
    apply(cluster, namespace, workload_job(name, env, retries=retries))
    completed = cluster.kubectl(
        "-n", namespace, "wait", "--for=condition=Complete", f"--timeout={WAIT}", f"job/{name}",
        check=False, timeout=90,
    )  # fmt: skip
    # Every attempt's log, should the Job have retried.
    log = cluster.kubectl(
        "-n", namespace, "logs", f"--selector=batch.kubernetes.io/job-name={name}", check=False
    )
    assert completed.returncode == 0, f"{completed.stderr}\nlog: {log.stdout}{log.stderr}"
    return log.stdout


class Receiver:
    """An HTTP server on the machine's side of the node's link: what a pod calls."""

    def __init__(self, address: str) -> None:
        self.arrivals: list[tuple[str, float]] = []
        arrivals = self.arrivals

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                arrivals.append((self.path, time.time()))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer((address, 0), Handler)
        self.url = f"http://{address}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def receiver(real_node_cluster: LocalCluster) -> Iterator[Receiver]:
    server = Receiver(real_node_cluster.node.address.host_address)
    yield server
    server.close()


class TestTheNodeIsReal:
    def test_the_node_is_ready_at_an_address_that_is_not_loopback(
        self, real_node_cluster: LocalCluster
    ) -> None:
        node = json.loads(real_node_cluster.kubectl("get", "node", NODE_NAME, "-o", "json").stdout)
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "True"
        addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
        assert addresses["InternalIP"] == real_node_cluster.node.address.node_address
        assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")


class TestContainersReallyRun:
    def test_a_jobs_container_runs_and_kubectl_logs_shows_what_it_printed(
        self, real_node_cluster: LocalCluster, node_namespace: str
    ) -> None:
        log = run_job_to_completion(
            real_node_cluster,
            node_namespace,
            "prints",
            {
                "PUNCTUAL_SCHEDULED_TIME": "2026-12-01T13:00:00Z",
                "PUNCTUAL_IDEMPOTENCY_KEY": "default/prints/1796130000",
            },
        )
        assert log.splitlines() == [
            "PUNCTUAL_IDEMPOTENCY_KEY=default/prints/1796130000",
            "PUNCTUAL_SCHEDULED_TIME=2026-12-01T13:00:00Z",
        ]

    def test_the_workload_calls_a_receiver_on_the_machine_the_moment_it_starts(
        self, real_node_cluster: LocalCluster, node_namespace: str, receiver: Receiver
    ) -> None:
        created = time.time()
        log = run_job_to_completion(
            real_node_cluster, node_namespace, "calls", {"CALL_URL": f"{receiver.url}/started"}
        )
        assert "HTTP 200 ok" in log
        [(path, arrived)] = receiver.arrivals
        assert path == "/started"
        print(f"the container called {(arrived - created) * 1000:.0f} ms after the Job's creation")
        assert arrived - created < 30


class TestFurtherImages:
    def test_an_oci_archive_loaded_later_runs_by_the_name_it_carries(
        self, real_node_cluster: LocalCluster, node_namespace: str, tmp_path: Path
    ) -> None:
        # Another image: the workload's archive under another name, as `make image` writes one.
        workload = locate_node_images().archives[1]
        archive = tmp_path / "extra.tar"
        subprocess.run(
            ["skopeo", "copy", "--quiet", f"oci-archive:{workload}",
             f"oci-archive:{archive}:localhost/punctual-extra:test"],
            check=True, timeout=60,
        )  # fmt: skip
        real_node_cluster.load_image(archive)
        job = workload_job(
            "extra", {"PUNCTUAL_FROM": "extra"}, image="localhost/punctual-extra:test"
        )
        apply(real_node_cluster, node_namespace, job)
        real_node_cluster.kubectl(
            "-n", node_namespace, "wait", "--for=condition=Complete", f"--timeout={WAIT}",
            "job/extra", timeout=90,
        )  # fmt: skip
        log = real_node_cluster.kubectl("-n", node_namespace, "logs", "job/extra").stdout
        assert log == "PUNCTUAL_FROM=extra\n"


class TestTheGateOfWarmStart:
    def test_a_container_of_an_image_without_a_shell_is_released_by_the_gate_it_was_given(
        self, real_node_cluster: LocalCluster, node_namespace: str
    ) -> None:
        # As a warm Job's pod has it (docs/warm-start.md): the gate image copies the gate into an
        # emptyDir, the user's image runs it (noop, then --at ... -- its command) as its own user.
        real_node_cluster.load_image(built_image(GATE_IMAGE_BUILD))
        release_at = time.time_ns() // 1_000_000 + GATE_LEAD_MS
        gate_at = ["/punctual-gate/gate", "--at", str(release_at), "--"]
        mount = {"name": "punctual-gate", "mountPath": "/punctual-gate", "readOnly": True}
        restricted = {
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
            "readOnlyRootFilesystem": True,
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "gated"},
            "spec": {
                "restartPolicy": "Never",
                "volumes": [{"name": "punctual-gate", "emptyDir": {"sizeLimit": "16Mi"}}],
                "initContainers": [
                    {
                        "name": "punctual-gate",
                        "image": f"punctual-gate:{VERSION}",
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["/gate", "install", "/punctual-gate/gate"],
                        "volumeMounts": [{**mount, "readOnly": False}],
                        "securityContext": {**restricted, "runAsUser": 65532},
                    },
                    {
                        "name": "punctual-pull-0",
                        "image": WORKLOAD,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["/punctual-gate/gate", "noop"],
                        "volumeMounts": [mount],
                        "securityContext": restricted,
                    },
                ],
                "containers": [
                    {
                        "name": "workload",
                        "image": WORKLOAD,
                        "imagePullPolicy": "IfNotPresent",
                        "command": [*gate_at, "/workload", "PUNCTUAL_FROM"],
                        "env": [{"name": "PUNCTUAL_FROM", "value": "gate"}],
                        "volumeMounts": [mount],
                        "securityContext": restricted,
                    }
                ],
            },
        }
        apply(real_node_cluster, node_namespace, pod)
        real_node_cluster.kubectl(
            "-n", node_namespace, "wait", "--for=jsonpath={.status.phase}=Succeeded",
            f"--timeout={WAIT}", "pod/gated", timeout=90,
        )  # fmt: skip

        released, printed = real_node_cluster.kubectl(
            "-n", node_namespace, "logs", "pod/gated", "-c", "workload"
        ).stdout.splitlines()
        line = json.loads(released)
        assert line["punctualGate"] == "released"
        assert line["releaseAtMs"] == release_at
        assert line["nodeClockMs"] >= release_at
        assert printed == "PUNCTUAL_FROM=gate"
        print(f"the gate released the workload {line['lateMs']} ms after its instant")


class TestServicesLikeARealCluster:
    def test_a_pod_resolves_a_service_by_its_dns_name_and_reaches_it(
        self, real_node_cluster: LocalCluster, node_namespace: str
    ) -> None:
        labels = {"app": "web"}
        apply(
            real_node_cluster,
            node_namespace,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "web", "labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": WORKLOAD,
                            "args": ["serve", ":8080"],
                            "readinessProbe": {
                                "httpGet": {"path": "/", "port": 8080},
                                "periodSeconds": 1,
                            },
                        }
                    ]
                },
            },
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web"},
                "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]},
            },
        )
        real_node_cluster.kubectl(
            "-n", node_namespace, "wait", "--for=condition=Ready", f"--timeout={WAIT}", "pod/web",
            timeout=90,
        )  # fmt: skip
        log = run_job_to_completion(
            real_node_cluster,
            node_namespace,
            "asks-web",
            {"CALL_URL": f"http://web.{node_namespace}.svc.cluster.local/"},
            # As in any cluster, kube-proxy writes the new endpoint's rules a moment after the
            # pod is Ready: until then the Service refuses.
            retries=3,
        )
        assert "HTTP 200 hello from web" in log

    def test_a_pod_reaches_the_api_server_through_the_kubernetes_service_with_its_token(
        self, real_node_cluster: LocalCluster, node_namespace: str
    ) -> None:
        # /api needs an authenticated user: the pod's service-account token, over TLS verified
        # against the service-account CA for the name kubernetes.default.svc.
        log = run_job_to_completion(
            real_node_cluster,
            node_namespace,
            "asks-api",
            {"CALL_URL": "https://kubernetes.default.svc/api"},
        )
        assert "HTTP 200" in log
        assert '"kind":"APIVersions"' in log


class TestPodsStayOnTheMachine:
    def test_the_node_has_no_default_route_and_the_machine_routes_only_its_block_to_it(
        self, real_node_cluster: LocalCluster
    ) -> None:
        node = real_node_cluster.node
        routes = node.node_run("ip", "-4", "route", "show").stdout
        assert "default" not in routes
        to_node = subprocess.run(
            ["ip", "-4", "route", "show", "dev", node.address.host_interface],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
        assert sorted(line.split()[0] for line in to_node if line) == sorted(
            [node.address.cidr, f"{node.address.host_address[:-1]}0/30"]
        )

    def test_pods_are_not_masqueraded(self, real_node_cluster: LocalCluster) -> None:
        rules = real_node_cluster.node.node_run("iptables-save", "-t", "nat").stdout
        masquerading = [line for line in rules.splitlines() if "MASQUERADE" in line]
        # kube-proxy's only MASQUERADE: Service traffic it marked itself (a pod reaching itself
        # through its Service), never the pods' own traffic.
        assert all("KUBE-POSTROUTING" in line for line in masquerading), masquerading


class TestNothingOutlivesTheNode:
    def test_a_node_stopped_by_a_failing_block_leaves_no_process_mount_cgroup_or_link(
        self, tmp_path: Path
    ) -> None:
        cluster = LocalCluster(kwok=False, real_node=True, run_dir=tmp_path / "cluster")

        def fail_with_a_container_running() -> None:
            with cluster:
                apply(cluster, "default", workload_job("serves", {}, ["serve", ":8080"]))
                cluster.kubectl(
                    "wait", "--for=condition=Ready", f"--timeout={WAIT}",
                    "pod", "-l", "job-name=serves", timeout=90,
                )  # fmt: skip
                raise RuntimeError("the test failed here")

        with pytest.raises(RuntimeError, match="the test failed here"):
            fail_with_a_container_running()
        assert processes.alive(cluster.pids) == []
        assert cluster.node.leftovers() == []
        block = cluster.node.address.cidr.rsplit(".", 2)[0]
        for save in (["iptables-save"], ["nft", "list", "ruleset"]):
            ruleset = subprocess.run(save, capture_output=True, text=True, check=True).stdout
            assert block + "." not in ruleset

    def test_a_node_whose_launcher_was_killed_outright_is_swept_by_the_next_one(
        self, tmp_path: Path
    ) -> None:
        # The launcher's children die with it, containerd's shims and their containers do not.
        launcher = subprocess.run(
            [sys.executable, "-c", ORPHANING_LAUNCHER, str(tmp_path / "cluster")],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert launcher.returncode == -signal.SIGKILL, launcher.stderr
        cgroup, interface = launcher.stdout.split()
        assert sweep_orphaned_nodes() == [cgroup]
        assert not list(Path("/sys/fs/cgroup").glob(f"*/{cgroup}"))
        deadline = time.monotonic() + 10
        while Path(f"/sys/class/net/{interface}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)  # the kernel frees a network namespace a moment after its last user
        assert not Path(f"/sys/class/net/{interface}").exists()


ORPHANING_LAUNCHER = """
import os, signal, sys
from pathlib import Path
from localcluster import LocalCluster
cluster = LocalCluster(kwok=False, real_node=True, run_dir=Path(sys.argv[1]))
cluster.start()
image = "--image=localhost/punctual-workload:local"
cluster.kubectl("run", "serves", image, "--", "serve", ":8080")
cluster.kubectl("wait", "--for=condition=Ready", "pod/serves", "--timeout=60s", timeout=90)
print(cluster.node.cgroup_name, cluster.node.address.host_interface, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
