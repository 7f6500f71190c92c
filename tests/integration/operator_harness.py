"""What the operator acceptance tests share: the CRD, operator replicas as real processes, an HTTP
receiver that records every call, and the figures (lateness, API-server writes, Redis calls).

Nothing is mocked: each replica is the ``punctual run`` console script in a process of its own,
against the session's kube-apiserver, etcd and redis-server (``tests/integration/conftest.py``).
Each replica watches only its test's namespace (``--namespace``), so tests never see each
other's objects, and serves /healthz and /metrics on free loopback ports.

The fixtures built on these (the CRD, a namespace and a receiver per module) are in
``operator_fixtures``, which test modules load with ``pytest_plugins``.
"""

import contextlib
import functools
import json
import math
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import http_targets
import redis

from localcluster import LocalCluster, ports, processes
from localcluster.api import ApiClient
from localcluster.certs import ClusterCerts

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parents[2]
PUNCTUAL = Path(sys.executable).parent / "punctual"
"""The console script of the environment the tests run in (``uv run`` installs it there)."""
API = "/apis/punctual.dev/v1alpha1"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
REPLICA_READY_TIMEOUT = 60.0
"""A replica answers /healthz in about 5 s on two cores; a loaded machine can take much longer."""
READ_TIMEOUT = 30.0
STOP_GRACE = 20.0
"""SIGTERM to exit: the operator cancels runs (10 s grace at most) and writes its last status."""


# -- waiting -----------------------------------------------------------------------------------


def eventually(
    probe: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.2
) -> T:
    """The first truthy value ``probe`` returns; fails naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout:.0f}s")
        time.sleep(interval)


def sleep_until(instant: datetime) -> None:
    time.sleep(max(0.0, (instant - now()).total_seconds()))


def now() -> datetime:
    return datetime.now(UTC)


# -- time and slots ------------------------------------------------------------------------------


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def millis(instant: datetime) -> int:
    return (instant - EPOCH) // timedelta(milliseconds=1)


def from_millis(value: int) -> datetime:
    # Exact, unlike datetime.fromtimestamp(value / 1000), which goes through a float.
    return EPOCH + timedelta(milliseconds=value)


def every_slots(after: datetime, until: datetime, every: timedelta) -> list[datetime]:
    """The slots of an ``every`` schedule in ``(after, until]``: multiples of it since the epoch."""
    period = every // timedelta(milliseconds=1)
    first = (millis(after) // period + 1) * period
    return [from_millis(slot) for slot in range(first, millis(until) + 1, period)]


def fmt(instant: datetime | None) -> str:
    return "-" if instant is None else instant.strftime("%H:%M:%S.%f")[:-3]


# -- the receiver --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """One request the operator made to a job's HTTP target."""

    path: str
    idempotency_key: str
    scheduled_header: str
    arrived: datetime
    answered: int

    @property
    def job(self) -> str:
        """``<namespace>/<name>`` from the slot id ``<namespace>/<name>/<uid>/<unix-ms>``."""
        namespace, name, _uid, _ms = self.idempotency_key.split("/")
        return f"{namespace}/{name}"

    @property
    def uid(self) -> str:
        return self.idempotency_key.split("/")[2]

    @property
    def slot(self) -> datetime:
        return from_millis(int(self.idempotency_key.rsplit("/", 1)[1]))

    @property
    def scheduled_time(self) -> datetime:
        return parse_time(self.scheduled_header)

    @property
    def lateness_ms(self) -> float:
        """Arrival minus X-Punctual-Scheduled-Time: what the target sees of the operator's delay."""
        return (self.arrived - self.scheduled_time) / timedelta(milliseconds=1)


def assert_called_every_second(calls: Sequence[Call], *, start: datetime, end: datetime) -> None:
    """Every slot of an ``every: 1s`` job in ``(start, end]`` was called, but for one at either
    edge, which may have been called just outside the window."""
    slots = every_slots(start, end, timedelta(seconds=1))
    called = {call.slot for call in calls}
    missing = [slot for slot in slots if slot not in called]
    assert [fmt(slot) for slot in missing if slot not in (slots[0], slots[-1])] == []
    assert len(missing) <= 1, [fmt(slot) for slot in missing]


def assert_on_time(calls: Sequence[Call], *, within_ms: float) -> None:
    """At least one call, and every call arrived within ``within_ms`` of its scheduled time."""
    late = [
        (fmt(call.slot), round(call.lateness_ms))
        for call in calls
        if not 0 <= call.lateness_ms < within_ms
    ]
    assert calls != []
    assert late == []


class Receiver(http_targets.LocalHttpTarget):
    """Records every call and answers a status chosen per path (default 204)."""

    def __init__(self) -> None:
        self._calls: list[Call] = []
        self._lock = threading.Lock()
        self._answers: dict[str, int] = {}
        super().__init__()

    def __enter__(self) -> "Receiver":
        super().__enter__()
        return self

    def respond(self, path: str, headers: Mapping[str, str], *, arrived: datetime) -> int:
        answer = self.answer_for(path)
        self.record(
            Call(
                path=path,
                idempotency_key=headers.get("Idempotency-Key", ""),
                scheduled_header=headers.get("X-Punctual-Scheduled-Time", ""),
                arrived=arrived,
                answered=answer,
            )
        )
        return answer

    def answer(self, path: str, status: int) -> None:
        """Answer ``status`` to calls on ``path`` from now on (default 204)."""
        with self._lock:
            self._answers[path] = status

    def answer_for(self, path: str) -> int:
        with self._lock:
            return self._answers.get(path, 204)

    def record(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    def calls(self, job: str | None = None) -> list[Call]:
        """Calls in arrival order; only those for ``<namespace>/<name>`` when given."""
        with self._lock:
            calls = list(self._calls)
        return [call for call in calls if job is None or call.job == job]


# -- operator replicas ---------------------------------------------------------------------------


@dataclass
class Replica:
    """One ``punctual run`` process; its log is ``<run_dir>/punctual-<id>.log``."""

    replica_id: str
    argv: list[str]
    process: processes.ManagedProcess
    health_port: int
    metrics_port: int

    @property
    def log_path(self) -> Path:
        return self.process.log_path

    def running(self) -> bool:
        return self.process.running() and not self.process.stopped

    def healthy(self) -> bool:
        url = f"http://{ports.LOOPBACK}:{self.health_port}/healthz"
        with urllib.request.urlopen(url, timeout=2) as reply:
            return bool(reply.status == 200)

    def metrics(self) -> str:
        url = f"http://{ports.LOOPBACK}:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as reply:
            text: str = reply.read().decode()
            return text

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def terminate(self) -> None:
        """SIGTERM, as Kubernetes stops a pod: the operator cancels runs and writes its status."""
        processes.stop_processes([self.process], grace=STOP_GRACE)

    def send_sigterm(self) -> None:
        """SIGTERM without waiting (see ``wait_exit``)."""
        os.killpg(self.process.pid, signal.SIGTERM)

    def wait_exit(self, timeout: float = STOP_GRACE) -> int:
        code = self.process.popen.wait(timeout=timeout)
        self.process.stopped = True
        return code

    def pause(self) -> None:
        """SIGSTOP: the process stalls, as in a long GC pause or a VM that is not scheduled."""
        os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.process.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL, as a node dies: no shutdown, no last status write."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # its own group: start_new_session
        self.process.popen.wait(timeout=10)
        self.process.stopped = True  # so that no later stop signals a recycled pid


_PROBLEM = re.compile(r" (ERROR|CRITICAL) |^Traceback ", re.MULTILINE)


def problems(log: str) -> list[str]:
    """The lines of an operator log that report an error (level ERROR/CRITICAL, tracebacks)."""
    return [line for line in log.splitlines() if _PROBLEM.search(line)]


class Operators:
    """``replicas`` replicas of the operator, each its own process, stopped (SIGTERM) on exit.

    ``with Operators(...) as operators`` returns once every replica answers /healthz.
    """

    def __init__(
        self,
        cluster: LocalCluster,
        run_dir: Path,
        *,
        namespace: str,
        replicas: int = 1,
        lock_backend: str = "kubernetes",
        redis_url: str | None = None,
        status_interval: str = "1s",
        extra_args: Sequence[str] = (),
        command: Callable[[str, Sequence[str]], list[str]] | None = None,
    ) -> None:
        """``command(replica_id, args)`` is what runs ``punctual`` with ``args`` (``run ...``):
        by default the environment's console script; the image tests run it in a container."""
        self.cluster = cluster
        self.run_dir = run_dir
        self.namespace = namespace
        self.lock_backend = lock_backend
        self.redis_url = redis_url
        # 1 s rather than the default 5 s: status is what several tests wait for.
        self.status_interval = status_interval
        self.extra_args = list(extra_args)
        self.command = command or (lambda _replica_id, args: [str(PUNCTUAL), *args])
        self.replica_ids = [f"r{index}" for index in range(1, replicas + 1)]
        self.replicas: dict[str, Replica] = {}

    def __enter__(self) -> "Operators":
        try:
            for replica_id in self.replica_ids:
                self.start(replica_id, wait=False)
            for replica_id in self.replica_ids:
                self.wait_ready(replica_id)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self, replica_id: str, *, wait: bool = True) -> Replica:
        """Start (or restart) replica ``replica_id``; its log continues in the same file."""
        health_port, metrics_port = ports.free_port(), ports.free_port()
        args = [
            "run",
            "--namespace",
            self.namespace,
            "--lock-backend",
            self.lock_backend,
            "--replica-id",
            replica_id,
            "--bind-address",
            ports.LOOPBACK,
            "--metrics-port",
            str(metrics_port),
            "--health-port",
            str(health_port),
            "--status-interval",
            self.status_interval,
        ]
        if self.redis_url is not None:
            args += ["--redis-url", self.redis_url]
        argv = self.command(replica_id, [*args, *self.extra_args])
        process = processes.start(
            f"punctual-{replica_id}", argv, self.run_dir, env=self.cluster.env, cwd=REPO_ROOT
        )
        replica = self.replicas[replica_id] = Replica(
            replica_id=replica_id,
            argv=argv,
            process=process,
            health_port=health_port,
            metrics_port=metrics_port,
        )
        if wait:
            self.wait_ready(replica_id)
        return replica

    def wait_ready(self, replica_id: str) -> None:
        replica = self.replicas[replica_id]
        processes.wait_until(
            replica.process,
            replica.healthy,
            f"GET http://{ports.LOOPBACK}:{replica.health_port}/healthz answers 200",
            REPLICA_READY_TIMEOUT,
        )

    def stop(self) -> None:
        """SIGTERM to every running replica at once (as a rollout would), then wait."""
        processes.stop_processes(
            [replica.process for replica in self.replicas.values()], grace=STOP_GRACE
        )

    def __getitem__(self, replica_id: str) -> Replica:
        return self.replicas[replica_id]

    def problems(self) -> dict[str, list[str]]:
        """Error lines per replica log, only for the replicas that have any."""
        found = {rid: problems(replica.log()) for rid, replica in self.replicas.items()}
        return {rid: lines for rid, lines in found.items() if lines}

    def logs(self) -> str:
        """Where the logs are, for assertion messages."""
        return ", ".join(str(replica.log_path) for replica in self.replicas.values())


# -- ScheduledJobs through kubectl and the API ---------------------------------------------------


def punctual(cluster: LocalCluster, *args: str) -> "subprocess.CompletedProcess[str]":
    """``punctual ARGS...`` against the cluster, as users run it: its exit status and output."""
    return subprocess.run(
        [str(PUNCTUAL), *args],
        env=cluster.env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=150, check=False,
    )  # fmt: skip


def scheduled_job(namespace: str, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "punctual.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": dict(spec),
    }


def http_target(receiver: Receiver, namespace: str, name: str) -> dict[str, Any]:
    """A target on the receiver, one path per job so a test can tell the jobs' calls apart."""
    return {"http": {"url": receiver.url(f"/{namespace}/{name}")}}


def apply(cluster: LocalCluster, *objects: Mapping[str, Any], timeout: float = 180) -> None:
    """``kubectl apply -f -``, the way users create and change ScheduledJobs.

    A generous timeout: a busy API server (some tests make it busy) can take long to answer.
    """
    document = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    cluster.kubectl("apply", "-f", "-", input=document, timeout=timeout)


def patch_spec(cluster: LocalCluster, namespace: str, name: str, spec: Mapping[str, Any]) -> None:
    cluster.kubectl(
        "patch", "scheduledjob", name, "-n", namespace, "--type=merge",
        "-p", json.dumps({"spec": dict(spec)}),
    )  # fmt: skip


def merge_patch_spec(
    cluster: LocalCluster, namespace: str, name: str, spec: Mapping[str, Any]
) -> None:
    """The same change as ``patch_spec``, sent straight to the API server.

    For changes that must land at a chosen instant: kubectl takes 100-200 ms to start, with
    tens of milliseconds of jitter; this request takes a few milliseconds.
    """
    request = urllib.request.Request(
        f"{cluster.server}{API}/namespaces/{namespace}/scheduledjobs/{name}",
        data=json.dumps({"spec": dict(spec)}).encode(),
        method="PATCH",
        headers={"Content-Type": "application/merge-patch+json"},
    )
    with urllib.request.urlopen(request, timeout=10, context=_admin_tls(cluster.run_dir)) as reply:
        reply.read()


@functools.cache
def _admin_tls(run_dir: Path) -> ssl.SSLContext:
    certs = ClusterCerts(run_dir / "pki")  # where LocalCluster keeps its PKI
    context = ssl.create_default_context(cafile=str(certs.ca_cert))
    context.load_cert_chain(str(certs.admin_cert), str(certs.admin_key))
    return context


def delete(cluster: LocalCluster, namespace: str, name: str) -> None:
    """``kubectl delete``, which returns once the object is gone (no finalizers)."""
    cluster.kubectl("delete", "scheduledjob", name, "-n", namespace, "--wait=true")


@functools.cache
def _patient_api(server: str, run_dir: Path) -> ApiClient:
    return ApiClient(server, ClusterCerts(run_dir / "pki"), timeout=READ_TIMEOUT)


def api(cluster: LocalCluster) -> ApiClient:
    """The admin client with a longer timeout than ``cluster.api``'s 5 s: under the load some
    tests create, the API server can take longer than that to answer, and a test that reads
    what happened must not fail for it."""
    return _patient_api(cluster.server, cluster.run_dir)


def read(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    body: dict[str, Any] = api(cluster).get(f"{API}/namespaces/{namespace}/scheduledjobs/{name}")
    return body


def read_all(cluster: LocalCluster, namespace: str) -> dict[str, dict[str, Any]]:
    listing = api(cluster).get(f"{API}/namespaces/{namespace}/scheduledjobs")
    return {item["metadata"]["name"]: item for item in listing["items"]}


def status(body: Mapping[str, Any]) -> dict[str, Any]:
    return dict(body.get("status") or {})


def condition(body: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    for found in status(body).get("conditions") or []:
        if found.get("type") == kind:
            return dict(found)
    return None


def counts(body: Mapping[str, Any]) -> Counter[str]:
    return Counter(status(body).get("counts") or {})


def last_schedule_time(body: Mapping[str, Any]) -> datetime | None:
    text = status(body).get("lastScheduleTime")
    return parse_time(text) if text else None


def recent_runs(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(status(body).get("recentRuns") or [])


def events(
    cluster: LocalCluster, namespace: str, *, name: str, reason: str
) -> list[dict[str, Any]]:
    """The core/v1 Events about ScheduledJob ``name`` with ``reason``."""
    listing = api(cluster).get(f"/api/v1/namespaces/{namespace}/events")
    return [
        event
        for event in listing["items"]
        if event["involvedObject"].get("kind") == "ScheduledJob"
        and event["involvedObject"].get("name") == name
        and event.get("reason") == reason
    ]


@contextlib.contextmanager
def new_namespace(cluster: LocalCluster, label: str) -> Iterator[str]:
    """A fresh namespace named after ``label``, deleted (without waiting) on exit."""
    slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
    name = f"t-{slug[:40].strip('-')}-{uuid.uuid4().hex[:6]}"
    cluster.api.post(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    try:
        yield name
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


# -- figures -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Spread:
    """p50, p99 and max of a sample of milliseconds (nearest-rank percentiles)."""

    count: int
    p50: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: Iterable[float]) -> "Spread":
        ordered = sorted(values)
        if not ordered:
            return cls(0, math.nan, math.nan, math.nan)

        def rank(quantile: float) -> float:
            return ordered[max(0, math.ceil(quantile * len(ordered)) - 1)]

        return cls(len(ordered), rank(0.50), rank(0.99), ordered[-1])

    def __str__(self) -> str:
        return (
            f"p50 {self.p50:.0f} ms, p99 {self.p99:.0f} ms, max {self.max:.0f} ms (n={self.count})"
        )


_REQUESTS = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')
WRITE_VERBS = frozenset({"POST", "PUT", "PATCH"})


@dataclass(frozen=True, slots=True)
class Write:
    verb: str
    subresource: str
    code: str

    def __str__(self) -> str:
        target = f"scheduledjobs/{self.subresource}" if self.subresource else "scheduledjobs"
        return f"{self.verb} {target} {self.code}"


def _write_requests(cluster: LocalCluster, resource: str) -> Iterator[tuple[dict[str, str], int]]:
    """The labels and count of each ``apiserver_request_total`` series of writes on
    ``resource``, from the API server's own /metrics, which the admin certificate may read."""
    text = api(cluster).request_text("GET", "/metrics")
    for line in text.splitlines():
        sample = _REQUESTS.match(line)
        if sample is None:
            continue
        labels = dict(_LABEL.findall(sample["labels"]))
        if labels.get("resource") == resource and labels.get("verb") in WRITE_VERBS:
            yield labels, int(float(sample["value"]))


def scheduled_job_writes(cluster: LocalCluster) -> Counter[Write]:
    """Write requests on scheduledjobs the API server has served so far, by verb and code.

    The counter has no namespace label: take differences over a window in which only the test's
    own operators write ScheduledJobs (tests run one at a time).
    """
    writes: Counter[Write] = Counter()
    for labels, count in _write_requests(cluster, "scheduledjobs"):
        key = Write(labels["verb"], labels.get("subresource", ""), labels.get("code", ""))
        writes[key] += count
    return writes


def job_dry_runs(cluster: LocalCluster) -> int:
    """Job creations with ``dryRun=All`` the API server has answered so far, in any namespace
    (no namespace label: see ``scheduled_job_writes``)."""
    return sum(
        count
        for labels, count in _write_requests(cluster, "jobs")
        if labels["verb"] == "POST" and labels.get("dry_run") == "All"
    )


def event_writes(cluster: LocalCluster) -> int:
    """Event writes (creates and updates, core/v1 and events.k8s.io/v1) the API server has
    answered so far; no namespace label either (see ``scheduled_job_writes``)."""
    return sum(count for _, count in _write_requests(cluster, "events"))


def redis_command_calls(url: str, command: str) -> int:
    """How many times redis-server has run ``command`` (INFO commandstats)."""
    client = redis.Redis.from_url(url)
    try:
        stats: dict[str, Any] = client.info("commandstats")
    finally:
        client.close()
    return int((stats.get(f"cmdstat_{command}") or {}).get("calls", 0))


def status_lateness(runs: Iterable[Mapping[str, Any]]) -> list[float]:
    return [float(run["latenessMillis"]) for run in runs if "latenessMillis" in run]


def report(title: str, lines: Sequence[str]) -> None:
    """Print a block of figures: visible with ``pytest -s`` or in the ``-rP`` summary."""
    print(f"\n=== {title} ===")
    for line in lines:
        print(f"  {line}")
