"""Punctual against Kubernetes' own CronJob controller, on one local control plane.

Starts a LocalCluster (etcd, kube-apiserver, kube-controller-manager with its CronJob and Job
controllers, kube-scheduler, kwok's fake node) and a LocalRedis, then the operator as a
subprocess (``punctual run --lock-backend redis``), and creates in one namespace:

- N CronJobs ``cron-XX`` (``*/1 * * * *``, concurrencyPolicy Forbid) and
- N ScheduledJobs ``sj-XX`` with the same schedule, policy and Job template (kwok runs the pod
  and completes it at once), and
- N ScheduledJobs ``q-XX`` (``every: 1m``) with the queue target (one shared stream).

Once everything is armed it measures M whole minutes. Observers in this process (a watch of
Jobs, a watch of pods, an XREAD BLOCK consumer) stamp everything with the wall clock as it
arrives. Per slot and object:

- Job creation lateness: watch-observed time, and ``metadata.creationTimestamp`` (whole
  seconds), minus the scheduled time (CronJob's ``batch.kubernetes.io/cronjob-scheduled-
  timestamp``, Punctual's ``punctual.dev/scheduled-time``);
- pod start lateness: the watch-observed Running transition, and ``status.startTime`` (whole
  seconds), minus the scheduled time;
- queue lateness: the stream entry id's time, and the consumer's receipt, minus ``scheduledTime``;
- duplicates (more than one Job or entry for an object's slot) and misses (none).

Prints a table (p50/p95/p99/max per system and measure, duplicates, misses) and writes
``samples.csv``, ``summary.csv``, ``table.txt`` and ``lateness.png`` (with matplotlib) under
``results/compare/<timestamp>/``.

Usage: python bench/compare.py [-n N] [-m MINUTES] [--stress] [--results-dir DIR] [--keep]
"""

import argparse
import asyncio
import contextlib
import csv
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import redis.asyncio
from kubernetes_asyncio import client, config, watch

from localcluster import LocalCluster, LocalRedis, manifests, processes
from localcluster.api import ApiError
from localcluster.binaries import REPO_ROOT

NAMESPACE = "compare"
STREAM = "compare:queue"
CRON_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
PUNCTUAL_ANNOTATION = "punctual.dev/scheduled-time"
MINUTE = timedelta(minutes=1)
LEAD = timedelta(seconds=5)
"""The first measured slot is at least this long after everything is armed."""
SETTLE = timedelta(seconds=25)
"""How long after the last measured slot the observers keep listening (pods, stragglers)."""
READY_TIMEOUT = 120.0

CRONJOB = "CronJob"
PUNCTUAL = "Punctual Job"
QUEUE = "Punctual queue"
SYSTEMS = (CRONJOB, PUNCTUAL, QUEUE)

JOB_WATCH = "Job created (watch)"
JOB_CREATED = "Job created (creationTimestamp)"
POD_RUNNING = "pod Running (watch)"
POD_START = "pod startTime"
ENTRY_ID = "entry id time"
ENTRY_READ = "consumer read"
RUN_STARTED = "run started (status)"
"""Punctual's own record: when the run began (after the claim), before the Job or the entry."""
MEASURES = {
    CRONJOB: (JOB_WATCH, JOB_CREATED, POD_RUNNING, POD_START),
    PUNCTUAL: (RUN_STARTED, JOB_WATCH, JOB_CREATED, POD_RUNNING, POD_START),
    QUEUE: (RUN_STARTED, ENTRY_ID, ENTRY_READ),
}

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

_started = time.monotonic()


def say(message: str) -> None:
    print(f"[compare {time.monotonic() - _started:6.1f}s] {message}", flush=True)


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def wall() -> datetime:
    return datetime.now(UTC)


# -- what the observers see ------------------------------------------------------------------


@dataclass
class Observations:
    """Everything the observers saw, stamped with the wall clock on arrival."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Job name → {system, owner, scheduled, observed, created}."""
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Job name → {running, start_time} of its first pod."""
    entries: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def job_seen(self, body: dict[str, Any], observed: datetime) -> None:
        metadata = body.get("metadata") or {}
        name = metadata.get("name", "")
        with self.lock:
            if name in self.jobs:
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
            self.jobs[name] = {
                "system": system,
                "owner": owners[0].get("name", ""),
                "scheduled": parse_time(scheduled) if scheduled else None,
                "observed": observed,
                "created": parse_time(created) if created else None,
            }

    def pod_seen(self, body: dict[str, Any], observed: datetime) -> None:
        metadata = body.get("metadata") or {}
        job = (metadata.get("labels") or {}).get("batch.kubernetes.io/job-name")
        status = body.get("status") or {}
        if not job or status.get("phase") not in ("Running", "Succeeded", "Failed"):
            return
        start = status.get("startTime")
        with self.lock:
            seen = self.pods.setdefault(job, {"running": observed, "start_time": None})
            if start and seen["start_time"] is None:
                seen["start_time"] = parse_time(start)

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
            replies = await consumer.xread({STREAM: last}, block=1000, count=100)
            observed = wall()
            for _stream, items in replies or []:
                for entry_id, fields in items:
                    seen.entry_seen(entry_id, fields, observed)
                    last = entry_id
    finally:
        await consumer.aclose()


async def _observe(kubeconfig: Path, redis_url: str, seen: Observations, ready: Any) -> None:
    api = await config.new_client_from_config(config_file=str(kubeconfig))
    try:
        batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
        tasks = [
            asyncio.create_task(
                _watch_forever(batch.list_namespaced_job, NAMESPACE, on_event=seen.job_seen)
            ),
            asyncio.create_task(
                _watch_forever(core.list_namespaced_pod, NAMESPACE, on_event=seen.pod_seen)
            ),
            asyncio.create_task(_consume(redis_url, seen)),
        ]
        ready.set()
        await asyncio.gather(*tasks)
    finally:
        await api.close()


class Observers:
    """The observers' event loop, in a thread of its own."""

    def __init__(self, kubeconfig: Path, redis_url: str) -> None:
        self.seen = Observations()
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._task: asyncio.Task[None] | None = None
        self._thread = threading.Thread(
            target=self._run, args=(kubeconfig, redis_url), name="observers", daemon=True
        )

    def _run(self, kubeconfig: Path, redis_url: str) -> None:
        asyncio.set_event_loop(self._loop)
        self._task = self._loop.create_task(_observe(kubeconfig, redis_url, self.seen, self._ready))
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


def cronjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "schedule": "*/1 * * * *",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": JOB_TEMPLATE,
        },
    }


def scheduled_job(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "punctual.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def objects(count: int, minutes: int) -> list[dict[str, Any]]:
    history = {"succeeded": min(100, minutes + 5), "failed": min(100, minutes + 5)}
    made = []
    for index in range(count):
        made.append(cronjob(f"cron-{index:02d}"))
        made.append(
            scheduled_job(
                f"sj-{index:02d}",
                {
                    "schedule": "*/1 * * * *",
                    "concurrencyPolicy": "Forbid",
                    "timeout": "5m",
                    "history": history,
                    "target": {"job": {"template": JOB_TEMPLATE}},
                },
            )
        )
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
    cluster.kubectl("apply", "-f", "-", input=document, timeout=120)


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


def wait_armed(cluster: LocalCluster, operator: processes.ManagedProcess, count: int) -> None:
    """Until every ScheduledJob is Ready and has its next run time (the operator armed it)."""

    def armed() -> bool:
        listing = cluster.api.get(
            f"/apis/punctual.dev/v1alpha1/namespaces/{NAMESPACE}/scheduledjobs"
        )
        ready = 0
        for item in listing["items"]:
            status = item.get("status") or {}
            conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
            ready += conditions.get("Ready") == "True" and bool(status.get("nextRunTime"))
        return ready == 2 * count

    processes.wait_until(operator, armed, "every ScheduledJob is Ready", READY_TIMEOUT, 0.5)


def start_operator(
    cluster: LocalCluster, redis_server: LocalRedis, run_dir: Path
) -> processes.ManagedProcess:
    script = Path(sys.executable).parent / "punctual"
    argv = [
        str(script if script.exists() else shutil.which("punctual") or "punctual"),
        "run",
        "--namespace",
        NAMESPACE,
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
    ]
    return processes.start("punctual-operator", argv, run_dir, env=cluster.env, cwd=REPO_ROOT)


@contextlib.contextmanager
def stress(enabled: bool) -> Iterator[None]:
    """A busy process loading one core for the duration, with --stress."""
    if not enabled:
        yield
        return
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    say(f"--stress: a busy process (pid {busy.pid}) loads one core")
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


@dataclass
class Tally:
    duplicates: int = 0
    misses: int = 0
    expected: int = 0


def millis(delta: timedelta) -> float:
    return delta / timedelta(milliseconds=1)


def collect(
    seen: Observations, *, count: int, slots: Sequence[datetime]
) -> tuple[list[Sample], dict[str, Tally]]:
    window = set(slots)
    samples: list[Sample] = []
    per_slot: dict[str, Counter[tuple[str, datetime]]] = defaultdict(Counter)
    with seen.lock:
        jobs, pods, entries = dict(seen.jobs), dict(seen.pods), list(seen.entries)
    for name, job in jobs.items():
        scheduled = job["scheduled"]
        if scheduled is None:
            continue
        slot = scheduled.replace(second=0, microsecond=0)  # no jitter: the minute itself
        if slot not in window:
            continue
        system, owner = job["system"], job["owner"]
        per_slot[system][(owner, slot)] += 1
        samples.append(Sample(system, JOB_WATCH, owner, slot, millis(job["observed"] - scheduled)))
        if job["created"] is not None:
            samples.append(
                Sample(system, JOB_CREATED, owner, slot, millis(job["created"] - scheduled))
            )
        pod = pods.get(name)
        if pod is not None:
            samples.append(
                Sample(system, POD_RUNNING, owner, slot, millis(pod["running"] - scheduled))
            )
            if pod["start_time"] is not None:
                samples.append(
                    Sample(system, POD_START, owner, slot, millis(pod["start_time"] - scheduled))
                )
    for entry in entries:
        slot = entry["scheduled"].replace(second=0, microsecond=0)
        if slot not in window:
            continue
        owner = entry["job"].split("/", 1)[-1]
        per_slot[QUEUE][(owner, slot)] += 1
        scheduled = entry["scheduled"]
        samples.append(Sample(QUEUE, ENTRY_ID, owner, slot, millis(entry["id_time"] - scheduled)))
        samples.append(Sample(QUEUE, ENTRY_READ, owner, slot, millis(entry["read"] - scheduled)))
    owners = {
        CRONJOB: [f"cron-{i:02d}" for i in range(count)],
        PUNCTUAL: [f"sj-{i:02d}" for i in range(count)],
        QUEUE: [f"q-{i:02d}" for i in range(count)],
    }
    tallies = {}
    for system in SYSTEMS:
        seen_slots = per_slot[system]
        expected = [(owner, slot) for owner in owners[system] for slot in slots]
        tallies[system] = Tally(
            duplicates=sum(max(0, n - 1) for n in seen_slots.values()),
            misses=sum(1 for key in expected if seen_slots[key] == 0),
            expected=len(expected),
        )
    return samples, tallies


def run_starts(cluster: LocalCluster, slots: Sequence[datetime]) -> list[Sample]:
    """``latenessMillis`` of the runs in the ScheduledJobs' status (runs of the window)."""
    window = set(slots)
    listing = cluster.api.get(f"/apis/punctual.dev/v1alpha1/namespaces/{NAMESPACE}/scheduledjobs")
    samples = []
    for item in listing["items"]:
        name = item["metadata"]["name"]
        system = QUEUE if name.startswith("q-") else PUNCTUAL
        for run in (item.get("status") or {}).get("recentRuns") or []:
            slot = parse_time(run["slot"])
            if slot in window and "latenessMillis" in run:
                samples.append(Sample(system, RUN_STARTED, name, slot, run["latenessMillis"]))
    return samples


def percentile(ordered: Sequence[float], quantile: float) -> float:
    """Nearest rank."""
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(quantile * len(ordered)) - 1)]


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


def summarize(samples: Sequence[Sample], tallies: dict[str, Tally]) -> list[Row]:
    rows = []
    for system in SYSTEMS:
        for measure in MEASURES[system]:
            values = sorted(
                s.lateness_ms for s in samples if (s.system, s.measure) == (system, measure)
            )
            rows.append(
                Row(
                    system=system,
                    measure=measure,
                    n=len(values),
                    p50=percentile(values, 0.50),
                    p95=percentile(values, 0.95),
                    p99=percentile(values, 0.99),
                    max=values[-1] if values else math.nan,
                    duplicates=tallies[system].duplicates,
                    misses=tallies[system].misses,
                )
            )
    return rows


def _ms(value: float) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"


def table(rows: Sequence[Row], *, count: int, minutes: int, stressed: bool) -> str:
    header = (
        f"lateness in ms against the scheduled time; {count} objects per system, "
        f"{minutes} slot(s) each{', one core loaded (--stress)' if stressed else ''}"
    )
    lines = [
        header,
        f"{'system':<15} {'measure':<32} {'n':>4} {'p50':>8} {'p95':>8} {'p99':>8} "
        f"{'max':>8} {'dup':>4} {'miss':>4}",
    ]
    for row in rows:
        lines.append(
            f"{row.system:<15} {row.measure:<32} {row.n:>4} {_ms(row.p50):>8} {_ms(row.p95):>8} "
            f"{_ms(row.p99):>8} {_ms(row.max):>8} {row.duplicates:>4} {row.misses:>4}"
        )
    by_key = {(row.system, row.measure): row for row in rows}
    cron, ours = by_key[(CRONJOB, JOB_WATCH)], by_key[(PUNCTUAL, JOB_WATCH)]
    if ours.p99 > 0 and not math.isnan(cron.p99):
        lines.append(
            f"Job creation p99 (watch): CronJob {_ms(cron.p99)} ms, Punctual {_ms(ours.p99)} ms: "
            f"{cron.p99 / ours.p99:.1f}x lower"
        )
    lines.append(
        "creationTimestamp and startTime have whole-second resolution (rounded down); the "
        "watch-observed times include the watch's delivery, the same for both systems."
    )
    return "\n".join(lines)


def write_csv(directory: Path, samples: Sequence[Sample], rows: Sequence[Row]) -> None:
    with (directory / "samples.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["system", "measure", "object", "slot", "lateness_ms"])
        for s in samples:
            writer.writerow(
                [s.system, s.measure, s.obj, s.slot.isoformat(), f"{s.lateness_ms:.3f}"]
            )
    with (directory / "summary.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
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
                [r.system, r.measure, r.n, r.p50, r.p95, r.p99, r.max, r.duplicates, r.misses]
            )


def plot(directory: Path, samples: Sequence[Sample], title: str) -> Path | None:
    """Box plots of every distribution side by side (log scale); None without matplotlib."""
    try:
        import matplotlib  # noqa: PLC0415 (optional: a dev dependency once added)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return None
    groups = [
        (system, measure)
        for system in SYSTEMS
        for measure in MEASURES[system]
        if measure not in (JOB_CREATED, POD_START)  # whole seconds: a box at 0 says nothing
    ]
    data = [
        [max(s.lateness_ms, 0.1) for s in samples if (s.system, s.measure) == group]
        for group in groups
    ]
    figure, (boxes, hist) = plt.subplots(1, 2, figsize=(15, 6))
    boxes.boxplot(data, vert=True, whis=(1, 99), showfliers=True)
    boxes.set_xticks(
        range(1, len(groups) + 1), [f"{s}\n{m}" for s, m in groups], rotation=30, ha="right"
    )
    boxes.set_yscale("log")
    boxes.set_ylabel("lateness (ms, log scale; whiskers p1-p99)")
    boxes.set_title("lateness against the scheduled time")
    shown = {
        (system, measure): [
            max(s.lateness_ms, 0.1) for s in samples if (s.system, s.measure) == (system, measure)
        ]
        for system, measure in ((CRONJOB, JOB_WATCH), (PUNCTUAL, JOB_WATCH), (QUEUE, ENTRY_ID))
    }
    every_value = [value for values in shown.values() for value in values] or [1.0]
    low = math.floor(10 * math.log10(min(every_value)))
    high = math.ceil(10 * math.log10(max(every_value))) + 1
    bins = [10 ** (k / 10) for k in range(low, high + 1)]  # ten bins per decade
    for (system, measure), values in shown.items():
        if values:
            hist.hist(values, bins=bins, alpha=0.6, label=f"{system}: {measure}")
    hist.set_xscale("log")
    hist.set_xlabel("lateness (ms, log scale)")
    hist.set_ylabel("slots")
    hist.legend()
    hist.set_title("Job creation and enqueue lateness")
    figure.suptitle(title)
    figure.tight_layout()
    path = directory / "lateness.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


# -- the run ---------------------------------------------------------------------------------


def measured_slots(armed_at: datetime, minutes: int) -> list[datetime]:
    first = (armed_at + LEAD).replace(second=0, microsecond=0) + MINUTE
    return [first + k * MINUTE for k in range(minutes)]


def progress(seen: Observations, slot: datetime, index: int, minutes: int, count: int) -> None:
    with seen.lock:
        jobs = [
            job
            for job in seen.jobs.values()
            if job["scheduled"] and job["scheduled"] >= slot and job["scheduled"] < slot + MINUTE
        ]
        entries = [e for e in seen.entries if slot <= e["scheduled"] < slot + MINUTE]
    by_system = Counter(job["system"] for job in jobs)
    say(
        f"minute {index}/{minutes} (slot {slot:%H:%M:%S}): CronJob {by_system[CRONJOB]}/{count} "
        f"Jobs, Punctual {by_system[PUNCTUAL]}/{count} Jobs, queue {len(entries)}/{count} entries"
    )


def run(arguments: argparse.Namespace) -> Path:
    count, minutes = arguments.n, arguments.m
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    results = Path(arguments.results_dir or REPO_ROOT / "results" / "compare") / stamp
    results.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="punctual-compare-"))
    say(f"N={count} objects per system, M={minutes} minute(s); run directory {run_dir}")
    processes.install_signal_handlers()
    try:
        with (
            LocalCluster(kwok=True, run_dir=run_dir / "cluster", progress=say) as cluster,
            LocalRedis(run_dir=run_dir / "redis") as redis_server,
        ):
            manifests.install_crds(cluster)
            wait_served(cluster)
            cluster.api.post(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            )
            operator = start_operator(cluster, redis_server, run_dir)
            say(f"operator started (pid {operator.pid}, log {operator.log_path})")
            with Observers(cluster.kubeconfig, redis_server.url) as observers:
                apply(cluster, objects(count, minutes))
                wait_armed(cluster, operator, count)
                slots = measured_slots(wall(), minutes)
                first_in = (slots[0] - wall()).total_seconds()
                say(
                    f"{3 * count} objects armed; measuring the slots {slots[0]:%H:%M:%S} to "
                    f"{slots[-1]:%H:%M:%S} UTC (the first in {first_in:.0f}s)"
                )
                with stress(arguments.stress):
                    for index, slot in enumerate(slots, start=1):
                        report_at = slot + SETTLE
                        while wall() < report_at:
                            if not operator.running():
                                raise processes.ComponentError(operator, "exited during the run")
                            time.sleep(min(1.0, (report_at - wall()).total_seconds()))
                        progress(observers.seen, slot, index, minutes, count)
                samples, tallies = collect(observers.seen, count=count, slots=slots)
                samples += run_starts(cluster, slots)
            operator.stop()
    finally:
        if not arguments.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
        else:
            say(f"kept {run_dir}")
    rows = summarize(samples, tallies)
    text = table(rows, count=count, minutes=minutes, stressed=arguments.stress)
    print(text, flush=True)
    (results / "table.txt").write_text(text + "\n")
    write_csv(results, samples, rows)
    title = (
        f"Punctual vs CronJob: N={count}, M={minutes}{' (--stress)' if arguments.stress else ''}"
    )
    png = plot(results, samples, title)
    if png is None:
        say("matplotlib is not installed: no lateness.png (add it to the dev group)")
    say(f"results in {results}")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/compare.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=20, help="objects per system (default 20)")
    parser.add_argument("-m", type=int, default=5, help="minutes (slots) measured (default 5)")
    parser.add_argument(
        "--stress", action="store_true", help="load one core with a busy process during the run"
    )
    parser.add_argument(
        "--results-dir", help="where the <timestamp>/ folder goes (default results/compare)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the run directory (logs)")
    arguments = parser.parse_args(argv)
    if arguments.n < 1 or arguments.m < 1:
        parser.error("-n and -m must be at least 1")
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
