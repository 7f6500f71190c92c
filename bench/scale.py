"""Punctual at scale: N ScheduledJobs on the local control plane and Redis, measured end to end.

For each N (default 100, 1,000 and 10,000) the benchmark starts from an empty namespace of a
control plane of its own (``LocalCluster``) and a ``LocalRedis``, and goes through these phases:

1. ``create``: N ScheduledJobs (``every``, jitter just under the period, an HTTP target on the
   receiver) through concurrent API calls (``--concurrency`` in flight); no operator yet.
2. ``start``: one replica starts (cold): seconds until ``punctual_scheduled_jobs`` reaches N,
   and until every object has a ``status.nextRunTime``.
3. ``steady``: ``--minutes`` of one replica running the jobs. Lateness from the receiver's clock
   (arrival − ``X-Punctual-Scheduled-Time``) and from the operator's histogram
   (``punctual_run_lateness_seconds``: start − slot − jitter, interpolated inside buckets like
   ``histogram_quantile``); runs per second; missed slots (expected slot ids never received, and
   ``punctual_slots_missed_total``); errors; operator RSS and CPU seconds per 1,000 runs
   (``/proc``); API-server requests and writes per run (``apiserver_request_total``); Redis
   commands per run (``INFO commandstats``).
4. ``profile`` (with ``--profile-seconds``): py-spy on the operator while it goes on running the
   same jobs (after the steady window, so the sampling does not distort its figures).
5. ``restart``: SIGTERM (``sigterm_s``: until the process exited; ``exit``: its status, -9 when
   the harness had to SIGKILL it after 20 s), start again; seconds until
   ``punctual_scheduled_jobs`` reaches N and until every object has a nextRunTime other than
   the one it had when the operator stopped.
6. ``replicas``: the other replicas start; once each has armed its share and every replica
   sees all of them (``reconverged_s``: from their start), ``--replicas`` replicas for
   ``--minutes``: claims per second, lost claims, claim errors, duplicates (slot ids received
   twice: must be 0), misses, lateness. Every window's row
   (``steady``: one replica; ``replicas``: all of them) has ``fleet_cpu_s_per_1k_runs`` (CPU
   seconds of every replica per 1,000 runs) and ``claims_per_run`` (claims of every replica,
   won or lost, per run).
7. ``burst`` / ``burst-jitter``: every job patched to ``* * * * *`` (no jitter), one top of the
   minute observed with every replica running; then ``jitter: 30s``, one more minute. Zero
   errors, zero duplicates, zero misses expected.
8. ``failover`` (with several replicas): SIGKILL of the replica owning the most jobs; row
   ``failover``: ``takeover_p99_ms`` (lateness of its jobs' slots until the survivors agree it is
   gone: run by their backups), ``reconverged_s`` (until every survivor's membership says so),
   missing slots and duplicates over ``--failover-seconds``; then row ``failover-pause``: SIGSTOP
   of a survivor for ``--pause-seconds``, SIGCONT, ``--failover-seconds`` more: duplicates.

Results go to ``results/scale/<UTC timestamp>/`` (ignored by git): ``scale.csv`` (one row per N
and phase), ``lateness.png`` (lateness against job count), the receiver's raw calls, operator
logs and profiles. The table is printed at the end, with the load average at the time.

The machine is shared and small: figures depend on what else runs. Each row carries the
1-minute load average sampled at its end.

Usage:
    uv run --frozen --with matplotlib python bench/scale.py [--jobs 100,1000,10000]
        [--every 1s,1s,10s] [--jitter auto] [--minutes 2] [--replicas 3]
        [--phases create,start,steady,restart,replicas,burst,failover] [--profile-seconds 0]
"""

import argparse
import asyncio
import collections
import contextlib
import csv
import itertools
import json
import math
import os
import shlex
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "hack"), str(REPO / "tests"), str(REPO / "tests" / "integration")]

from operator_harness import Operators, Replica  # noqa: E402

import scale_targets  # noqa: E402
from lib import plotting  # noqa: E402
from lib.observing import (  # noqa: E402
    Call,
    ReceiverProcess,
    Samples,
    buckets,
    highest_bucket,
    histogram_quantile,
    parse_metrics,
    proc_cpu_seconds,
    proc_rss_mb,
    total,
)
from lib.output import load, say  # noqa: E402
from lib.statistics import percentile  # noqa: E402
from localcluster import LocalCluster, LocalRedis, ports  # noqa: E402
from localcluster.api import ApiClient, ApiError  # noqa: E402
from localcluster.certs import ClusterCerts  # noqa: E402
from punctual.scheduling import durations, ownership, slots  # noqa: E402

API = "/apis/punctual.dev/v1alpha1"
CRD = REPO / "crds" / "scheduledjobs.punctual.dev.yaml"
PHASES = ("create", "start", "steady", "restart", "replicas", "burst", "failover")


# -- sampling the processes and servers ------------------------------------------------------------


def apiserver_requests(api: ApiClient) -> collections.Counter[tuple[str, str, str]]:
    """``apiserver_request_total`` by (verb, resource, subresource), summed over codes."""
    counts: collections.Counter[tuple[str, str, str]] = collections.Counter()
    for (name, labels), value in parse_metrics(api.request_text("GET", "/metrics")).items():
        if name == "apiserver_request_total":
            label = dict(labels)
            key = (label.get("verb", ""), label.get("resource", ""), label.get("subresource", ""))
            counts[key] += value
    return counts


def redis_commands(url: str) -> collections.Counter[str]:
    client = redis.Redis.from_url(url)
    try:
        stats: dict[str, Any] = client.info("commandstats")
    finally:
        client.close()
    return collections.Counter(
        {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}
    )


@dataclass
class Snapshot:
    wall: float
    metrics: dict[str, Samples]
    cpu: dict[str, float]
    rss: dict[str, float]
    api: collections.Counter[tuple[str, str, str]]
    redis: collections.Counter[str]


def fetch_metrics(replica: Replica, *, timeout: float = 10) -> Samples:
    url = f"http://{ports.LOOPBACK}:{replica.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return parse_metrics(reply.read().decode())


# -- the API: bulk requests, listings --------------------------------------------------------------


def admin_tls(cluster: LocalCluster) -> ssl.SSLContext:
    certs = ClusterCerts(cluster.run_dir / "pki")
    context = ssl.create_default_context(cafile=str(certs.ca_cert))
    context.load_cert_chain(str(certs.admin_cert), str(certs.admin_key))
    return context


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    body: Mapping[str, Any]
    content_type: str = "application/json"


async def _bulk(
    cluster: LocalCluster, requests: Sequence[Request], *, concurrency: int, what: str
) -> list[dict[str, Any]]:
    """Send ``requests`` with ``concurrency`` in flight (retrying 429/5xx); their answers."""
    results: list[dict[str, Any]] = [{} for _ in requests]
    gate = asyncio.Semaphore(concurrency)
    done = 0
    step = max(1, len(requests) // 10)
    started = time.monotonic()
    connector = aiohttp.TCPConnector(ssl=admin_tls(cluster), limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def send(index: int, request: Request) -> None:
            nonlocal done
            async with gate:
                for attempt in range(8):
                    async with session.request(
                        request.method,
                        cluster.server + request.path,
                        data=json.dumps(request.body),
                        headers={"Content-Type": request.content_type},
                        timeout=aiohttp.ClientTimeout(total=60),
                    ) as reply:
                        if reply.status == 429 or reply.status >= 500:
                            await asyncio.sleep(0.2 * 2**attempt)
                            continue
                        text = await reply.text()
                        if reply.status >= 300:
                            raise RuntimeError(f"{request.method} {request.path}: {text[:300]}")
                        results[index] = json.loads(text)
                        break
                else:
                    raise RuntimeError(f"{request.method} {request.path}: gave up")
            done += 1
            if done % step == 0 or done == len(requests):
                rate = done / max(time.monotonic() - started, 1e-9)
                say(f"  {what}: {done}/{len(requests)} ({rate:.0f}/s)")

        await asyncio.gather(*(send(i, request) for i, request in enumerate(requests)))
    return results


def list_jobs(cluster: LocalCluster, namespace: str) -> list[dict[str, Any]]:
    """Every ScheduledJob of ``namespace``; an overloaded API server's 429/5xx are retried."""
    api = ApiClient(cluster.server, ClusterCerts(cluster.run_dir / "pki"), timeout=180)
    for attempt in range(10):
        try:
            listing = api.get(f"{API}/namespaces/{namespace}/scheduledjobs")
        except ApiError as error:
            if error.status != 429 and error.status < 500:
                raise
            say(f"  listing answered HTTP {error.status}; again in {2 + attempt}s")
            time.sleep(2 + attempt)
            continue
        items: list[dict[str, Any]] = listing["items"]
        return items
    raise RuntimeError("the API server did not list the ScheduledJobs in 10 attempts")


# -- the run ---------------------------------------------------------------------------------------


@dataclass
class Job:
    name: str
    uid: str
    offset: timedelta


@dataclass
class Scale:
    """One N: its namespace, jobs and replicas, and the rows of figures measured."""

    jobs_count: int
    every: timedelta
    jitter: timedelta
    namespace: str
    jobs: list[Job] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)


class Bench:
    def __init__(self, arguments: argparse.Namespace, results: Path) -> None:
        self.arguments = arguments
        self.results = results
        self.cluster: LocalCluster
        self.redis: LocalRedis
        self.receiver: ReceiverProcess
        self.api: ApiClient
        self._pending_profile: Callable[[], None] = lambda: None

    # figures ----------------------------------------------------------------------------------

    def snapshot(self, operators: Operators, running: Iterable[str]) -> Snapshot:
        metrics, cpu, rss = {}, {}, {}
        for replica_id in running:
            replica = operators[replica_id]
            metrics[replica_id] = fetch_metrics(replica)
            cpu[replica_id] = proc_cpu_seconds(replica.process.pid)
            rss[replica_id] = proc_rss_mb(replica.process.pid)
        return Snapshot(
            wall=time.time(),
            metrics=metrics,
            cpu=cpu,
            rss=rss,
            api=apiserver_requests(self.api),
            redis=redis_commands(self.redis.url),
        )

    def figures(
        self,
        scale: Scale,
        phase: str,
        before: Snapshot,
        after: Snapshot,
        *,
        calls: Sequence[Call],
        expected: set[str],
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        seconds = after.wall - before.wall
        replicas = sorted(after.metrics)

        def delta(name: str, **labels: str) -> float:
            return sum(
                total(after.metrics[r], name, **labels)
                - total(before.metrics.get(r, {}), name, **labels)
                for r in replicas
            )

        runs = delta("punctual_runs_total")
        succeeded = delta("punctual_runs_total", result="Succeeded")
        cumulative: dict[float, float] = collections.Counter()
        for r in replicas:
            now_buckets = buckets(after.metrics[r], "punctual_run_lateness_seconds")
            then_buckets = buckets(before.metrics.get(r, {}), "punctual_run_lateness_seconds")
            for bound, count in now_buckets.items():
                cumulative[bound] += count - then_buckets.get(bound, 0.0)
        lateness = sorted(call.lateness_ms for call in calls)
        api_delta = after.api - before.api
        api_total = sum(api_delta.values())
        sj = {k: v for k, v in api_delta.items() if k[1] == "scheduledjobs"}
        writes = sum(
            v for (verb, _, _), v in api_delta.items() if verb in {"POST", "PUT", "PATCH", "DELETE"}
        )
        redis_delta = after.redis - before.redis
        redis_delta.pop("info", None)  # ours
        keys = [call.key for call in calls]
        window_counts = collections.Counter(keys)
        duplicates = sum(1 for key in expected if self.receiver.seen[key] > 1)
        duplicates_in_window = sum(1 for count in window_counts.values() if count > 1)
        missing = sum(1 for key in expected if not self.receiver.seen[key])
        cpu = sum(after.cpu[r] - before.cpu.get(r, after.cpu[r]) for r in replicas)
        row: dict[str, Any] = {
            "jobs": scale.jobs_count,
            "every": durations.format(scale.every),
            "jitter": durations.format(scale.jitter) if scale.jitter else "0",
            "phase": phase,
            "replicas": len(replicas),
            "seconds": round(seconds, 1),
            "calls": len(calls),
            "calls_per_s": round(len(calls) / seconds, 1) if seconds else math.nan,
            "runs_per_s": round(runs / seconds, 1) if seconds else math.nan,
            "recv_p50_ms": _pct(lateness, 0.50),
            "recv_p99_ms": _pct(lateness, 0.99),
            "recv_max_ms": round(lateness[-1], 2) if lateness else math.nan,
            "hist_p50_ms": round(histogram_quantile(0.50, cumulative) * 1e3, 2),
            "hist_p99_ms": round(histogram_quantile(0.99, cumulative) * 1e3, 2),
            "hist_max_le_ms": round(highest_bucket(cumulative) * 1e3, 1),
            "expected_slots": len(expected),
            "missing_slots": missing,
            "missed_metric": int(delta("punctual_slots_missed_total")),
            "duplicates": duplicates + duplicates_in_window,
            "errors": int(runs - succeeded + delta("punctual_lock_claims_total", outcome="error")),
            "claims_won": int(delta("punctual_lock_claims_total", outcome="won")),
            "claims_lost": int(delta("punctual_lock_claims_total", outcome="lost")),
            "claims_per_s": round(delta("punctual_lock_claims_total") / seconds, 1),
            "rss_mb": round(max(after.rss.values()), 1),
            "cpu_s_per_1k_runs": round(cpu / runs * 1000, 2) if runs else math.nan,
            # The same sum over every replica measured, under the name the targets use.
            "fleet_cpu_s_per_1k_runs": round(cpu / runs * 1000, 2) if runs else math.nan,
            "claims_per_run": (
                round(delta("punctual_lock_claims_total") / runs, 3) if runs else math.nan
            ),
            "cpu_util_pct": round(cpu / seconds * 100 / len(replicas), 1),
            "api_req_per_run": round(api_total / runs, 3) if runs else math.nan,
            "api_writes_per_run": round(writes / runs, 3) if runs else math.nan,
            "sj_requests": " ".join(
                f"{verb}{'/' + sub if sub else ''}:{int(v)}"
                for (verb, _, sub), v in sorted(sj.items())
                if v
            ),
            "redis_cmds_per_run": round(sum(redis_delta.values()) / runs, 3) if runs else math.nan,
            "redis_commands": " ".join(f"{k}:{v}" for k, v in sorted(redis_delta.items()) if v),
            "load1": round(os.getloadavg()[0], 2),
        }
        row.update(extra or {})
        scale.rows.append(row)
        say(
            f"  {phase}: {len(calls)} calls, receiver p50/p99/max {row['recv_p50_ms']}/"
            f"{row['recv_p99_ms']}/{row['recv_max_ms']} ms, histogram p50/p99 "
            f"{row['hist_p50_ms']}/{row['hist_p99_ms']} ms, missing {missing}, duplicates "
            f"{row['duplicates']}, errors {row['errors']}, rss {row['rss_mb']} MB, cpu "
            f"{row['cpu_s_per_1k_runs']} s/1k runs, api {row['api_req_per_run']} req/run "
            f"({row['api_writes_per_run']} writes), redis {row['redis_cmds_per_run']} cmd/run"
        )
        return row

    # helpers ----------------------------------------------------------------------------------

    def expected_every(self, scale: Scale, start: float, end: float) -> set[str]:
        """Slot ids whose slot + jitter falls in [start, end] (unix seconds)."""
        period_ms = scale.every // timedelta(milliseconds=1)
        expected = set()
        for job in scale.jobs:
            offset_ms = job.offset // timedelta(milliseconds=1)
            first = math.ceil((start * 1000 - offset_ms) / period_ms)
            last = math.floor((end * 1000 - offset_ms) / period_ms)
            for index in range(first, last + 1):
                expected.add(f"{scale.namespace}/{job.name}/{job.uid}/{index * period_ms}")
        return expected

    def wait_armed(self, operators: Operators, replica_id: str, count: int) -> float:
        """Seconds from the replica's start until ``punctual_scheduled_jobs`` reads ``count``."""
        replica = operators[replica_id]
        started = replica.process.started_at
        deadline = time.monotonic() + max(300.0, count / 20)
        last = -1.0
        while time.monotonic() < deadline:
            if not replica.running():
                raise RuntimeError(f"replica {replica_id} exited; see {replica.log_path}")
            with contextlib.suppress(OSError, urllib.error.URLError):
                armed = total(fetch_metrics(replica, timeout=5), "punctual_scheduled_jobs")
                if armed != last:
                    last = armed
                if armed >= count:
                    return time.monotonic() - started
            time.sleep(0.1)
        raise RuntimeError(f"replica {replica_id} armed {last} of {count} jobs")

    def wait_next_run_times(
        self, scale: Scale, since: float, before: Mapping[str, str | None]
    ) -> tuple[float, int]:
        """Seconds from ``since`` until every job's nextRunTime differs from ``before`` (NaN
        when some do not within ``--next-run-wait``), and how many did not.

        Status is written at most ``--status-writes-per-second`` (the operator's, default 100)
        statuses per second: with 10,000 jobs, that alone is 100 s.
        """
        deadline = time.monotonic() + self.arguments.next_run_wait
        stale: list[str] = []
        while time.monotonic() < deadline:
            items = list_jobs(self.cluster, scale.namespace)
            stale = [
                item["metadata"]["name"]
                for item in items
                if (item.get("status") or {}).get("nextRunTime")
                in (None, before.get(item["metadata"]["name"]))
            ]
            if not stale:
                return time.monotonic() - since, 0
            say(f"  {len(stale)} of {len(items)} jobs without a fresh nextRunTime")
            time.sleep(2)
        return math.nan, len(stale)

    def next_run_times(self, scale: Scale) -> dict[str, str | None]:
        return {
            item["metadata"]["name"]: (item.get("status") or {}).get("nextRunTime")
            for item in list_jobs(self.cluster, scale.namespace)
        }

    def wait_observed(self, scale: Scale) -> None:
        """Until every object's status.observedGeneration matches its generation."""
        deadline = time.monotonic() + max(180.0, scale.jobs_count / 20)
        while time.monotonic() < deadline:
            items = list_jobs(self.cluster, scale.namespace)
            behind = [
                item
                for item in items
                if (item.get("status") or {}).get("observedGeneration")
                != item["metadata"]["generation"]
            ]
            if not behind:
                return
            say(f"  {len(behind)} of {len(items)} jobs not observed yet")
            time.sleep(2)
        raise RuntimeError("the spec change was not observed everywhere")

    # phases -----------------------------------------------------------------------------------

    def create(self, scale: Scale) -> None:
        self.api.post(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": scale.namespace}},
        )
        jitter = durations.format(scale.jitter) if scale.jitter else None
        requests = []
        for index in range(scale.jobs_count):
            name = f"job-{index:05d}"
            spec: dict[str, Any] = {
                "every": durations.format(scale.every),
                # A run takes a millisecond; 5 s keeps Redis's slot keys to max(2×period, 65 s).
                "timeout": "5s",
                "target": {"http": {"url": self.receiver.url(f"/{scale.namespace}/{name}")}},
            }
            if jitter:
                spec["jitter"] = jitter
            body = {
                "apiVersion": "punctual.dev/v1alpha1",
                "kind": "ScheduledJob",
                "metadata": {"name": name, "namespace": scale.namespace},
                "spec": spec,
            }
            requests.append(
                Request("POST", f"{API}/namespaces/{scale.namespace}/scheduledjobs", body)
            )
        say(f"creating {scale.jobs_count} ScheduledJobs ({self.arguments.concurrency} in flight)")
        started = time.monotonic()
        created = asyncio.run(
            _bulk(self.cluster, requests, concurrency=self.arguments.concurrency, what="created")
        )
        seconds = time.monotonic() - started
        for body in created:
            uid = body["metadata"]["uid"]
            scale.jobs.append(
                Job(
                    name=body["metadata"]["name"],
                    uid=uid,
                    offset=slots.jitter_offset(uid, jitter=scale.jitter, period=scale.every),
                )
            )
        say(f"  created {scale.jobs_count} in {seconds:.1f}s")
        scale.rows.append(
            {
                "jobs": scale.jobs_count,
                "every": durations.format(scale.every),
                "phase": "create",
                "seconds": round(seconds, 1),
                "creates_per_s": round(scale.jobs_count / seconds, 1),
                "load1": round(os.getloadavg()[0], 2),
            }
        )

    def start(
        self, scale: Scale, operators: Operators, phase: str, stop: Mapping[str, Any] = {}
    ) -> None:
        before = {} if phase == "start" else self.next_run_times(scale)
        say(f"{phase}: starting replica r1 on {scale.jobs_count} jobs")
        operators.start("r1", wait=False)
        started = operators["r1"].process.started_at
        if phase == "start":
            self.profile(scale, operators, "start")
        armed = self.wait_armed(operators, "r1", scale.jobs_count)
        say(f"  all {scale.jobs_count} armed {armed:.1f}s after the process started")
        fresh, stale = self.wait_next_run_times(scale, started, before)
        say(f"  nextRunTime fresh everywhere {fresh:.1f}s after the process started; {stale} not")
        scale.rows.append(
            {
                "jobs": scale.jobs_count,
                "every": durations.format(scale.every),
                "phase": phase,
                "replicas": 1,
                "armed_s": round(armed, 1),
                "next_run_time_s": round(fresh, 1),
                "stale_next_run_times": stale,
                "rss_mb": round(proc_rss_mb(operators["r1"].process.pid), 1),
                **stop,
                "load1": round(os.getloadavg()[0], 2),
            }
        )

    def measure(
        self,
        scale: Scale,
        operators: Operators,
        running: Sequence[str],
        phase: str,
        *,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        settle = self.arguments.settle
        say(f"{phase}: {len(running)} replica(s), settling {settle:.0f}s")
        time.sleep(settle)
        self.receiver.dump(f"{scale.jobs_count}-{phase}-before")
        before = self.snapshot(operators, running)
        window = self.arguments.minutes * 60
        say(f"  measuring {window:.0f}s")
        time.sleep(window)
        after = self.snapshot(operators, running)
        time.sleep(1.0)  # the calls due just before the window's end are on their way
        calls = [
            call
            for call in self.receiver.dump(f"{scale.jobs_count}-{phase}")
            if call.scheduled_ns <= after.wall * 1e9
        ]
        expected = self.expected_every(scale, before.wall + 0.5, after.wall - 1.0)
        self.figures(scale, phase, before, after, calls=calls, expected=expected, extra=extra)

    def profile(self, scale: Scale, operators: Operators, when: str) -> None:
        """py-spy on r1 for ``--profile-seconds`` when ``--profile-at`` is ``when``.

        At ``start`` it samples in the background from the process's start (arming the jobs,
        then running them); at ``replicas`` from the others' start (r1 letting their shares go,
        then running its own); at ``steady`` it samples after the steady window, in the
        foreground.
        """
        seconds = self.arguments.profile_seconds
        if not seconds or self.arguments.profile_at != when:
            return
        spy = shutil.which("py-spy")
        if spy is None:
            say("profile: py-spy not found (run with `uv run --with py-spy ...`)")
            return
        out = self.results / f"profile-{scale.jobs_count}-{when}.txt"
        say(f"profile: py-spy on r1 for {seconds}s -> {out}")
        spying = subprocess.Popen(
            [
                spy, "record", "--pid", str(operators["r1"].process.pid),
                "--duration", str(seconds), "--rate", "250", "--format", "raw",
                "--nolineno", "--output", str(out),
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

        def summarize() -> None:
            spying.wait()
            if out.exists():
                summary = summarize_profile(out)
                (self.results / f"profile-{scale.jobs_count}-{when}-top.txt").write_text(summary)
                print(summary, flush=True)

        if when in ("start", "replicas"):
            self._pending_profile = summarize
        else:
            summarize()

    def restart(self, scale: Scale, operators: Operators) -> None:
        say("restart: SIGTERM to r1")
        stopping = time.monotonic()
        operators["r1"].terminate()
        stopped = time.monotonic() - stopping
        code = operators["r1"].process.popen.returncode
        say(f"  r1 exited {stopped:.1f}s after SIGTERM (exit status {code})")
        self.start(scale, operators, "restart", stop={"sigterm_s": round(stopped, 1), "exit": code})

    def replicas(self, scale: Scale, operators: Operators) -> list[str]:
        running = ["r1"]
        joining = time.time()
        for replica_id in operators.replica_ids[1:]:
            operators.start(replica_id, wait=False)
            running.append(replica_id)
        self.profile(scale, operators, "replicas")
        held = self.held(scale, running)
        for replica_id in running[1:]:
            armed = self.wait_armed(operators, replica_id, held[replica_id])
            say(f"  {replica_id}: its {held[replica_id]} jobs armed {armed:.1f}s after its start")
        # Joined replicas are not a fleet until each sees the others: the window measures the
        # fleet, what joining cost is the wait (and the misses in the calls before it).
        self.wait_members(operators, running)
        agreed = time.time() - joining
        say(f"  members agreed {agreed:.1f}s after the others started")
        self.measure(
            scale, operators, running, "replicas", extra={"reconverged_s": round(agreed, 1)}
        )
        self._pending_profile()
        return running

    def held(self, scale: Scale, members: Sequence[str]) -> dict[str, int]:
        """How many jobs each of ``members`` schedules once they all see each other: with
        sharding (the command's default) those it owns or backs up, without it every one."""
        if _operator_flag(self.arguments, "--sharding") == "off":
            return dict.fromkeys(members, scale.jobs_count)
        held = collections.Counter[str]()
        for job in scale.jobs:
            shares = ownership.shares(job.uid, members)
            if shares is not None:
                held.update(member for member in (shares.owner, shares.backup) if member)
        return {member: held[member] for member in members}

    def failover(self, scale: Scale, operators: Operators, running: list[str]) -> None:
        """SIGKILL of the replica owning the most jobs, then SIGSTOP/SIGCONT of a survivor."""
        shares = {job.name: ownership.shares(job.uid, running) for job in scale.jobs}
        owned = collections.Counter(share.owner for share in shares.values() if share)
        victim = owned.most_common(1)[0][0]
        orphans = {
            f"{scale.namespace}/{name}/"
            for name, share in shares.items()
            if share is not None and share.owner == victim
        }
        survivors = [replica for replica in running if replica != victim]
        self.receiver.dump(f"{scale.jobs_count}-failover-before")
        before = self.snapshot(operators, survivors)
        say(f"failover: SIGKILL of {victim} (owner of {len(orphans)} jobs)")
        killed_at = time.time()
        operators[victim].kill()
        running[:] = survivors
        reconverged = self.wait_members(operators, survivors)
        say(f"  survivors agree {reconverged:.2f}s after the kill")
        time.sleep(max(0.0, killed_at + self.arguments.failover_seconds - time.time()))
        after = self.snapshot(operators, survivors)
        calls = self.calls_until(scale, after, "failover")
        until_ns = (killed_at + reconverged) * 1e9
        taken = sorted(
            call.lateness_ms
            for call in calls
            if killed_at * 1e9 < call.scheduled_ns <= until_ns
            and call.key[: call.key.rfind("/", 0, call.key.rfind("/")) + 1] in orphans
        )
        say(f"  {len(taken)} slots of its jobs run by backups: p99 {_pct(taken, 0.99)} ms")
        expected = self.expected_every(scale, killed_at, after.wall - 1.0)
        self.figures(
            scale,
            "failover",
            before,
            after,
            calls=calls,
            expected=expected,
            extra={
                "takeover_p99_ms": _pct(taken, 0.99),
                "takeover_max_ms": round(taken[-1], 2) if taken else math.nan,
                "takeover_slots": len(taken),
                "reconverged_s": round(reconverged, 2),
            },
        )
        paused = survivors[-1]
        before = self.snapshot(operators, survivors)
        say(f"failover-pause: SIGSTOP of {paused} for {self.arguments.pause_seconds:.0f}s")
        started = time.time()
        operators[paused].pause()
        time.sleep(self.arguments.pause_seconds)
        operators[paused].resume()
        time.sleep(self.arguments.failover_seconds)
        after = self.snapshot(operators, survivors)
        calls = self.calls_until(scale, after, "failover-pause")
        expected = self.expected_every(scale, started, after.wall - 1.0)
        self.figures(scale, "failover-pause", before, after, calls=calls, expected=expected)

    def calls_until(self, scale: Scale, after: Snapshot, label: str) -> list[Call]:
        """The calls since the last dump of the slots due by ``after`` (those due just before
        it are given 1.5 s to arrive)."""
        time.sleep(1.5)
        return [
            call
            for call in self.receiver.dump(f"{scale.jobs_count}-{label}")
            if call.scheduled_ns <= after.wall * 1e9
        ]

    def wait_members(self, operators: Operators, members: Sequence[str]) -> float:
        """Seconds (from the call) until each of ``members`` logs exactly ``members``. Each log
        is read on from where the previous look stopped: a replica's log grows by a line a run,
        hundreds of megabytes in a long run."""
        started = time.time()
        wanted = ("members: " + ", ".join(sorted(members))).encode()
        read = dict.fromkeys(members, 0)
        last: dict[str, bytes] = {}
        pending = set(members)
        while pending and time.time() - started < 60:
            for replica in list(pending):
                path = operators[replica].log_path
                if not path.exists():
                    continue
                with path.open("rb") as log:
                    log.seek(read[replica])
                    chunk = log.read()
                whole = chunk.rfind(b"\n") + 1
                read[replica] += whole
                for line in chunk[:whole].splitlines():
                    if b"punctual.kube.membership: members: " in line:
                        last[replica] = line
                if last.get(replica, b"").endswith(wanted):
                    pending.discard(replica)
            time.sleep(0.05)
        return time.time() - started

    def burst(self, scale: Scale, operators: Operators, running: Sequence[str]) -> None:
        for phase, spec in (
            ("burst", {"every": None, "jitter": None, "schedule": "* * * * *"}),
            ("burst-jitter30s", {"jitter": "30s"}),
        ):
            jitter = timedelta(seconds=30) if spec.get("jitter") else timedelta()
            say(f"{phase}: patching {scale.jobs_count} jobs to {spec}")
            requests = [
                Request(
                    "PATCH",
                    f"{API}/namespaces/{scale.namespace}/scheduledjobs/{job.name}",
                    {"spec": spec},
                    "application/merge-patch+json",
                )
                for job in scale.jobs
            ]
            asyncio.run(
                _bulk(
                    self.cluster, requests, concurrency=self.arguments.concurrency, what="patched"
                )
            )
            self.wait_observed(scale)
            # The first top of the minute at least 5 s away: every replica has re-armed by then.
            top = (int(time.time() + 5) // 60 + 1) * 60
            say(f"  waiting for {datetime.fromtimestamp(top, UTC):%H:%M:%S}")
            time.sleep(max(0.0, top - time.time() - 3))
            self.receiver.dump(f"{scale.jobs_count}-{phase}-before")
            before = self.snapshot(operators, running)
            horizon = top + (30 if jitter else 0) + self.arguments.burst_grace
            time.sleep(max(0.0, horizon - time.time()))
            after = self.snapshot(operators, running)
            slot_ms = top * 1000
            keys = {f"{scale.namespace}/{job.name}/{job.uid}/{slot_ms}" for job in scale.jobs}
            calls = [c for c in self.receiver.dump(f"{scale.jobs_count}-{phase}") if c.key in keys]
            arrivals = sorted(call.arrived_ns for call in calls)
            spread = (arrivals[-1] - top * 1_000_000_000) / 1e9 if arrivals else math.nan
            self.figures(
                scale,
                phase,
                before,
                after,
                calls=calls,
                expected=keys,
                extra={"last_arrival_s": round(spread, 2)},
            )

    # the whole run ----------------------------------------------------------------------------

    def run(self) -> list[dict[str, Any]]:
        arguments = self.arguments
        rows: list[dict[str, Any]] = []
        run_dir = self.results / "run"
        say(f"starting the control plane and Redis (run dir {run_dir})")
        with (
            LocalCluster(kwok=False, run_dir=run_dir / "cluster", progress=say) as cluster,
            LocalRedis(run_dir=run_dir / "redis") as local_redis,
        ):
            self.cluster, self.redis = cluster, local_redis
            self.api = ApiClient(cluster.server, ClusterCerts(cluster.run_dir / "pki"), timeout=60)
            cluster.kubectl("apply", "--server-side", "-f", str(CRD))
            cluster.kubectl("wait", "--for=condition=established", "crd/scheduledjobs.punctual.dev")
            self.receiver = ReceiverProcess(run_dir)
            try:
                for count, every, jitter in zip(
                    arguments.jobs, arguments.every, arguments.jitter, strict=True
                ):
                    scale = Scale(
                        jobs_count=count,
                        every=every,
                        jitter=jitter,
                        namespace=f"bench-{count}-{int(time.time())}",
                    )
                    try:
                        self.scale(scale, run_dir)
                    finally:
                        rows.extend(scale.rows)
                        write_csv(self.results / "scale.csv", rows)
            finally:
                self.receiver.stop()
        return rows

    def scale(self, scale: Scale, run_dir: Path) -> None:
        phases = set(self.arguments.phases)
        say(
            f"=== {scale.jobs_count} jobs, every {durations.format(scale.every)}, jitter "
            f"{durations.format(scale.jitter) if scale.jitter else 0} ==="
        )
        self.create(scale)
        operators_dir = run_dir / f"operators-{scale.jobs_count}"
        operators_dir.mkdir(parents=True, exist_ok=True)
        operators = Operators(
            self.cluster,
            operators_dir,
            namespace=scale.namespace,
            replicas=self.arguments.replicas,
            lock_backend="redis",
            redis_url=self.redis.url,
            status_interval=self.arguments.status_interval,
            extra_args=shlex.split(self.arguments.operator_args),
        )
        running = ["r1"]

        def phase(name: str, step: Callable[[], object]) -> bool:
            """Run one phase; a failure is a row of the table, and the next N still runs."""
            if name not in phases:
                return True
            try:
                step()
            except Exception as error:
                say(f"{name} FAILED: {type(error).__name__}: {error}")
                scale.rows.append(
                    {"jobs": scale.jobs_count, "phase": f"{name} FAILED",
                     "failure": " ".join(f"{type(error).__name__}: {error}".split())[:300],
                     "load1": round(os.getloadavg()[0], 2)}
                )  # fmt: skip
                return False
            return True

        def more_replicas() -> None:
            running[:] = self.replicas(scale, operators)

        try:
            if not phase("start", lambda: self.start(scale, operators, "start")):
                return
            phase("steady", lambda: self.measure(scale, operators, running, "steady"))
            self.profile(scale, operators, "steady")
            self._pending_profile()
            phase("restart", lambda: self.restart(scale, operators))
            if self.arguments.replicas > 1:
                phase("replicas", more_replicas)
            phase("burst", lambda: self.burst(scale, operators, running))
            if len(running) > 1:
                phase("failover", lambda: self.failover(scale, operators, running))
        finally:
            operators.stop()
            for replica_id, lines in operators.problems().items():
                say(f"  {replica_id}: {len(lines)} error line(s), first: {lines[0][:300]}")
                scale.rows.append(
                    {"jobs": scale.jobs_count, "phase": f"log-errors-{replica_id}",
                     "errors": len(lines)}
                )  # fmt: skip
            with contextlib.suppress(Exception):
                self.api.request_text("DELETE", f"/api/v1/namespaces/{scale.namespace}")


def _pct(ordered: Sequence[float], quantile: float) -> float:
    return round(percentile(ordered, quantile), 2)


# -- profiles --------------------------------------------------------------------------------------


def summarize_profile(path: Path, top: int = 30, rate: int = 250) -> str:
    """Top functions of the event-loop thread, from py-spy's raw (collapsed) stacks.

    Only stacks through ``Runner.run`` count (other threads are idle waits: the metrics server,
    the default executor), and samples in the selector's ``select`` are idle time (py-spy leaves
    out most idle samples): the rest is the loop's busy time, split by own and inclusive
    samples. With uvloop, the loop's own work is C code: samples ending in ``Runner.run``.
    """
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    stacks: collections.Counter[str] = collections.Counter()
    busy = idle = other = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = [_short(frame) for frame in stack.split(";")]
        if not any(frame.startswith("Runner.run ") for frame in frames):
            other += count
            continue
        if frames[-1].startswith("_PollLikeSelector.select ") or frames[-1].startswith(
            "EpollSelector.select "
        ):
            idle += count
            continue
        busy += count
        stacks[";".join(frames)] += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    lines = [
        f"event loop: {busy} busy samples ({busy / rate:.1f}s), {idle} idle in select "
        f"({idle / rate:.1f}s); {other} samples in other threads or outside the loop",
        "",
        "own time (share of the loop's busy time):",
    ]
    lines += [f"  {100 * c / busy:5.1f}%  {f}" for f, c in own.most_common(top)]
    lines += ["", "by part (inclusive, overlapping):"]
    for part, markers in PROFILE_PARTS:
        share = sum(c for f, c in stacks.items() if any(m in f for m in markers))
        lines.append(f"  {100 * share / busy:5.1f}%  {part}")
    lines += ["", "inclusive time:"]
    lines += [f"  {100 * c / busy:5.1f}%  {f}" for f, c in inclusive.most_common(top)]
    return "\n".join(lines) + "\n"


PROFILE_PARTS = (
    ("slot claims (JobLoop._claim: lock, Redis client)", ("JobLoop._claim ",)),
    ("HTTP executor (HttpExecutor.__call__, aiohttp)", ("HttpExecutor.__call__ ",)),
    ("status writes (StatusStore._write: compose, PATCH)", ("StatusStore._write ",)),
    ("kopf: watch streams and per-event processing", ("(kopf/",)),
    ("  of which our handler (Reconciler.observe/forget)", ("Reconciler.",)),
    ("wall timer (WallTimer)", ("WallTimer.",)),
    ("Prometheus scrape and metrics", ("prometheus_client/",)),
)


def _short(frame: str) -> str:
    # "function (path/to/module.py)" -> "function (module.py)" with the package kept.
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    for marker in ("site-packages/", "operator/", "lib/python3.11/"):
        if marker in where:
            where = where.split(marker, 1)[1]
            break
    return f"{name} ({where})" if where else name


# -- output ----------------------------------------------------------------------------------------

COLUMNS = (
    "jobs", "every", "jitter", "phase", "replicas", "seconds", "creates_per_s", "armed_s",
    "next_run_time_s", "calls", "calls_per_s", "runs_per_s", "recv_p50_ms", "recv_p99_ms",
    "recv_max_ms", "hist_p50_ms", "hist_p99_ms", "hist_max_le_ms", "last_arrival_s",
    "expected_slots", "missing_slots", "missed_metric", "duplicates", "errors", "claims_won",
    "claims_lost", "claims_per_s", "rss_mb", "cpu_s_per_1k_runs", "cpu_util_pct",
    "api_req_per_run", "api_writes_per_run", "redis_cmds_per_run", "sj_requests",
    "redis_commands", "fleet_cpu_s_per_1k_runs", "claims_per_run", "takeover_p99_ms",
    "takeover_max_ms", "takeover_slots", "reconverged_s", "load1",
)  # fmt: skip
TABLE = (
    ("jobs", "N"), ("phase", "phase"), ("replicas", "rep"), ("seconds", "s"),
    ("armed_s", "armed s"), ("next_run_time_s", "nextRun s"), ("runs_per_s", "runs/s"),
    ("recv_p50_ms", "p50"), ("recv_p99_ms", "p99"), ("recv_max_ms", "max"),
    ("hist_p50_ms", "h.p50"), ("hist_p99_ms", "h.p99"), ("hist_max_le_ms", "h.max≤"),
    ("missing_slots", "miss"), ("duplicates", "dup"), ("errors", "err"),
    ("claims_per_s", "claims/s"), ("claims_lost", "lost"), ("rss_mb", "RSS MB"),
    ("cpu_s_per_1k_runs", "cpu s/1k"), ("api_req_per_run", "api/run"),
    ("api_writes_per_run", "wr/run"), ("redis_cmds_per_run", "redis/run"),
    ("fleet_cpu_s_per_1k_runs", "fleet cpu/1k"), ("claims_per_run", "claims/run"),
    ("takeover_p99_ms", "takeover p99"), ("reconverged_s", "reconv s"), ("load1", "load"),
)  # fmt: skip


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    extra = sorted({key for row in rows for key in row} - set(COLUMNS))
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=[*COLUMNS, *extra])
        writer.writeheader()
        writer.writerows(rows)


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    cells = [[title for _, title in TABLE]]
    for row in rows:
        cells.append([_cell(row.get(key)) for key, _ in TABLE])
    widths = [max(len(line[i]) for line in cells) for i in range(len(TABLE))]
    return "\n".join(
        "  ".join(text.rjust(width) for text, width in zip(line, widths, strict=True))
        for line in cells
    )


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def plot(rows: Sequence[Mapping[str, Any]], path: Path) -> bool:
    plt = plotting.pyplot()
    if plt is None:
        say("no matplotlib: no plot (run with `uv run --with matplotlib ...`)")
        return False
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for axis, phases in zip(
        axes, (("steady", "replicas"), ("burst", "burst-jitter30s")), strict=True
    ):
        for phase in phases:
            chosen = sorted((r for r in rows if r.get("phase") == phase), key=lambda r: r["jobs"])
            if not chosen:
                continue
            jobs = [r["jobs"] for r in chosen]
            for key, style in (("recv_p50_ms", "o-"), ("recv_p99_ms", "s--"), ("recv_max_ms", ":")):
                axis.plot(jobs, [r[key] for r in chosen], style, label=f"{phase} {key[5:-3]}")
            axis.plot(
                jobs, [r["hist_p99_ms"] for r in chosen], "x-.", label=f"{phase} histogram p99"
            )
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("ScheduledJobs")
        axis.set_ylabel("lateness (ms)")
        axis.grid(True, which="both", alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=7)
    axes[0].set_title("steady (jittered every), 1 and 3 replicas")
    axes[1].set_title("top of the minute: no jitter, jitter 30s")
    load = ", ".join(f"{r['jobs']}:{r['load1']}" for r in rows if r.get("phase") == "steady")
    figure.suptitle(f"Punctual lateness against job count (load1 per N: {load})", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    return True


# -- command line ----------------------------------------------------------------------------------


def _durations(text: str, *, field: str) -> list[timedelta]:
    return [durations.parse(part, field=field) for part in text.split(",")]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", default="100,1000,10000", help="job counts, comma-separated")
    parser.add_argument(
        "--every", default="auto", help="per job count (comma-separated); auto: 1s up to 1,000"
    )
    parser.add_argument(
        "--jitter",
        default="auto",
        help="per job count; auto: the period minus 1ms (spreads the load), 0: none",
    )
    parser.add_argument("--minutes", type=float, default=2.0, help="each measured window")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds before a window")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--phases", default=",".join(PHASES), help="start is always run")
    parser.add_argument("--concurrency", type=int, default=50, help="API calls in flight")
    parser.add_argument("--status-interval", default="5s")
    parser.add_argument(
        "--next-run-wait",
        type=float,
        default=180.0,
        help="seconds to wait for every fresh nextRunTime after a start (then counted stale)",
    )
    parser.add_argument(
        "--operator-args",
        default="",
        help="more arguments for every replica (baseline: '--event-loop asyncio')",
    )
    parser.add_argument("--burst-grace", type=float, default=20.0, help="seconds after a burst")
    parser.add_argument(
        "--failover-seconds", type=float, default=20.0, help="the window after a SIGKILL"
    )
    parser.add_argument("--pause-seconds", type=float, default=20.0, help="SIGSTOP for this long")
    parser.add_argument(
        "--profile-seconds", type=int, default=0, help="py-spy r1 for this long (0: no)"
    )
    parser.add_argument(
        "--profile-at",
        choices=["start", "steady", "replicas"],
        default="steady",
        help="from r1's start (arming, then running), after the steady window, or from the "
        "other replicas' start",
    )
    parser.add_argument("--results", type=Path, default=REPO / "results" / "scale")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    arguments.jobs = [int(part.replace("_", "")) for part in arguments.jobs.split(",")]
    if arguments.every == "auto":
        arguments.every = [timedelta(seconds=1 if n <= 1000 else 10) for n in arguments.jobs]
    else:
        arguments.every = _durations(arguments.every, field="--every")
        if len(arguments.every) == 1:
            arguments.every *= len(arguments.jobs)
    if arguments.jitter == "auto":
        arguments.jitter = [every - timedelta(milliseconds=1) for every in arguments.every]
    elif arguments.jitter in ("0", "none"):
        arguments.jitter = [timedelta()] * len(arguments.jobs)
    else:
        arguments.jitter = _durations(arguments.jitter, field="--jitter")
        if len(arguments.jitter) == 1:
            arguments.jitter *= len(arguments.jobs)
    arguments.phases = ["start", *(phase.strip() for phase in arguments.phases.split(","))]
    results = arguments.results / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    results.mkdir(parents=True)
    say(f"results in {results}; {os.cpu_count()} cores; {load()}")
    (results / "arguments.json").write_text(
        json.dumps({k: str(v) for k, v in vars(arguments).items()}, indent=2)
    )
    # The operators' processes may cache their bytecode (this environment turns that off):
    # a production image ships it, and compiling kopf and kubernetes-asyncio at every start
    # would be counted as start-up time.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    bench = Bench(arguments, results)
    rows: list[dict[str, Any]] = []
    try:
        rows = bench.run()
    finally:
        rows = rows or _read_rows(results / "scale.csv")
        if rows:
            print("\n" + table(rows), flush=True)
            judged = scale_targets.verdicts(rows, lock_backend=_lock_backend(arguments))
            print("\ntargets:\n" + scale_targets.summary(judged), flush=True)
            if plot(rows, results / "lateness.png"):
                say(f"plot: {results / 'lateness.png'}")
        say(f"CSV: {results / 'scale.csv'}; {load()}")
    return 0


def _lock_backend(arguments: argparse.Namespace) -> str:
    """The replicas' lock backend: redis unless ``--operator-args`` names another."""
    return _operator_flag(arguments, "--lock-backend") or "redis"


def _operator_flag(arguments: argparse.Namespace, flag: str) -> str | None:
    """The value ``--operator-args`` gives ``flag`` (``--flag value`` or ``--flag=value``)."""
    words = shlex.split(arguments.operator_args)
    for word, following in itertools.pairwise([*words, ""]):
        if word == flag:
            return following
        if word.startswith(f"{flag}="):
            return word.partition("=")[2]
    return None


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    with path.open() as rows:
        return [
            {k: _number(v) for k, v in row.items() if v not in ("", None)}
            for row in csv.DictReader(rows)
        ]


def _number(text: str) -> Any:
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return kind(text)
    return text


if __name__ == "__main__":
    sys.exit(main())
