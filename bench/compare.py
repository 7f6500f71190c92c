"""Punctual against Kubernetes' own CronJob controller, on one local control plane.

Without ``--suite`` (the quick comparison): starts a LocalCluster (etcd, kube-apiserver,
kube-controller-manager with its CronJob and Job controllers, kube-scheduler, kwok's fake node)
and a LocalRedis, then the operator as a subprocess (``punctual run --lock-backend redis``), and
creates in one namespace:

- N CronJobs ``cron-XX`` (``*/1 * * * *``, concurrencyPolicy Forbid) and
- N ScheduledJobs ``sj-XX`` with the same schedule, policy and Job template (kwok runs the pod
  and completes it at once), and
- N ScheduledJobs ``q-XX`` (``every: 1m``) with the queue target (one shared stream).

Once everything is armed it measures M whole minutes. Observers in this process (a watch of
Jobs, a watch of pods, an XREAD BLOCK consumer, an HTTP receiver) stamp everything with the wall
clock as it arrives. Per slot and object:

- Job creation lateness: watch-observed time, and ``metadata.creationTimestamp`` (whole
  seconds), minus the scheduled time (CronJob's ``batch.kubernetes.io/cronjob-scheduled-
  timestamp``, Punctual's ``punctual.dev/scheduled-time``);
- pod start lateness: the watch-observed Running transition, and ``status.startTime`` (whole
  seconds), minus the scheduled time;
- queue lateness: the stream entry id's time, and the consumer's receipt, minus ``scheduledTime``;
- duplicates (more than one Job or entry for an object's slot) and misses (none).

``--suite [PARTS]`` runs the comparison users would run before switching, part by part
(comma-separated, all by default):

- ``workload``: on a real node (containerd, the kubelet), N CronJobs and 3 x N ScheduledJobs
  with the same Job template (``target.job``): cold (the Job created at the slot), warm with
  ``Exec`` and warm with ``Init`` (``warmStart``: the Job created ``--warm-lead`` ahead, the
  gate releasing the container at the slot). The workload image calls the receiver the moment
  its container starts, with its Job's name in the path: "workload started" beside "Job
  created (watch)" and "pod Running", and for the warm ones the gate's own lateness from its
  log line and when the pod was waiting at its gate;
- ``http``: "call my service on schedule": the same CronJobs (their container calls the
  receiver) against N ScheduledJobs with the HTTP target calling the same receiver; lateness at
  the receiver;
- ``stress``: the real node's objects measured M more minutes with one core kept busy;
- ``scale``: per N of ``--scale-sizes`` (20, 200, 1000) per-minute objects on a kwok node: the
  CronJobs alone, the ScheduledJobs alone, both together, one slot each in namespaces of their
  own; Job creation lateness, misses (no Job within ``--scale-window`` of the slot) and
  duplicates;
- ``outage``: kube-controller-manager and the operator both stopped for ``--outage`` (3 min):
  which missed slots each runs afterwards, how late, and what Punctual counts as missed;
- ``express``: what each can express (sub-minute, a DST gap, a repeated hour, jitter, missed
  slots): ``punctual next`` against the CronJob controller's code.

Prints a table (p50/p95/p99/max per system and measure, duplicates, misses) and writes
``samples.csv``, ``summary.csv``, ``table.txt`` and ``lateness.png`` (with matplotlib), and with
the suite ``outage.csv`` and ``capabilities.csv``, under ``results/compare/<timestamp>/``.

Usage: python bench/compare.py [-n N] [-m MINUTES] [--stress] [--suite [PARTS]] [--warm-lead
SECONDS] [--results-dir DIR] [--keep]
"""

import argparse
import asyncio
import contextlib
import csv
import http.server
import io
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import redis.asyncio
from kubernetes_asyncio import client, config, watch

from lib import plotting
from lib.output import load, say
from lib.statistics import percentile
from localcluster import LocalCluster, LocalRedis, helm_release, manifests, processes
from localcluster import certs as pki
from localcluster.api import ApiClient, ApiError
from localcluster.binaries import REPO_ROOT, NodeImages
from punctual.cli import main as punctual_cli
from punctual.redis_io import namespace_keys

NAMESPACE = "compare"
STREAM = "queue"
STREAM_KEY = namespace_keys.stream_key(namespace=NAMESPACE, stream=STREAM)
CRON_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
PUNCTUAL_ANNOTATION = "punctual.dev/scheduled-time"
SCHEDULED_HEADER = "X-Punctual-Scheduled-Time"
MINUTE = timedelta(minutes=1)
LEAD = timedelta(seconds=5)
"""The first measured slot is at least this long after everything is armed."""
SETTLE = timedelta(seconds=25)
"""How long after the last measured slot the observers keep listening (pods, stragglers)."""
READY_TIMEOUT = 120.0
"""How long the operator may take to arm a phase's ScheduledJobs (per 500 objects)."""

CRONJOB = "CronJob"
PUNCTUAL = "Punctual Job"
QUEUE = "Punctual queue"
HTTP = "Punctual HTTP"
WARM_EXEC = "Punctual Job, warm (Exec)"
WARM_INIT = "Punctual Job, warm (Init)"
WARM_MODES = {WARM_EXEC: "Exec", WARM_INIT: "Init"}
"""The warm systems and the ``warmStart.mode`` each one's ScheduledJobs ask for."""
SYSTEMS = (CRONJOB, PUNCTUAL, QUEUE, HTTP, WARM_EXEC, WARM_INIT)

JOB_WATCH = "Job created (watch)"
JOB_CREATED = "Job created (creationTimestamp)"
POD_RUNNING = "pod Running (watch)"
POD_START = "pod startTime"
WORKLOAD_STARTED = "workload started (its call)"
AT_RECEIVER = "request at the receiver"
ENTRY_ID = "entry id time"
ENTRY_READ = "consumer read"
RUN_STARTED = "run started (status)"
"""Punctual's own record: when the run began (after the claim), before the Job or the entry."""
AT_GATE = "pod at its gate (watch)"
"""A warm pod's gated container first seen running: negative when it waits ahead of its slot."""
GATE_RELEASED = "gate released (its lateMs)"
"""The gate's own report of its lateness, from the line it prints as it releases."""
GATE_LINE = "punctualGate"
RUN_PHASES = ("Running", "Succeeded", "Failed")
"""A pod in one of these phases has been Running (seen late, it may be past it)."""
WHOLE_SECONDS = (JOB_CREATED, POD_START)
BASIC_MEASURES = {
    CRONJOB: (JOB_WATCH, JOB_CREATED, POD_RUNNING, POD_START),
    PUNCTUAL: (RUN_STARTED, JOB_WATCH, JOB_CREATED, POD_RUNNING, POD_START),
    QUEUE: (RUN_STARTED, ENTRY_ID, ENTRY_READ),
}

PARTS = ("workload", "http", "stress", "scale", "outage", "express")
SCALE_SIZES = (20, 200, 1000)
WARM_LEAD = timedelta(seconds=30)
"""How long ahead of its slot a warm ScheduledJob's Job is created (--warm-lead)."""

JOB_TEMPLATE: dict[str, Any] = {
    "spec": {
        "backoffLimit": 0,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "tick", "image": "busybox:1.36", "command": ["true"]},
                ],
            }
        },
    }
}


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def wall() -> datetime:
    return datetime.now(UTC)


# -- what a warm pod says about its gate -----------------------------------------------------


def gated_containers(pod_spec: dict[str, Any]) -> list[str]:
    """The containers of a pod the gate holds until the release: those whose command waits
    ``--at`` an instant (Exec: the gated container itself; Init: the release init container)."""
    return [
        container.get("name", "")
        for container in [*(pod_spec.get("initContainers") or []), *pod_spec["containers"]]
        if "--at" in (container.get("command") or [])
    ]


def at_its_gate(pod_status: dict[str, Any], gated: Sequence[str]) -> bool:
    """Whether one of the gated containers is running (or has run): the pod waits at its gate."""
    statuses = [
        *(pod_status.get("initContainerStatuses") or []),
        *(pod_status.get("containerStatuses") or []),
    ]
    return any(
        status.get("name") in gated
        and any(key in (status.get("state") or {}) for key in ("running", "terminated"))
        for status in statuses
    )


def gate_late_ms(log: str) -> int | None:
    """``lateMs`` of the gate's release line in a container's log (the gate prints one line of
    JSON as it releases; the workload's own output may follow); None without one."""
    for line in log.splitlines():
        if GATE_LINE not in line:
            continue
        with contextlib.suppress(ValueError, AttributeError):
            printed = json.loads(line)
            if printed.get(GATE_LINE) == "released" and isinstance(printed.get("lateMs"), int):
                return int(printed["lateMs"])
    return None


# -- what the observers see ------------------------------------------------------------------


@dataclass
class Observations:
    """Everything the observers saw, stamped with the wall clock on arrival."""

    jobs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """(namespace, Job name) → {system, owner, scheduled, observed, created}."""
    pods: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """(namespace, Job name) → {name, gated, running, start_time, at_gate} of its first pod
    (``running`` None until it is Running; ``gated``: its containers the gate holds)."""
    gates: dict[tuple[str, str], int] = field(default_factory=dict)
    """(namespace, Job name) → the ``lateMs`` its pod's gate printed."""
    entries: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[dict[str, Any]] = field(default_factory=list)
    """Requests at the receiver: {path, arrived, scheduled (the header, if any)}."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def job_seen(self, body: dict[str, Any], observed: datetime) -> None:
        metadata = body.get("metadata") or {}
        key = (metadata.get("namespace", ""), metadata.get("name", ""))
        with self.lock:
            if key in self.jobs:
                return
        owners = metadata.get("ownerReferences") or [{}]
        annotations = metadata.get("annotations") or {}
        kind = owners[0].get("kind")
        if kind == "CronJob":
            system, scheduled = CRONJOB, annotations.get(CRON_ANNOTATION)
        elif kind == "ScheduledJob":
            system, scheduled = PUNCTUAL, annotations.get(PUNCTUAL_ANNOTATION)
        else:
            return
        created = metadata.get("creationTimestamp")
        with self.lock:
            self.jobs[key] = {
                "system": system,
                "owner": owners[0].get("name", ""),
                "scheduled": parse_time(scheduled) if scheduled else None,
                "observed": observed,
                "created": parse_time(created) if created else None,
            }

    def pod_seen(self, body: dict[str, Any], observed: datetime) -> None:
        metadata = body.get("metadata") or {}
        job = (metadata.get("labels") or {}).get("batch.kubernetes.io/job-name")
        if not job:
            return
        status = body.get("status") or {}
        key = (metadata.get("namespace", ""), job)
        with self.lock:
            seen = self.pods.get(key)
            if seen is None:
                seen = self.pods[key] = {
                    "name": metadata.get("name", ""),
                    "gated": gated_containers(body.get("spec") or {"containers": []}),
                    "running": None,
                    "start_time": None,
                    "at_gate": None,
                }
            elif seen["name"] != metadata.get("name"):
                return  # a later pod of the Job: the first one's times are the slot's
            if seen["running"] is None and status.get("phase") in RUN_PHASES:
                seen["running"] = observed
            if status.get("startTime") and seen["start_time"] is None and seen["running"]:
                seen["start_time"] = parse_time(status["startTime"])
            if seen["at_gate"] is None and seen["gated"] and at_its_gate(status, seen["gated"]):
                seen["at_gate"] = observed

    def gate_read(self, key: tuple[str, str], late_ms: int) -> None:
        with self.lock:
            self.gates.setdefault(key, late_ms)

    def gates_to_read(self, namespace: str) -> list[tuple[tuple[str, str], str, list[str]]]:
        """(Job, pod, gated containers) of the namespace's warm pods whose gate line is unread."""
        with self.lock:
            return [
                (key, pod["name"], list(pod["gated"]))
                for key, pod in self.pods.items()
                if key[0] == namespace and pod["gated"] and key not in self.gates
            ]

    def entry_seen(self, entry_id: str, fields: dict[str, str], observed: datetime) -> None:
        with self.lock:
            self.entries.append(
                {
                    "id_time": datetime.fromtimestamp(int(entry_id.partition("-")[0]) / 1000, UTC),
                    "read": observed,
                    "job": fields.get("job", ""),
                    "slot": fields.get("slot", ""),
                    "scheduled": parse_time(fields["scheduledTime"]),
                }
            )

    def arrived(self, path: str, scheduled: str | None, observed: datetime) -> None:
        with self.lock:
            self.arrivals.append(
                {
                    "path": path,
                    "arrived": observed,
                    "scheduled": parse_time(scheduled) if scheduled else None,
                }
            )


async def _watch_forever(function: Any, *arguments: Any, on_event: Any) -> None:
    while True:
        try:
            async with watch.Watch(return_type="object") as stream:
                async for event in stream.stream(function, *arguments):
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        on_event(event.get("raw_object") or {}, wall())
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the API server hiccuped: watch again
            say(f"watch error ({type(error).__name__}: {error}); watching again")
            await asyncio.sleep(0.5)


async def _consume(url: str, seen: Observations) -> None:
    consumer = redis.asyncio.Redis.from_url(url, decode_responses=True)
    last = "$"
    try:
        while True:
            replies = await consumer.xread({STREAM_KEY: last}, block=1000, count=100)
            observed = wall()
            for _stream, items in replies or []:
                for entry_id, fields in items:
                    seen.entry_seen(entry_id, fields, observed)
                    last = entry_id
    finally:
        await consumer.aclose()


async def _observe(
    kubeconfig: Path, redis_url: str, seen: Observations, ready: Any, *, pods: bool
) -> None:
    api = await config.new_client_from_config(config_file=str(kubeconfig))
    try:
        batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
        tasks = [
            asyncio.create_task(
                _watch_forever(batch.list_job_for_all_namespaces, on_event=seen.job_seen)
            ),
            asyncio.create_task(_consume(redis_url, seen)),
        ]
        if pods:
            tasks.append(
                asyncio.create_task(
                    _watch_forever(core.list_pod_for_all_namespaces, on_event=seen.pod_seen)
                )
            )
        ready.set()
        await asyncio.gather(*tasks)
    finally:
        await api.close()


class Receiver:
    """An HTTP server that stamps every request on arrival, before reading anything else."""

    def __init__(self, address: str, seen: Observations) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                observed = wall()
                seen.arrived(self.path, self.headers.get(SCHEDULED_HEADER), observed)
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(min(length, 65536))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            do_GET = do_POST = _answer  # noqa: N815 (http.server's names)

            def log_message(self, format: str, *args: object) -> None:
                pass

        # A deep accept queue: the default (5) drops the SYNs of 20 calls at once, and the
        # callers' retransmission adds a second (measured: 13 of 20 HTTP calls at 1,024 ms).
        server_class = type(
            "Server", (http.server.ThreadingHTTPServer,), {"request_queue_size": 1024}
        )
        self.server = server_class((address, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{address}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


class Observers:
    """The observers' event loop, in a thread of its own. ``pods=False``: no watch of pods (at
    1,000 Jobs a minute their events would keep this thread seconds behind the Jobs' own)."""

    def __init__(self, kubeconfig: Path, redis_url: str, *, pods: bool = True) -> None:
        self.pods = pods
        self.seen = Observations()
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._task: asyncio.Task[None] | None = None
        self._thread = threading.Thread(
            target=self._run, args=(kubeconfig, redis_url), name="observers", daemon=True
        )

    def _run(self, kubeconfig: Path, redis_url: str) -> None:
        asyncio.set_event_loop(self._loop)
        self._task = self._loop.create_task(
            _observe(kubeconfig, redis_url, self.seen, self._ready, pods=self.pods)
        )
        with contextlib.suppress(asyncio.CancelledError):
            self._loop.run_until_complete(self._task)
        self._loop.close()

    def __enter__(self) -> "Observers":
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the observers did not start")
        return self

    def __exit__(self, *_: object) -> None:
        if self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(timeout=15)


# -- the objects -----------------------------------------------------------------------------


def cronjob(
    name: str,
    *,
    namespace: str = NAMESPACE,
    template: dict[str, Any] = JOB_TEMPLATE,
    policy: str = "Forbid",
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedule": "*/1 * * * *", "concurrencyPolicy": policy, "jobTemplate": template},
    }


def scheduled_job(name: str, spec: dict[str, Any], *, namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "punctual.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def job_spec(template: dict[str, Any], history: dict[str, int], **more: Any) -> dict[str, Any]:
    """A ScheduledJob's spec as the CronJob's: every minute, Forbid, the same Job template."""
    return {
        "schedule": "*/1 * * * *",
        "concurrencyPolicy": "Forbid",
        "timeout": "5m",
        "history": history,
        "target": {"job": {"template": template}},
        **more,
    }


def warm_job_spec(
    template: dict[str, Any], history: dict[str, int], *, mode: str, lead: timedelta
) -> dict[str, Any]:
    """job_spec's, warm: the slot's Job made ``lead`` ahead and released at the slot by the gate
    in ``mode``. The timeout is the rest of the minute: a lead and a timeout fit in the period."""
    seconds = int(lead.total_seconds())
    spec = job_spec(template, history, timeout=f"{int(MINUTE.total_seconds()) - seconds}s")
    spec["target"]["job"]["warmStart"] = {"lead": f"{seconds}s", "mode": mode}
    return spec


def objects(count: int, minutes: int) -> list[dict[str, Any]]:
    history = {"succeeded": min(100, minutes + 5), "failed": min(100, minutes + 5)}
    made = []
    for index in range(count):
        made.append(cronjob(f"cron-{index:02d}"))
        made.append(scheduled_job(f"sj-{index:02d}", job_spec(JOB_TEMPLATE, history)))
        made.append(
            scheduled_job(
                f"q-{index:02d}",
                {
                    "every": "1m",
                    "history": history,
                    "target": {"queue": {"stream": STREAM, "payload": {"i": index}}},
                },
            )
        )
    return made


def apply(cluster: LocalCluster, items: Sequence[dict[str, Any]]) -> None:
    document = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})
    cluster.kubectl("create", "-f", "-", input=document, timeout=600)


def create_namespace(cluster: LocalCluster, name: str, *, for_pods: bool = False) -> None:
    cluster.api.post(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    deadline = time.monotonic() + 60
    while for_pods and not cluster.api.exists(f"/api/v1/namespaces/{name}/serviceaccounts/default"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"namespace {name} got no default ServiceAccount")
        time.sleep(0.2)


def wait_served(cluster: LocalCluster) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        try:
            cluster.api.get("/apis/punctual.dev/v1alpha1/scheduledjobs")
            return
        except ApiError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def wait_armed(
    cluster: LocalCluster,
    operator: processes.ManagedProcess,
    count: int,
    namespace: str = NAMESPACE,
) -> None:
    """Until ``count`` ScheduledJobs are Ready and have their next run time (armed)."""

    def armed() -> bool:
        listing = cluster.api.get(
            f"/apis/punctual.dev/v1alpha1/namespaces/{namespace}/scheduledjobs"
        )
        ready = 0
        for item in listing["items"]:
            status = item.get("status") or {}
            conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
            ready += conditions.get("Ready") == "True" and bool(status.get("nextRunTime"))
        return ready == count

    timeout = READY_TIMEOUT * max(1, math.ceil(count / 500))
    processes.wait_until(operator, armed, f"{count} ScheduledJobs are Ready", timeout, 0.5)


def start_operator(
    cluster: LocalCluster,
    redis_server: LocalRedis,
    run_dir: Path,
    *,
    namespace: str | None = NAMESPACE,
    extra: Sequence[str] = (),
) -> processes.ManagedProcess:
    """The operator as a local process; ``namespace=None``: every namespace."""
    script = Path(sys.executable).parent / "punctual"
    argv = [
        str(script if script.exists() else shutil.which("punctual") or "punctual"),
        "run",
        *(["--namespace", namespace] if namespace else []),
        "--lock-backend",
        "redis",
        "--redis-url",
        redis_server.url,
        "--replica-id",
        "compare",
        "--metrics-port",
        "0",
        "--health-port",
        "0",
        *extra,
    ]
    return processes.start("punctual-operator", argv, run_dir, env=cluster.env, cwd=REPO_ROOT)


@contextlib.contextmanager
def stress(enabled: bool) -> Iterator[None]:
    """A busy process loading one core for the duration, with --stress."""
    if not enabled:
        yield
        return
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    say(f"one core loaded by a busy process (pid {busy.pid})")
    try:
        yield
    finally:
        os.killpg(busy.pid, signal.SIGKILL)
        busy.wait()


# -- figures ---------------------------------------------------------------------------------


@dataclass
class Sample:
    system: str
    measure: str
    obj: str
    slot: datetime
    lateness_ms: float
    part: str = "basic"
    scenario: str = ""


@dataclass
class Tally:
    duplicates: int = 0
    misses: int = 0
    expected: int = 0


def millis(delta: timedelta) -> float:
    return delta / timedelta(milliseconds=1)


@dataclass(frozen=True)
class Phase:
    """One measurement: objects of one namespace, the systems they belong to, the slots."""

    part: str
    scenario: str
    namespace: str
    owners: dict[str, list[str]]
    """System → its objects' names."""
    slots: list[datetime]
    window: timedelta | None = None
    """Scale: a Job not seen this long after its slot is a miss, and counts in the
    percentiles of Job creation as later than that (so a p99 may read ">90s")."""


class _Collection:
    """One phase's samples and per-slot counts, built from what the observers saw."""

    def __init__(self, phase: Phase) -> None:
        self.phase = phase
        self.window = set(phase.slots)
        self.system_of = {name: system for system, names in phase.owners.items() for name in names}
        self.samples: list[Sample] = []
        self.per_slot: dict[str, Counter[tuple[str, datetime]]] = defaultdict(Counter)

    def add(self, system: str, measure: str, owner: str, slot: datetime, late: timedelta) -> None:
        phase = self.phase
        self.samples.append(
            Sample(system, measure, owner, slot, millis(late), phase.part, phase.scenario)
        )

    def arrivals(self, arrivals: Sequence[dict[str, Any]]) -> dict[tuple[str, str], datetime]:
        """The HTTP target's calls; returns when each Job's container called (its first call)."""
        started: dict[tuple[str, str], datetime] = {}
        for arrival in arrivals:
            parts = arrival["path"].strip("/").split("/")
            if len(parts) == 3 and parts[0] == "started":
                started.setdefault((parts[1], parts[2]), arrival["arrived"])
            elif len(parts) == 3 and parts[0] == "http" and parts[1] == self.phase.namespace:
                system, scheduled = self.system_of.get(parts[2]), arrival["scheduled"]
                if system is None or scheduled is None:
                    continue
                slot = scheduled.replace(second=0, microsecond=0)
                if slot in self.window:
                    self.per_slot[system][(parts[2], slot)] += 1
                    self.add(system, AT_RECEIVER, parts[2], slot, arrival["arrived"] - scheduled)
        return started

    def job(
        self,
        job: dict[str, Any],
        pod: dict[str, Any] | None,
        started: Any,
        gate_late_ms: int | None = None,
    ) -> None:
        scheduled, owner = job["scheduled"], job["owner"]
        system = self.system_of.get(owner)
        if scheduled is None or system is None:
            return
        slot = scheduled.replace(second=0, microsecond=0)  # no jitter: the minute itself
        if slot not in self.window:
            return
        self.per_slot[system][(owner, slot)] += 1
        self.add(system, JOB_WATCH, owner, slot, job["observed"] - scheduled)
        if job["created"] is not None:
            self.add(system, JOB_CREATED, owner, slot, job["created"] - scheduled)
        if pod is not None and pod["at_gate"] is not None:
            self.add(system, AT_GATE, owner, slot, pod["at_gate"] - scheduled)
        if pod is not None and pod["running"] is not None:
            self.add(system, POD_RUNNING, owner, slot, pod["running"] - scheduled)
            if pod["start_time"] is not None:
                self.add(system, POD_START, owner, slot, pod["start_time"] - scheduled)
        if gate_late_ms is not None:
            self.add(system, GATE_RELEASED, owner, slot, timedelta(milliseconds=gate_late_ms))
        if started is not None:
            self.add(system, WORKLOAD_STARTED, owner, slot, started - scheduled)
            if HTTP in self.phase.owners and system == CRONJOB:  # "call my service": its call
                self.add(system, AT_RECEIVER, owner, slot, started - scheduled)

    def entry(self, entry: dict[str, Any]) -> None:
        slot = entry["scheduled"].replace(second=0, microsecond=0)
        namespace, _, owner = entry["job"].partition("/")
        if slot not in self.window or namespace != self.phase.namespace:
            return
        if owner not in self.system_of:
            return
        self.per_slot[QUEUE][(owner, slot)] += 1
        scheduled = entry["scheduled"]
        self.add(QUEUE, ENTRY_ID, owner, slot, entry["id_time"] - scheduled)
        self.add(QUEUE, ENTRY_READ, owner, slot, entry["read"] - scheduled)

    def tallies(self) -> dict[str, Tally]:
        tallies = {}
        for system, names in self.phase.owners.items():
            seen_slots = self.per_slot[system]
            expected = [(owner, slot) for owner in names for slot in self.phase.slots]
            tallies[system] = Tally(
                duplicates=sum(max(0, n - 1) for n in seen_slots.values()),
                misses=sum(1 for key in expected if seen_slots[key] == 0),
                expected=len(expected),
            )
        return tallies


def collect(seen: Observations, phase: Phase) -> tuple[list[Sample], dict[str, Tally]]:
    with seen.lock:
        jobs, pods, gates = dict(seen.jobs), dict(seen.pods), dict(seen.gates)
        entries, arrivals = list(seen.entries), list(seen.arrivals)
    collection = _Collection(phase)
    started = collection.arrivals(arrivals)
    for key, job in jobs.items():
        if key[0] == phase.namespace:
            collection.job(job, pods.get(key), started.get(key), gates.get(key))
    for entry in entries:
        collection.entry(entry)
    return collection.samples, collection.tallies()


def run_starts(cluster: LocalCluster, phase: Phase) -> list[Sample]:
    """``latenessMillis`` of the runs in the ScheduledJobs' status (runs of the window)."""
    window = set(phase.slots)
    listing = cluster.api.get(
        f"/apis/punctual.dev/v1alpha1/namespaces/{phase.namespace}/scheduledjobs"
    )
    system_of = {name: system for system, names in phase.owners.items() for name in names}
    samples = []
    for item in listing["items"]:
        name = item["metadata"]["name"]
        for run in (item.get("status") or {}).get("recentRuns") or []:
            slot = parse_time(run["slot"])
            if slot in window and "latenessMillis" in run and name in system_of:
                samples.append(
                    Sample(
                        system_of[name],
                        RUN_STARTED,
                        name,
                        slot,
                        run["latenessMillis"],
                        phase.part,
                        phase.scenario,
                    )
                )
    return samples


@dataclass
class Row:
    system: str
    measure: str
    n: int
    p50: float
    p95: float
    p99: float
    max: float
    duplicates: int
    misses: int
    part: str = "basic"
    scenario: str = ""
    window_s: float | None = None


def summarize(
    samples: Sequence[Sample],
    tallies: dict[str, Tally],
    measures: dict[str, Sequence[str]],
    *,
    part: str = "basic",
    scenario: str = "",
    window: timedelta | None = None,
) -> list[Row]:
    rows = []
    for system, names in measures.items():
        for measure in names:
            values = [
                s.lateness_ms
                for s in samples
                if (s.system, s.measure, s.part, s.scenario) == (system, measure, part, scenario)
            ]
            seen = len(values)
            if window is not None and measure == JOB_WATCH:
                values += [math.inf] * tallies[system].misses  # later than the window
            values.sort()
            rows.append(
                Row(
                    system=system,
                    measure=measure,
                    n=seen,
                    p50=percentile(values, 0.50),
                    p95=percentile(values, 0.95),
                    p99=percentile(values, 0.99),
                    max=values[-1] if values else math.nan,
                    duplicates=tallies[system].duplicates,
                    misses=tallies[system].misses,
                    part=part,
                    scenario=scenario,
                    window_s=window.total_seconds() if window is not None else None,
                )
            )
    return rows


def _ms(value: float, window_s: float | None = None) -> str:
    if math.isnan(value):
        return "-"
    if math.isinf(value):
        return f">{window_s:.0f}s"  # the unit is in the cell: it is not ms
    return f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"


RATIOS = (
    (CRONJOB, PUNCTUAL, JOB_WATCH, "Job creation p99 (watch)"),
    (CRONJOB, PUNCTUAL, WORKLOAD_STARTED, "workload start p99"),
    (CRONJOB, WARM_EXEC, WORKLOAD_STARTED, "workload start p99, warm (Exec)"),
    (CRONJOB, WARM_INIT, WORKLOAD_STARTED, "workload start p99, warm (Init)"),
    (CRONJOB, HTTP, AT_RECEIVER, "request at the receiver p99"),
)


def ratio_lines(rows: Sequence[Row]) -> list[str]:
    """CronJob's p99 over Punctual's, per part and scenario, where both were measured."""
    by_key = {(row.part, row.scenario, row.system, row.measure): row for row in rows}
    lines = []
    for part, scenario in dict.fromkeys((row.part, row.scenario) for row in rows):
        # Scale: each system alone is set against the other alone at the same N.
        their_scenario = scenario.replace("Punctual alone", "CronJob alone")
        for cron_system, our_system, measure, label in RATIOS:
            cron = by_key.get((part, their_scenario, cron_system, measure))
            ours = by_key.get((part, scenario, our_system, measure))
            if cron is None or ours is None or math.isnan(cron.p99) or math.isnan(ours.p99):
                continue
            where = f"[{part} {scenario.replace('Punctual alone', 'each alone')}] "
            where = where.replace(" ]", "]") if part != "basic" else ""
            factor = f"{cron.p99 / ours.p99:.1f}x lower" if ours.p99 > 0 else "n/a"
            if math.isinf(cron.p99) and cron.window_s and 0 < ours.p99 < math.inf:
                factor = f"more than {cron.window_s * 1000 / ours.p99:.0f}x lower"
            cron_p99, our_p99 = (
                _ms(row.p99, row.window_s) + ("" if math.isinf(row.p99) else " ms")
                for row in (cron, ours)
            )
            lines.append(f"{where}{label}: CronJob {cron_p99}, Punctual {our_p99}: {factor}")
    return lines


def table(rows: Sequence[Row], *, header: str) -> str:
    lines = [header]
    grouped = dict.fromkeys((row.part, row.scenario) for row in rows)
    width = max([15, *(len(row.system) for row in rows)])
    for part, scenario in grouped:
        if part != "basic":
            lines.append(f"-- {part}{': ' + scenario if scenario else ''}")
        lines.append(
            f"{'system':<{width}} {'measure':<32} {'n':>5} {'p50':>8} {'p95':>8} {'p99':>8} "
            f"{'max':>8} {'dup':>4} {'miss':>4}"
        )
        for row in rows:
            if (row.part, row.scenario) == (part, scenario):
                lines.append(
                    f"{row.system:<{width}} {row.measure:<32} {row.n:>5} "
                    f"{_ms(row.p50, row.window_s):>8} {_ms(row.p95, row.window_s):>8} "
                    f"{_ms(row.p99, row.window_s):>8} {_ms(row.max, row.window_s):>8} "
                    f"{row.duplicates:>4} {row.misses:>4}"
                )
    lines.extend(ratio_lines(rows))
    windows = {row.window_s for row in rows if row.window_s is not None}
    for window_s in sorted(windows):
        lines.append(
            f"scale: n counts the Jobs seen; a slot without a Job {window_s:.0f} s after it is a "
            f"miss, and counts as >{window_s:.0f}s in the Job creation (watch) percentiles."
        )
    lines.append(
        "creationTimestamp and startTime have whole-second resolution (rounded down); the "
        "watch-observed times include the watch's delivery, the same for both systems."
    )
    if any(row.system in WARM_MODES for row in rows):
        lines.append(
            "warm: the Job and its pod are made ahead of the slot (negative lateness); the "
            "gate's lateMs is its own clock reading as it released, from its log line."
        )
    return "\n".join(lines)


def write_csv(directory: Path, samples: Sequence[Sample], rows: Sequence[Row]) -> None:
    with (directory / "samples.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["part", "scenario", "system", "measure", "object", "slot", "lateness_ms"])
        for s in samples:
            writer.writerow(
                [
                    s.part,
                    s.scenario,
                    s.system,
                    s.measure,
                    s.obj,
                    s.slot.isoformat(),
                    f"{s.lateness_ms:.3f}",
                ]
            )
    with (directory / "summary.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "part",
                "scenario",
                "system",
                "measure",
                "n",
                "p50_ms",
                "p95_ms",
                "p99_ms",
                "max_ms",
                "duplicates",
                "misses",
            ]
        )
        for r in rows:
            writer.writerow(
                [
                    r.part,
                    r.scenario,
                    r.system,
                    r.measure,
                    r.n,
                    r.p50,
                    r.p95,
                    r.p99,
                    r.max,
                    r.duplicates,
                    r.misses,
                ]
            )


def write_table(directory: Path, name: str, header: Sequence[str], lines: Sequence[Any]) -> None:
    with (directory / name).open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(lines)


PLOTTED = (
    JOB_WATCH,
    POD_RUNNING,
    GATE_RELEASED,
    WORKLOAD_STARTED,
    AT_RECEIVER,
    ENTRY_ID,
    RUN_STARTED,
)
"""The measures in the box plot (whole seconds say nothing in a box at 0), those of a row
whose median is after the slot: a warm Job made ahead has no place on a log scale of lateness."""
HISTOGRAM = (
    (CRONJOB, JOB_WATCH),
    (PUNCTUAL, JOB_WATCH),
    (QUEUE, ENTRY_ID),
    (CRONJOB, WORKLOAD_STARTED),
    (PUNCTUAL, WORKLOAD_STARTED),
    (WARM_INIT, WORKLOAD_STARTED),
    (WARM_EXEC, WORKLOAD_STARTED),
    (HTTP, AT_RECEIVER),
)


def plot(
    directory: Path, samples: Sequence[Sample], rows: Sequence[Row], title: str
) -> Path | None:
    """Box plots of every distribution side by side (log scale); None without matplotlib."""
    plt = plotting.pyplot()
    if plt is None:
        return None
    by_group: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for s in samples:
        by_group[(s.part, s.scenario, s.system, s.measure)].append(max(s.lateness_ms, 0.1))
    groups = [
        (row.part, row.scenario, row.system, row.measure)
        for row in rows
        if row.measure in PLOTTED and row.n and row.p50 > 0
    ]
    data = [by_group[group] for group in groups]
    figure, (boxes, hist) = plt.subplots(
        1, 2, figsize=(max(15, 0.45 * len(groups) + 7), 7), width_ratios=(max(2, len(groups)), 8)
    )
    boxes.boxplot(data, orientation="vertical", whis=(1, 99), showfliers=True)
    labels = [f"{'' if p == 'basic' else p + ' ' + sc + chr(10)}{s}\n{m}" for p, sc, s, m in groups]
    boxes.set_xticks(range(1, len(groups) + 1), labels, rotation=60, ha="right", fontsize=7)
    boxes.set_yscale("log")
    boxes.set_ylabel("lateness (ms, log scale; whiskers p1-p99)")
    boxes.set_title("lateness against the scheduled time")
    # The headline distributions, pooled over the scenarios they were measured in.
    # A slot measured for two parts (the CronJobs of workload and http) counts once.
    unique = {(s.system, s.measure, s.obj, s.slot, s.scenario): s for s in samples}.values()
    shown = {
        pair: [max(s.lateness_ms, 0.1) for s in unique if (s.system, s.measure) == pair]
        for pair in HISTOGRAM
    }
    shown = {pair: values for pair, values in shown.items() if values}
    every_value = [value for values in shown.values() for value in values] or [1.0]
    low = math.floor(10 * math.log10(min(every_value)))
    high = math.ceil(10 * math.log10(max(every_value))) + 1
    bins = [10 ** (k / 10) for k in range(low, high + 1)]  # ten bins per decade
    for (system, measure), values in shown.items():
        hist.hist(values, bins=bins, alpha=0.5, label=f"{system}: {measure}")
    hist.set_xscale("log")
    hist.set_xlabel("lateness (ms, log scale)")
    hist.set_ylabel("slots")
    hist.legend(fontsize=8)
    hist.set_title("Job creation, workload start and HTTP lateness (all scenarios)")
    figure.suptitle(title)
    figure.tight_layout()
    path = directory / "lateness.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


# -- the run ---------------------------------------------------------------------------------


def measured_slots(armed_at: datetime, minutes: int, *, ahead: timedelta = LEAD) -> list[datetime]:
    """The next ``minutes`` slots at least ``ahead`` after ``armed_at``."""
    first = (armed_at + ahead).replace(second=0, microsecond=0) + MINUTE
    return [first + k * MINUTE for k in range(minutes)]


def sleep_until(moment: datetime, *, watched: Sequence[processes.ManagedProcess] = ()) -> None:
    while (left := (moment - wall()).total_seconds()) > 0:
        for process in watched:
            if not process.running():
                raise processes.ComponentError(process, "exited during the run")
        time.sleep(min(1.0, left))


def progress(seen: Observations, phase: Phase, slot: datetime, index: int) -> None:
    with seen.lock:
        owners = Counter(
            job["owner"]
            for (namespace, _), job in seen.jobs.items()
            if namespace == phase.namespace
            and job["scheduled"]
            and slot <= job["scheduled"] < slot + MINUTE
        )
        entries = [
            e
            for e in seen.entries
            if e["job"].startswith(phase.namespace + "/") and slot <= e["scheduled"] < slot + MINUTE
        ]
        calls = [
            a
            for a in seen.arrivals
            if a["path"].startswith(f"/http/{phase.namespace}/")
            and a["scheduled"]
            and slot <= a["scheduled"] < slot + MINUTE
        ]
    counts = []
    for system, names in phase.owners.items():
        done = (
            len(entries)
            if system == QUEUE
            else len(calls)
            if system == HTTP
            else sum(1 for name in names if owners[name])
        )
        counts.append(f"{system} {done}/{len(names)}")
    say(
        f"{phase.part} {phase.scenario} minute {index}/{len(phase.slots)} (slot {slot:%H:%M:%S}): "
        + ", ".join(counts)
    )


def measure(
    observers: Observers,
    phase: Phase,
    watched: Sequence[processes.ManagedProcess],
    *,
    settle: timedelta = SETTLE,
    after_each_slot: Callable[[], None] | None = None,
) -> None:
    for index, slot in enumerate(phase.slots, start=1):
        sleep_until(slot + settle, watched=watched)
        if after_each_slot is not None:
            after_each_slot()
        progress(observers.seen, phase, slot, index)


@dataclass
class Results:
    samples: list[Sample] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    """Further tables (outage, capabilities), printed after the lateness table."""
    outage: list[list[Any]] = field(default_factory=list)
    capabilities: list[list[str]] = field(default_factory=list)
    loads: list[str] = field(default_factory=list)
    """The machine's load as each phase ended: it is shared."""

    def add_phase(
        self, cluster: LocalCluster, seen: Observations, phase: Phase, measures: Any
    ) -> None:
        self.loads.append(f"{phase.part} {phase.scenario}: {load()}".replace("  ", " "))
        samples, tallies = collect(seen, phase)
        if any(system != CRONJOB for system in phase.owners):
            samples += run_starts(cluster, phase)
        self.samples += samples
        self.rows += summarize(
            samples,
            tallies,
            {system: measures[system] for system in phase.owners},
            part=phase.part,
            scenario=phase.scenario,
            window=phase.window,
        )


def run_basic(arguments: argparse.Namespace, run_dir: Path, results: Results) -> str:
    count, minutes = arguments.n, arguments.m
    say(f"N={count} objects per system, M={minutes} minute(s); run directory {run_dir}")
    with (
        LocalCluster(kwok=True, run_dir=run_dir / "cluster", progress=say) as cluster,
        LocalRedis(run_dir=run_dir / "redis") as redis_server,
    ):
        manifests.install_crds(cluster)
        wait_served(cluster)
        create_namespace(cluster, NAMESPACE)
        operator = start_operator(cluster, redis_server, run_dir)
        say(f"operator started (pid {operator.pid}, log {operator.log_path})")
        with Observers(cluster.kubeconfig, redis_server.url) as observers:
            apply(cluster, objects(count, minutes))
            wait_armed(cluster, operator, 2 * count)
            slots = measured_slots(wall(), minutes)
            phase = Phase(
                "basic",
                "",
                NAMESPACE,
                {
                    CRONJOB: [f"cron-{i:02d}" for i in range(count)],
                    PUNCTUAL: [f"sj-{i:02d}" for i in range(count)],
                    QUEUE: [f"q-{i:02d}" for i in range(count)],
                },
                slots,
            )
            first_in = (slots[0] - wall()).total_seconds()
            say(
                f"{3 * count} objects armed; measuring the slots {slots[0]:%H:%M:%S} to "
                f"{slots[-1]:%H:%M:%S} UTC (the first in {first_in:.0f}s)"
            )
            with stress(arguments.stress):
                measure(observers, phase, [operator])
            results.add_phase(cluster, observers.seen, phase, BASIC_MEASURES)
        operator.stop()
    return (
        f"lateness in ms against the scheduled time; {count} objects per system, "
        f"{minutes} slot(s) each{', one core loaded (--stress)' if arguments.stress else ''}"
    )


# -- the suite: workload start and "call my service" on the real node -----------------------

NODE_NAMESPACE = "node"
WARM_MEASURES = (JOB_WATCH, AT_GATE, POD_RUNNING, GATE_RELEASED, WORKLOAD_STARTED)
NODE_MEASURES = {
    "workload": {
        CRONJOB: (JOB_WATCH, POD_RUNNING, WORKLOAD_STARTED),
        PUNCTUAL: (RUN_STARTED, JOB_WATCH, POD_RUNNING, WORKLOAD_STARTED),
        WARM_EXEC: WARM_MEASURES,
        WARM_INIT: WARM_MEASURES,
    },
    "http": {CRONJOB: (JOB_WATCH, AT_RECEIVER), HTTP: (RUN_STARTED, AT_RECEIVER)},
}


def workload_template(receiver_url: str, namespace: str) -> dict[str, Any]:
    """A Job whose container calls ``<receiver>/started/<namespace>/<its Job>`` on start. Its
    ``command`` is the image's own entrypoint, written out: warm ``Exec`` gates it."""
    container = {
        "name": "workload",
        "image": NodeImages.WORKLOAD,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/workload"],
        "env": [
            {
                "name": "JOB_NAME",
                "valueFrom": {
                    "fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-name']"}
                },
            },
            {"name": "CALL_URL", "value": f"{receiver_url}/started/{namespace}/$(JOB_NAME)"},
        ],
    }
    return {
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        }
    }


def read_gates(cluster: LocalCluster, seen: Observations, namespace: str) -> None:
    """The release lines of the namespace's warm pods not read yet, from their gated containers'
    logs (a pod still at its gate, or gone, is asked again next time)."""
    for key, pod, containers in seen.gates_to_read(namespace):
        for container in containers:
            try:
                log = cluster.api.request_text(
                    "GET",
                    f"/api/v1/namespaces/{namespace}/pods/{pod}/log"
                    f"?container={container}&limitBytes=65536",
                )
            except ApiError:
                continue
            late_ms = gate_late_ms(log)
            if late_ms is not None:
                seen.gate_read(key, late_ms)
                break


def run_on_real_node(
    arguments: argparse.Namespace, parts: Sequence[str], run_dir: Path, results: Results
) -> None:
    """Parts workload, http and stress: one cluster with a real node, one set of objects."""
    count, minutes, lead = arguments.node_n, arguments.m, arguments.warm_lead
    with_jobs = "workload" in parts or set(parts) == {"stress"}
    with_http = "http" in parts or set(parts) == {"stress"}
    with (
        LocalCluster(kwok=False, real_node=True, run_dir=run_dir / "node", progress=say) as cluster,
        LocalRedis(run_dir=run_dir / "node-redis") as redis_server,
    ):
        manifests.install_crds(cluster)
        wait_served(cluster)
        create_namespace(cluster, NODE_NAMESPACE, for_pods=True)
        if with_jobs:  # the gate image the operator's warm Jobs name by default
            cluster.load_image(helm_release.built_image(helm_release.GATE_IMAGE_BUILD))
        host = cluster.node.address.host_address
        observers = Observers(cluster.kubeconfig, redis_server.url)
        with observers, Receiver(host, observers.seen) as receiver:
            operator = start_operator(
                cluster,
                redis_server,
                run_dir,
                namespace=NODE_NAMESPACE,
                extra=["--http-allowed-hosts", host],
            )
            template = workload_template(receiver.url, NODE_NAMESPACE)
            history = {"succeeded": 3, "failed": 1}  # CronJob's defaults
            owners: dict[str, list[str]] = {CRONJOB: [f"cron-{i:02d}" for i in range(count)]}
            made = [
                cronjob(name, namespace=NODE_NAMESPACE, template=template)
                for name in owners[CRONJOB]
            ]
            if with_jobs:
                owners[PUNCTUAL] = [f"sj-{i:02d}" for i in range(count)]
                made += [
                    scheduled_job(name, job_spec(template, history), namespace=NODE_NAMESPACE)
                    for name in owners[PUNCTUAL]
                ]
                for system, prefix in ((WARM_EXEC, "we"), (WARM_INIT, "wi")):
                    owners[system] = [f"{prefix}-{i:02d}" for i in range(count)]
                    spec = warm_job_spec(template, history, mode=WARM_MODES[system], lead=lead)
                    made += [
                        scheduled_job(name, spec, namespace=NODE_NAMESPACE)
                        for name in owners[system]
                    ]
            if with_http:
                owners[HTTP] = [f"h-{i:02d}" for i in range(count)]
                made += [
                    scheduled_job(
                        name,
                        {
                            "schedule": "*/1 * * * *",
                            "history": history,
                            "target": {
                                "http": {"url": f"{receiver.url}/http/{NODE_NAMESPACE}/{name}"}
                            },
                        },
                        namespace=NODE_NAMESPACE,
                    )
                    for name in owners[HTTP]
                ]
            apply(cluster, made)
            wait_armed(cluster, operator, len(made) - count, NODE_NAMESPACE)
            scenarios = [("", False)] if set(parts) - {"stress"} else []
            if "stress" in parts:
                scenarios.append(("one core loaded", True))
            # A warm job's first measured slot is armed with its whole lead.
            ahead = LEAD + lead if with_jobs else LEAD
            slots = measured_slots(wall(), minutes * len(scenarios), ahead=ahead)
            say(f"real node: {len(made)} objects armed; {len(slots)} slot(s) from {slots[0]:%H:%M}")
            for index, (scenario, loaded) in enumerate(scenarios):
                mine = slots[index * minutes : (index + 1) * minutes]
                workload_systems = (CRONJOB, PUNCTUAL, WARM_EXEC, WARM_INIT)
                part_owners = [
                    ("workload", {s: owners[s] for s in workload_systems if s in owners}),
                    ("http", {s: owners[s] for s in (CRONJOB, HTTP) if s in owners}),
                ]
                phases = [
                    (
                        part,
                        Phase(
                            "stress" if loaded else part,
                            f"{part}, {scenario}" if loaded else scenario,
                            NODE_NAMESPACE,
                            who,
                            mine,
                        ),
                    )
                    for part, who in part_owners
                    if (part in parts or loaded) and len(who) >= 2
                ]
                # The busy process starts a little before the first loaded slot is armed.
                loaded_ahead = max(timedelta(seconds=20), ahead)
                sleep_until(mine[0] - loaded_ahead, watched=[operator])
                with stress(loaded or arguments.stress):
                    measure(
                        observers,
                        phases[0][1],
                        [operator],
                        after_each_slot=lambda: read_gates(cluster, observers.seen, NODE_NAMESPACE),
                    )
                for part, phase in phases:
                    results.add_phase(cluster, observers.seen, phase, NODE_MEASURES[part])
            operator.stop()


# -- the suite: scale ------------------------------------------------------------------------

SCALE_MEASURES = {CRONJOB: (JOB_WATCH, JOB_CREATED), PUNCTUAL: (JOB_WATCH, JOB_CREATED)}
"""No pods (see Observers) and no run started: at 1,000 the status writes are spread out
(--status-writes-per-second), so a slot's record may not be there yet."""


def delete_all(cluster: LocalCluster, namespace: str) -> None:
    """Every CronJob and ScheduledJob of the namespace, in one request each; their Jobs stay
    (orphaned, finished), so no garbage collection runs into the next measurement."""
    api = ApiClient(cluster.server, pki.ClusterCerts(cluster.run_dir / "pki"), timeout=120)
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"}
    for path in (
        f"/apis/batch/v1/namespaces/{namespace}/cronjobs",
        f"/apis/punctual.dev/v1alpha1/namespaces/{namespace}/scheduledjobs",
    ):
        api.request_text("DELETE", path, body)


def all_jobs_seen(seen: Observations, phase: Phase) -> bool:
    slot = phase.slots[-1]
    with seen.lock:
        owners = {
            job["owner"]
            for (namespace, _), job in seen.jobs.items()
            if namespace == phase.namespace and job["scheduled"] and job["scheduled"] >= slot
        }
    return all(name in owners for names in phase.owners.values() for name in names)


def run_scale(
    arguments: argparse.Namespace,
    cluster: LocalCluster,
    operator: processes.ManagedProcess,
    observers: Observers,
    results: Results,
) -> None:
    history = {"succeeded": 3, "failed": 1}
    # Allow, not Forbid: at 1,000 the Job controller's backlog keeps Jobs active for minutes,
    # and a slot skipped as an overlap would say nothing about the scheduler.
    window = timedelta(seconds=arguments.scale_window)
    for count in arguments.scale_sizes:
        for key, scenario, systems in (
            ("cron", "alone", (CRONJOB,)),
            ("sj", "alone", (PUNCTUAL,)),
            ("both", "together", (CRONJOB, PUNCTUAL)),
        ):
            namespace = f"scale-{count}-{key}"
            create_namespace(cluster, namespace, for_pods=True)
            owners: dict[str, list[str]] = {}
            made = []
            if CRONJOB in systems:
                owners[CRONJOB] = [f"cron-{i:04d}" for i in range(count)]
                made += [
                    cronjob(name, namespace=namespace, policy="Allow") for name in owners[CRONJOB]
                ]
            if PUNCTUAL in systems:
                owners[PUNCTUAL] = [f"sj-{i:04d}" for i in range(count)]
                spec = job_spec(JOB_TEMPLATE, history, concurrencyPolicy="Allow")
                made += [
                    scheduled_job(name, spec, namespace=namespace) for name in owners[PUNCTUAL]
                ]
            began = time.monotonic()
            apply(cluster, made)
            if PUNCTUAL in systems:
                wait_armed(cluster, operator, count, namespace)
            slots = measured_slots(wall(), 1)
            label = f"N={count} {' + '.join(s.split()[0] for s in systems)} {scenario}"
            phase = Phase("scale", label, namespace, owners, slots, window)
            say(
                f"scale {label}: {len(made)} objects created and armed in "
                f"{time.monotonic() - began:.0f}s; slot {slots[0]:%H:%M:%S} ({load()})"
            )
            sleep_until(slots[0] + timedelta(seconds=5), watched=[operator])
            while not all_jobs_seen(observers.seen, phase) and wall() < slots[0] + window:
                sleep_until(wall() + timedelta(seconds=1), watched=[operator])
            progress(observers.seen, phase, slots[0], 1)
            results.add_phase(cluster, observers.seen, phase, SCALE_MEASURES)
            delete_all(cluster, namespace)


# -- the suite: a controller outage ----------------------------------------------------------

OUTAGE_NAMESPACE = "outage"


def run_outage(
    arguments: argparse.Namespace,
    *,
    cluster: LocalCluster,
    redis_server: LocalRedis,
    run_dir: Path,
    operator: processes.ManagedProcess,
    observers: Observers,
    results: Results,
) -> processes.ManagedProcess:
    """kube-controller-manager and the operator stopped together for ``--outage`` seconds,
    started again; returns the operator now running."""
    count = arguments.outage_n
    create_namespace(cluster, OUTAGE_NAMESPACE)
    history = {"succeeded": 10, "failed": 10}
    sets = {
        "CronJob": [f"cron-{i:02d}" for i in range(count)],
        "Punctual RunOnce": [f"runonce-{i:02d}" for i in range(count)],
        "Punctual CatchUp": [f"catchup-{i:02d}" for i in range(count)],
    }
    made = [cronjob(name, namespace=OUTAGE_NAMESPACE, policy="Allow") for name in sets["CronJob"]]
    for label, policy in (("Punctual RunOnce", "RunOnce"), ("Punctual CatchUp", "CatchUp")):
        made += [
            scheduled_job(
                name,
                job_spec(
                    JOB_TEMPLATE,
                    history,
                    concurrencyPolicy="Allow",
                    missedRuns={"policy": policy},
                ),
                namespace=OUTAGE_NAMESPACE,
            )
            for name in sets[label]
        ]
    apply(cluster, made)
    wait_armed(cluster, operator, 2 * count, OUTAGE_NAMESPACE)
    [before] = measured_slots(wall(), 1)
    say(f"outage: {len(made)} objects armed; a slot run normally first ({before:%H:%M:%S})")
    sleep_until(before + timedelta(seconds=15), watched=[operator])
    [controller_manager] = [p for p in cluster.launched if p.name == "kube-controller-manager"]
    stopped_at = wall()
    controller_manager.stop()
    operator.stop()
    outage = timedelta(seconds=arguments.outage)
    say(f"outage: kube-controller-manager and the operator stopped for {outage}")
    sleep_until(stopped_at + outage)
    # The cluster knows only the process it started: the new one is ours to stop.
    restarted = processes.start(controller_manager.name, controller_manager.argv, cluster.run_dir)
    operator = start_operator(cluster, redis_server, run_dir, namespace=None)
    resumed_at = wall()
    missed = [
        before + k * MINUTE for k in range(1, 10) if stopped_at < before + k * MINUTE < resumed_at
    ]
    after = (resumed_at.replace(second=0, microsecond=0)) + MINUTE
    say(f"outage: both started again; slots missed {[f'{s:%H:%M}' for s in missed]}")
    try:
        sleep_until(after + timedelta(seconds=10), watched=[operator, restarted])
        with observers.seen.lock:
            jobs = [
                job for (namespace, _), job in observers.seen.jobs.items()
                if namespace == OUTAGE_NAMESPACE
            ]  # fmt: skip
        listing = cluster.api.get(
            f"/apis/punctual.dev/v1alpha1/namespaces/{OUTAGE_NAMESPACE}/scheduledjobs"
        )
        counted = {
            item["metadata"]["name"]: ((item.get("status") or {}).get("counts") or {})
            for item in listing["items"]
        }
    finally:
        restarted.stop()
    lines = [
        f"controller outage: kube-controller-manager and the operator stopped together for "
        f"{outage.total_seconds():.0f} s ({stopped_at:%H:%M:%S} to {resumed_at:%H:%M:%S}); "
        f"{count} objects per row, {len(missed)} slot(s) fell in the outage",
        f"{'system':<18} {'missed slots run':>16} {'which':<24} {'created after restart (s)':>26} "
        f"{'counted missed':>15} {'next slot ran':>14}",
    ]
    for label, names in sets.items():
        mine = [job for job in jobs if job["owner"] in names and job["scheduled"]]
        caught = [job for job in mine if job["scheduled"] in missed]
        which = sorted({f"{job['scheduled']:%H:%M}" for job in caught})
        delays = sorted(
            (job["observed"] - resumed_at).total_seconds() for job in caught if job["observed"]
        )
        delay = f"{delays[0]:.1f}-{delays[-1]:.1f}" if delays else "-"
        missed_counts = (
            "-"
            if label == "CronJob"
            else str(sum(counted.get(n, {}).get("missed", 0) for n in names))
        )
        next_ran = sum(1 for job in mine if job["scheduled"] == after)
        lines.append(
            f"{label:<18} {len(caught):>7} of {len(missed) * len(names):<6} {','.join(which):<24} "
            f"{delay:>26} {missed_counts:>15} {next_ran:>7} of {len(names):<4}"
        )
        results.outage.append(
            [
                label,
                len(names),
                len(missed),
                len(caught),
                " ".join(which),
                delay,
                missed_counts,
                next_ran,
            ]
        )
    results.texts.append("\n".join(lines))
    delete_all(cluster, OUTAGE_NAMESPACE)
    return operator


def run_on_kwok(
    arguments: argparse.Namespace, parts: Sequence[str], run_dir: Path, results: Results
) -> None:
    """Parts scale and outage: one cluster with kwok's node, the operator on every namespace."""
    with (
        LocalCluster(kwok=True, run_dir=run_dir / "kwok", progress=say) as cluster,
        LocalRedis(run_dir=run_dir / "kwok-redis") as redis_server,
    ):
        manifests.install_crds(cluster)
        wait_served(cluster)
        with Observers(cluster.kubeconfig, redis_server.url, pods=False) as observers:
            operator = start_operator(cluster, redis_server, run_dir, namespace=None)
            with stress(arguments.stress):
                if "scale" in parts:
                    run_scale(arguments, cluster, operator, observers, results)
                if "outage" in parts:
                    operator = run_outage(
                        arguments,
                        cluster=cluster,
                        redis_server=redis_server,
                        run_dir=run_dir,
                        operator=operator,
                        observers=observers,
                        results=results,
                    )
            operator.stop()


# -- the suite: what each can express --------------------------------------------------------

CRONJOB_SOURCE = (
    "k8s.io/kubernetes v1.35 pkg/controller/cronjob (utils.go mostRecentScheduleTime, "
    "getTimeHashInMinutes; cronjob_controllerv2.go getJobName), github.com/robfig/cron/v3 "
    "v3.0.1 spec.go (SpecSchedule.Next)"
)


def punctual_next(*arguments: str) -> str:
    """``punctual next`` as a user runs it (in this process): the local times it prints."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = punctual_cli.main(["next", *arguments, "-o", "json"])
    if status != 0:
        raise RuntimeError(f"punctual next {' '.join(arguments)} failed ({status})")
    return "; ".join(
        f"{item['local']}{' (' + item['adjustment'] + ')' if 'adjustment' in item else ''}"
        for item in json.loads(printed.getvalue())
    )


def capabilities() -> list[list[str]]:
    """Rows: what, CronJob (its controller's code), Punctual (``punctual next`` or the spec)."""
    berlin = ["--tz", "Europe/Berlin"]
    gap = ["30 2 * * *", *berlin, "--after", "2027-03-27T12:00:00Z", "-n", "2"]
    repeated = ["30 2 * * *", *berlin, "--after", "2027-10-30T12:00:00Z", "-n", "3"]
    return [
        [
            "every 10 seconds",
            "no: 5-field cron, minute resolution; '@every 10s' parses, but Jobs are named "
            "<name>-<minutes since epoch>, so at most one Job per minute",
            "every: 10s -> "
            + punctual_next("--every", "10s", "-n", "3", "--after", "2027-01-01T00:00:05Z"),
        ],
        [
            "DST gap: 02:30 Europe/Berlin on 2027-03-28 (02:00-03:00 does not exist)",
            "skipped: Next() adds whole hours and finds no 02:xx that day; next run "
            "2027-03-29T02:30+02:00",
            "dst.nonexistent ShiftForward (default) -> "
            + punctual_next(*gap)
            + " | Skip -> "
            + punctual_next(*gap, "--nonexistent", "Skip"),
        ],
        [
            "repeated hour: 02:30 Europe/Berlin on 2027-10-31 (02:00-03:00 twice)",
            "runs twice: 02:30+02:00 and 02:30+01:00 (distinct UTC minutes, two Jobs)",
            "dst.ambiguous First (default) -> "
            + punctual_next(*repeated)
            + " | Both -> "
            + punctual_next(*repeated, "--ambiguous", "Both"),
        ],
        [
            "jitter (spread N objects with one schedule)",
            "no: every CronJob with one schedule fires in the same controller pass",
            "jitter: 30s -> a fixed offset in [0, 30s) per object, from its uid, the same on "
            "every replica",
        ],
        [
            "slots missed during an outage",
            "only the newest missed slot runs (mostRecentScheduleTime); more than 100 missed: "
            "a TooManyMissedTimes warning; startingDeadlineSeconds may skip it",
            "missedRuns.policy Skip | RunOnce (default, CronJob's) | CatchUp (oldest first, "
            "up to maxCatchUp) and startingDeadline; missed slots counted in status.counts.missed",
        ],
    ]


def express(results: Results) -> None:
    rows = capabilities()
    results.capabilities = rows
    lines = [f"what each can express (CronJob: read from {CRONJOB_SOURCE})"]
    for what, cron, ours in rows:
        lines += [f"- {what}", f"    CronJob:  {cron}", f"    Punctual: {ours}"]
    results.texts.append("\n".join(lines))


# -- the entry points ------------------------------------------------------------------------


def markdown(rows: Sequence[Row], header: str) -> str:
    """The rows as a Markdown table (p50 and p99), then the ratios: for the README."""
    lines = [
        header,
        "",
        "| part | scenario | system | measure | n | p50 ms | p99 ms | dup | miss |",
        "|---|---|---|---|--:|--:|--:|--:|--:|",
    ]
    lines += [
        f"| {r.part} | {r.scenario} | {r.system} | {r.measure} | {r.n} | "
        f"{_ms(r.p50, r.window_s)} | {_ms(r.p99, r.window_s)} | {r.duplicates} | {r.misses} |"
        for r in rows
    ]
    return "\n".join([*lines, "", *(f"- {line}" for line in ratio_lines(rows))]) + "\n"


def write_results(results: Results, directory: Path, header: str) -> None:
    text = table(results.rows, header=header) if results.rows else header
    loads = ["the machine's load as each phase ended:", *results.loads] if results.loads else []
    text = "\n\n".join([text, *results.texts, "\n".join(loads)]).rstrip()
    print(text, flush=True)
    (directory / "table.txt").write_text(text + "\n")
    write_csv(directory, results.samples, results.rows)
    if results.rows:
        (directory / "summary.md").write_text(markdown(results.rows, header))
    if results.outage:
        write_table(
            directory,
            "outage.csv",
            ["system", "objects", "slots_in_outage", "missed_slots_run", "which",
             "created_after_restart_s", "counted_missed", "next_slot_ran"],
            results.outage,
        )  # fmt: skip
    if results.capabilities:
        write_table(
            directory, "capabilities.csv", ["what", "CronJob", "Punctual"], results.capabilities
        )
    title = f"Punctual vs CronJob: {header.split(';', maxsplit=1)[0]}"
    if results.rows and plot(directory, results.samples, results.rows, title) is None:
        say("matplotlib is not installed: no lateness.png (add it to the dev group)")


def run(arguments: argparse.Namespace) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    directory = Path(arguments.results_dir or REPO_ROOT / "results" / "compare") / stamp
    directory.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="punctual-compare-"))
    processes.install_signal_handlers()
    results = Results()
    began, load_before = time.monotonic(), load()
    try:
        if arguments.suite is None:
            header = run_basic(arguments, run_dir, results)
        else:
            parts = arguments.suite
            say(f"suite: {', '.join(parts)}; run directory {run_dir}; {load_before}")
            if "express" in parts:
                express(results)
            if {"workload", "http", "stress"} & set(parts):
                run_on_real_node(arguments, parts, run_dir, results)
            if {"scale", "outage"} & set(parts):
                run_on_kwok(arguments, parts, run_dir, results)
            minutes = (time.monotonic() - began) / 60
            sizes = []
            if {"workload", "http", "stress"} & set(parts):
                sizes.append(
                    f"real node N={arguments.node_n} per system, M={arguments.m}, "
                    f"warm lead {arguments.warm_lead.total_seconds():.0f} s"
                )
            if "scale" in parts:
                sizes.append(f"scale N={','.join(map(str, arguments.scale_sizes))}, one slot")
            if "outage" in parts:
                sizes.append(f"outage {arguments.outage:.0f} s")
            header = "; ".join(
                [
                    f"suite ({', '.join(parts)}) in {minutes:.1f} min",
                    "lateness in ms against the scheduled time",
                    *sizes,
                    f"{load_before} at the start, {load()} at the end",
                    *(["one core loaded throughout (--stress)"] if arguments.stress else []),
                ]
            )
    finally:
        if not arguments.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
        else:
            say(f"kept {run_dir}")
    write_results(results, directory, header)
    say(f"results in {directory}")
    return directory


def parts_list(text: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = set(chosen) - set(PARTS)
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"parts are a comma-separated choice of {', '.join(PARTS)} (not {sorted(unknown)})"
        )
    return [part for part in PARTS if part in chosen]


def sizes_list(text: str) -> list[int]:
    return [int(size) for size in text.split(",")]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/compare.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=20, help="objects per system (default 20)")
    parser.add_argument(
        "-m", type=int, default=5, help="minutes (slots) measured (default 5; the suite: 1)"
    )
    parser.add_argument(
        "--stress", action="store_true", help="load one core with a busy process during the run"
    )
    parser.add_argument(
        "--suite",
        nargs="?",
        const=",".join(PARTS),
        type=parts_list,
        help=f"run the suite's parts (comma-separated; default all: {','.join(PARTS)})",
    )
    parser.add_argument(
        "--node-n", type=int, default=20, help="suite: objects per system on the real node (20)"
    )
    parser.add_argument(
        "--warm-lead",
        type=lambda text: timedelta(seconds=int(text)),
        default=WARM_LEAD,
        metavar="SECONDS",
        help="suite: how far ahead of its slot a warm Job is made (default 30; 1 to 59)",
    )
    parser.add_argument(
        "--scale-sizes",
        type=sizes_list,
        default=list(SCALE_SIZES),
        help="suite: the N of the scale part (default 20,200,1000)",
    )
    parser.add_argument(
        "--scale-window",
        type=float,
        default=90,
        help="suite: seconds after a scale slot by which a Job counts as missed (default 90)",
    )
    parser.add_argument(
        "--outage", type=float, default=180, help="suite: seconds both controllers stay stopped"
    )
    parser.add_argument(
        "--outage-n", type=int, default=3, help="suite: objects per system in the outage part"
    )
    parser.add_argument(
        "--results-dir", help="where the <timestamp>/ folder goes (default results/compare)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the run directory (logs)")
    arguments = parser.parse_args(argv)
    if arguments.suite is not None and "-m" not in (argv or sys.argv[1:]):
        arguments.m = 1
    if arguments.n < 1 or arguments.m < 1 or arguments.node_n < 1:
        parser.error("-n, -m and --node-n must be at least 1")
    if not timedelta(0) < arguments.warm_lead < MINUTE:
        parser.error("--warm-lead must leave the run a timeout in the minute: 1 to 59 seconds")
    try:
        run(arguments)
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except processes.ComponentError as error:
        say(f"failed: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
