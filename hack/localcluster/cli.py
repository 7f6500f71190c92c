"""The command line: ``python -m localcluster up`` and ``python -m localcluster run``.

``up`` starts the control plane and Redis (with ``--real-node`` a real node too, whose
containers run), says how to reach them, and waits for Ctrl-C. ``run``
(what ``make run`` calls) does the same, installs the CRDs from ``crds/`` and, once the operator
exists, runs it, applies ``examples/`` and shows ``kubectl get sj`` as it changes. Both stop
everything they started on Ctrl-C, SIGTERM, or when a component dies (showing its log tail).
"""

import argparse
import contextlib
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from localcluster import manifests, processes
from localcluster.binaries import BinariesUnavailableError, locate_binaries
from localcluster.cluster import LocalCluster
from localcluster.echo import EchoServer
from localcluster.node import NODE_NAME
from localcluster.punctual_operator import find_operator, start_operator
from localcluster.redis import LocalRedis

WATCH_INTERVAL_SECONDS = 5.0
OPERATOR_LOG_LINES = 15
_started = time.monotonic()


def say(message: str) -> None:
    print(
        f"[localcluster {time.monotonic() - _started:5.1f}s] {message}", file=sys.stderr, flush=True
    )


@contextlib.contextmanager
def _environment(
    run_dir: Path, *, kwok: bool, real_node: bool, redis_password: str | None
) -> Iterator[tuple[LocalCluster, LocalRedis]]:
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
        binaries=binaries,
        run_dir=run_dir / "cluster",
        progress=say,
    ) as cluster:
        say("starting redis-server ...")
        with LocalRedis(run_dir=run_dir / "redis", password=redis_password) as redis:
            say(f"redis-server is answering on {redis.url}")
            try:
                yield cluster, redis
            finally:
                say("stopping ...")


def _how_to_connect(cluster: LocalCluster, redis: LocalRedis) -> str:
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
            f"export PUNCTUAL_REDIS_URL={redis.url}",
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


def _show_scheduled_jobs(cluster: LocalCluster, operator: processes.ManagedProcess) -> None:
    table = cluster.kubectl("get", "sj", "--all-namespaces", check=False)
    if sys.stdout.isatty():
        print("\x1b[2J\x1b[H", end="")
    print(f"--- kubectl get sj --all-namespaces ({time.strftime('%H:%M:%S')}) ---")
    print((table.stdout or table.stderr).rstrip())
    if operator.running():
        print(f"--- operator (pid {operator.pid}): last lines of {operator.log_path} ---")
    else:
        print(
            f"--- the operator EXITED with code {operator.popen.returncode}; the control plane and "
            f"Redis stay up: fix it and run `{shlex.join(operator.argv)}` yourself, with the "
            f"exports below; last lines of {operator.log_path} ---"
        )
    print(operator.log_tail(OPERATOR_LOG_LINES))
    print("--- Ctrl-C stops everything ---", flush=True)


def up(run_dir: Path, *, kwok: bool, real_node: bool, redis_password: str | None) -> None:
    with _environment(run_dir, kwok=kwok, real_node=real_node, redis_password=redis_password) as (
        cluster,
        redis,
    ):
        print(_how_to_connect(cluster, redis), flush=True)
        say("up; Ctrl-C stops everything")
        _watch([*cluster.launched, *([redis.process] if redis.process else [])])


def run(run_dir: Path, *, kwok: bool, real_node: bool, redis_password: str | None) -> None:
    with _environment(run_dir, kwok=kwok, real_node=real_node, redis_password=redis_password) as (
        cluster,
        redis,
    ):
        crds = manifests.install_crds(cluster)
        if crds:
            say("installed CRDs: " + ", ".join(path.name for path in crds))
        else:
            say(f"no CRDs in {manifests.CRD_DIR} yet")
        watched = [*cluster.launched, *([redis.process] if redis.process else [])]

        say("checking for the operator (`punctual run --help`) ...")
        operator_command = find_operator()
        if operator_command is None:
            say(
                "The Punctual operator is not built yet (`punctual run --help` does not succeed): "
                "the control plane and Redis stay up without it."
            )
            print(_how_to_connect(cluster, redis), flush=True)
            say("Ctrl-C stops everything")
            _watch(watched)
            return

        with EchoServer() as echo:
            say(f"the examples' HTTP endpoint listens on {echo.url} (its calls are printed below)")
            operator = start_operator(operator_command, cluster, redis, run_dir)
            say(f"started the operator (pid {operator.pid}, log {operator.log_path})")
            examples = manifests.apply_examples(cluster)
            say("applied examples: " + (", ".join(p.name for p in examples) or "none"))
            connect = _how_to_connect(cluster, redis)
            print(connect, flush=True)

            def refresh() -> None:
                _show_scheduled_jobs(cluster, operator)
                if not operator.running():
                    print(connect, flush=True)

            # The operator is not among the watched: when it dies the cluster stays up for the
            # developer to start a fixed one against it.
            try:
                _watch(watched, tick=refresh)
            finally:
                operator.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcluster", description=__doc__)
    parser.add_argument("command", choices=["up", "run"])
    parser.add_argument("--no-kwok", action="store_true", help="no fake node (pods stay Pending)")
    parser.add_argument(
        "--real-node",
        action="store_true",
        help="a real node too (containerd, kubelet, kube-proxy, CoreDNS): containers really run;"
        " the kwok node is then tainted kwok.x-k8s.io/node=fake:NoSchedule",
    )
    parser.add_argument("--redis-password", help="start Redis with requirepass")
    parser.add_argument(
        "--keep", action="store_true", help="keep the run directory (logs, kubeconfig) on exit"
    )
    args = parser.parse_args(argv)
    processes.install_signal_handlers()
    run_dir = Path(tempfile.mkdtemp(prefix="punctual-local-"))
    say(f"run directory (logs, kubeconfig, PKI): {run_dir}")
    command = up if args.command == "up" else run
    keep = args.keep
    try:
        command(
            run_dir,
            kwok=not args.no_kwok,
            real_node=args.real_node,
            redis_password=args.redis_password,
        )
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
