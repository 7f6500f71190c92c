"""What the cluster benchmarks share: a control plane, Redis, the CRD, a namespace and a receiver.

Reuses the integration harness (``tests/integration/operator_harness.py``: operator replicas as
processes, the receiver that records every Idempotency-Key) so the benchmarks and the tests
measure the same things the same way. Everything is started on 127.0.0.1 and stopped on the way
out, whatever happens (the process registry of ``localcluster.processes`` catches the rest).
"""

import concurrent.futures
import contextlib
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests" / "integration"))

import failure_harness  # noqa: E402, F401 - needs the path above; re-exported
import hostile_http_servers  # noqa: E402, F401 - needs the path above; re-exported
import operator_harness as harness  # noqa: E402
import queue_framework_workers  # noqa: E402, F401 - needs the path above; re-exported

from lib.output import say  # noqa: E402
from localcluster import LocalCluster, LocalRedis, manifests, processes  # noqa: E402
from localcluster.api import ApiError  # noqa: E402

CRD_SERVED_TIMEOUT = 60.0
CREATORS = 4
"""Threads POSTing objects in bulk: kubectl apply manages about one object a second on a loaded
two-core machine, far too slow to make a burst; direct POSTs make hundreds a second."""


@dataclass(frozen=True)
class Environment:
    cluster: LocalCluster
    redis: LocalRedis
    receiver: harness.Receiver
    namespace: str
    run_dir: Path


class QuietReceiver(harness.Receiver):
    # A SIGKILLed replica resets its keep-alive connections: socketserver would print a
    # traceback for each; they are expected here, and would bury the figures.
    quiet_errors = True


@contextlib.contextmanager
def environment(label: str, *, keep: bool = False) -> Iterator[Environment]:
    """A fresh control plane (no fake node: the benchmarks create no pods), Redis, the CRD, a
    namespace ``bench-<label>`` and a receiver. ``keep``: leave the logs in the run folder."""
    processes.install_signal_handlers()  # SIGTERM unwinds the `with` blocks like Ctrl-C
    run_dir = Path(tempfile.mkdtemp(prefix=f"punctual-{label}-"))
    say(f"run folder {run_dir} (process logs)")
    try:
        say("starting etcd, kube-apiserver, controller manager, scheduler and redis-server ...")
        with (
            LocalCluster(kwok=False, run_dir=run_dir / "cluster") as cluster,
            LocalRedis(run_dir=run_dir / "redis") as redis,
            QuietReceiver() as receiver,
        ):
            install_crd(cluster)
            namespace = f"bench-{label}"
            cluster.api.post(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            )
            yield Environment(cluster, redis, receiver, namespace, run_dir)
    finally:
        if keep:
            say(f"logs kept in {run_dir}")
        else:
            shutil.rmtree(run_dir, ignore_errors=True)


def install_crd(cluster: LocalCluster) -> None:
    """Apply ``crds/`` and wait until a LIST succeeds (Established is not quite served)."""
    manifests.install_crds(cluster)
    deadline = time.monotonic() + CRD_SERVED_TIMEOUT
    while True:
        try:
            cluster.api.get(f"{harness.API}/scheduledjobs")
            return
        except ApiError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def create_all(cluster: LocalCluster, namespace: str, objects: list[dict[str, object]]) -> None:
    """POST ScheduledJobs ``objects`` into ``namespace``, ``CREATORS`` at a time: a burst."""
    path = f"{harness.API}/namespaces/{namespace}/scheduledjobs"
    with concurrent.futures.ThreadPoolExecutor(CREATORS) as pool:
        for created in pool.map(lambda body: cluster.api.post(path, body), objects):
            assert created["kind"] == "ScheduledJob"
