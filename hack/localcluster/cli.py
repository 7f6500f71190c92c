"""The command line: ``python -m localcluster up`` and ``python -m localcluster run``.

``up`` starts the control plane and Redis (with ``--real-node`` a real node too, whose containers
run), says how to reach them, and waits for Ctrl-C. ``run`` (what ``make run`` calls) builds (or
reuses) the operator's, its gate's and the bundled Redis's images, starts the control plane with a
real node that loads them, installs Punctual with Helm from ``charts/punctual`` (its default lock
backend, redis, on the bundled Redis: ``helm_release.LOCAL_VALUES``), makes the Service ``echo``
that the HTTP examples call (a receiver on this machine printing each call), applies ``examples/``
and shows ``kubectl get sj`` and the operator pods' log as they change. Both stop everything they
started (``run``: ``helm uninstall`` first) on Ctrl-C, SIGTERM, or when a component dies (showing
its log tail).
"""

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from localcluster import helm_release, manifests, processes
from localcluster.binaries import BinariesUnavailableError, locate_binaries
from localcluster.cluster import LocalCluster
from localcluster.echo import ECHO_PORT, EchoServer
from localcluster.node import NODE_NAME
from localcluster.redis import LocalRedis

WATCH_INTERVAL_SECONDS = 5.0
RELEASE_NAMESPACE = "punctual-system"
PROBE_LOG_LINE = '"GET /healthz HTTP/1.1" 200'
_started = time.monotonic()


def say(message: str) -> None:
    print(
        f"[localcluster {time.monotonic() - _started:5.1f}s] {message}", file=sys.stderr, flush=True
    )


@contextlib.contextmanager
def _cluster(
    run_dir: Path, *, kwok: bool, real_node: bool, images: Sequence[Path] = ()
) -> Iterator[LocalCluster]:
    say("locating the control-plane binaries (the first build takes 15-30 minutes) ...")
    binaries = locate_binaries(progress=say)
    say(f"binaries: {binaries.directory}")
    if kwok and not binaries.has_kwok:
        say("kwok is not built: no fake node, so pods will stay Pending")
        kwok = False
    components = "etcd, kube-apiserver, kube-controller-manager, kube-scheduler"
    if kwok:
        components += ", kwok"
    if real_node:
        components += ", a real node (containerd, kubelet, kube-proxy, CoreDNS)"
    say(f"starting {components} ...")
    with LocalCluster(
        kwok=kwok,
        real_node=real_node,
        images=images,
        binaries=binaries,
        run_dir=run_dir / "cluster",
        progress=say,
    ) as cluster:
        try:
            yield cluster
        finally:
            say("stopping ...")


@contextlib.contextmanager
def _environment(
    run_dir: Path, *, kwok: bool, real_node: bool, redis_password: str | None
) -> Iterator[tuple[LocalCluster, LocalRedis]]:
    with _cluster(run_dir, kwok=kwok, real_node=real_node) as cluster:
        say("starting redis-server ...")
        with LocalRedis(run_dir=run_dir / "redis", password=redis_password) as redis:
            say(f"redis-server is answering on {redis.url}")
            yield cluster, redis


def _how_to_connect(cluster: LocalCluster, redis: LocalRedis | None = None) -> str:
    node = []
    if cluster.with_real_node:
        address = cluster.node.address
        node = [
            f"# Real node {NODE_NAME} ({address.node_address}): pods run localhost/punctual-*:local"
            f" images; they reach this machine at {address.host_address}.",
        ]
    return "\n".join(
        [
            "",
            "# In another shell, to use this cluster (with the kubectl built for it) and Redis:",
            *node,
            f"export KUBECONFIG={cluster.kubeconfig}",
            f"export PATH={cluster.binaries.directory}:$PATH",
            *([f"export PUNCTUAL_REDIS_URL={redis.url}"] if redis else []),
            "",
        ]
    )


def _watch(
    watched: Iterable[processes.ManagedProcess],
    tick: Callable[[], None] | None = None,
    interval: float = WATCH_INTERVAL_SECONDS,
) -> None:
    """Until Ctrl-C: runs ``tick`` every ``interval`` and fails as soon as a process dies."""
    watched = list(watched)
    while True:
        for process in watched:
            if not process.running():
                raise processes.ComponentError(
                    process, f"exited unexpectedly with code {process.popen.returncode}"
                )
        if tick is not None:
            tick()
        time.sleep(interval)


def up(run_dir: Path, *, kwok: bool, real_node: bool, redis_password: str | None) -> None:
    with _environment(run_dir, kwok=kwok, real_node=real_node, redis_password=redis_password) as (
        cluster,
        redis,
    ):
        print(_how_to_connect(cluster, redis), flush=True)
        say("up; Ctrl-C stops everything")
        _watch([*cluster.launched, *([redis.process] if redis.process else [])])


def _echo_service(host_address: str) -> dict[str, object]:
    """The Service ``echo`` of ``default`` (the HTTP examples' target), without a selector: its one
    endpoint is the echo server on the machine's side of the node's link."""
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "echo", "namespace": "default"},
                "spec": {"ports": [{"name": "http", "port": ECHO_PORT, "targetPort": ECHO_PORT}]},
            },
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "echo-machine",
                    "namespace": "default",
                    "labels": {"kubernetes.io/service-name": "echo"},
                },
                "addressType": "IPv4",
                "ports": [{"name": "http", "port": ECHO_PORT, "protocol": "TCP"}],
                "endpoints": [{"addresses": [host_address]}],
            },
        ],
    }


class _LogFollower:
    """``kubectl logs -f`` of the release's operator pods, started again when it ends (a pod
    replaced); ``new_lines()`` is what it wrote since the last call, probes left out."""

    def __init__(self, cluster: LocalCluster, run_dir: Path) -> None:
        self.cluster = cluster
        self.run_dir = run_dir
        self.process: processes.ManagedProcess | None = None
        self.offset = 0

    def new_lines(self) -> str:
        if self.process is None or not self.process.running():
            self.process = processes.start(
                "operator-pods-log",
                [
                    str(self.cluster.binaries.kubectl), f"--kubeconfig={self.cluster.kubeconfig}",
                    "logs", "--follow", "--prefix", "--tail=20", "--max-log-requests=10",
                    f"--namespace={RELEASE_NAMESPACE}",
                    "--selector=app.kubernetes.io/component=operator",
                ],
                self.run_dir,
            )  # fmt: skip
        with self.process.log_path.open("rb") as log:
            log.seek(self.offset)
            text = log.read()
            self.offset += len(text)
        # The kubelet's probes of /healthz, one access line each, would drown the rest.
        lines = text.decode(errors="replace").splitlines(keepends=True)
        return "".join(line for line in lines if PROBE_LOG_LINE not in line)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


def run(run_dir: Path, *, kwok: bool) -> None:
    """``make run``: the real node, Punctual installed on it with Helm, the examples, the view."""
    say("building (or reusing) the operator's, the gate's and the bundled Redis's images ...")
    images = helm_release.local_image_archives()
    say("images: " + ", ".join(path.name for path in images))
    with _cluster(run_dir, kwok=kwok, real_node=True, images=images) as cluster:
        host_address = cluster.node.address.host_address
        release = helm_release.HelmRelease(cluster, run_dir / "helm", namespace=RELEASE_NAMESPACE)
        say(f"helm install punctual charts/punctual -n {RELEASE_NAMESPACE} (bundled Redis) ...")
        release.install(helm_release.LOCAL_VALUES)
        follower = _LogFollower(cluster, run_dir)
        try:
            say("installed: the operator's Deployment is Available")
            with EchoServer(host=host_address) as echo:
                cluster.kubectl("apply", "-f", "-", input=json.dumps(_echo_service(host_address)))
                say(f"Service default/echo (the HTTP examples' target) -> {echo.url}")
                examples = manifests.apply_examples(cluster)
                say("applied examples: " + (", ".join(p.name for p in examples) or "none"))
                connect = _how_to_connect(cluster)
                print(connect, flush=True)

                def refresh() -> None:
                    table = cluster.kubectl("get", "sj", "--all-namespaces", check=False)
                    print(f"--- kubectl get sj --all-namespaces ({time.strftime('%H:%M:%S')}) ---")
                    print((table.stdout or table.stderr).rstrip())
                    print(f"--- the operator's pods ({RELEASE_NAMESPACE}), new log lines ---")
                    print(follower.new_lines().rstrip())
                    print("--- Ctrl-C removes everything ---", flush=True)

                _watch(cluster.launched, tick=refresh)
        finally:
            follower.stop()
            say("helm uninstall punctual ...")
            with contextlib.suppress(helm_release.HelmError, subprocess.TimeoutExpired):
                release.uninstall()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcluster", description=__doc__)
    parser.add_argument("command", choices=["up", "run"])
    parser.add_argument("--no-kwok", action="store_true", help="no fake node (pods stay Pending)")
    parser.add_argument(
        "--real-node",
        action="store_true",
        help="up: a real node too (containerd, kubelet, kube-proxy, CoreDNS): containers really"
        " run; the kwok node is then tainted kwok.x-k8s.io/node=fake:NoSchedule (run always has"
        " one)",
    )
    parser.add_argument(
        "--redis-password",
        help="up: start Redis with requirepass (run uses the chart's bundled Redis)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the run directory (logs, kubeconfig) on exit"
    )
    args = parser.parse_args(argv)
    processes.stop_on_first_interrupt()
    run_dir = Path(tempfile.mkdtemp(prefix="punctual-local-"))
    say(f"run directory (logs, kubeconfig, PKI): {run_dir}")
    keep = args.keep
    try:
        if args.command == "up":
            up(
                run_dir,
                kwok=not args.no_kwok,
                real_node=args.real_node,
                redis_password=args.redis_password,
            )
        else:
            run(run_dir, kwok=not args.no_kwok)
    except KeyboardInterrupt:
        say("stopped")
        return 130
    except (processes.ComponentError, BinariesUnavailableError) as error:
        keep = True
        say(f"failed: {error}")
        return 1
    finally:
        if keep:
            say(f"kept {run_dir}")
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
    return 0
