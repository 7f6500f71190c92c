"""The scheduler's hot path without a cluster: N jobs in one process, layer by layer.

What one replica does per slot, minus Kubernetes: the shared wall timer, the slot loop, a slot
lock (in memory, or ``SET NX PX`` on a ``LocalRedis``), an executor (none, or the HTTP executor
calling ``bench/scale_receiver.py`` in a process of its own) and the metrics store, each started
by the replica's own parts (``punctual.replica.parts``) as the operator starts them (without the
Kubernetes parts, the status store and durable runs). It prints
the lateness of run starts (start − slot − jitter, what ``punctual_run_lateness_seconds``
measures), the receiver's lateness (arrival − ``X-Punctual-Scheduled-Time``) and the CPU time
per run of this process, so that each layer's cost can be told apart from the cluster's.

Usage: python bench/hot_path.py [--jobs 1000] [--every 1s] [--seconds 20]
           [--lock memory|redis] [--executor null|http] [--profile FILE (py-spy)]
"""

import argparse
import asyncio
import collections
import contextlib
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import prometheus_client

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "hack")]

from lib.statistics import percentile  # noqa: E402
from localcluster import LocalRedis, ports, processes  # noqa: E402
from punctual import metrics  # noqa: E402
from punctual.contracts import protocols, records  # noqa: E402
from punctual.replica import parts  # noqa: E402
from punctual.replica import settings as replica_settings  # noqa: E402
from punctual.runtime import clocks  # noqa: E402
from punctual.scheduling import durations, interval, overlap, plans, slots  # noqa: E402
from punctual.targets import addresses, kinds  # noqa: E402
from punctual.targets.http import connections as http_connections  # noqa: E402
from punctual.targets.http import executor as http_executor  # noqa: E402


class Lateness:
    """A run store that keeps each run's start lateness (ms), after ``since``."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.missed = 0
        self.failed = 0
        self.since: datetime | None = None

    def slot_upcoming(self, job: slots.JobRef, *, scheduled_time: datetime) -> None:
        pass

    def run_started(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        if self.since is not None and run.scheduled_time >= self.since:
            self.values.append((run.started_at - run.scheduled_time) / timedelta(milliseconds=1))

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        if self.since is not None and record.result is not records.RunResult.SUCCEEDED:
            self.failed += 1
            if self.failed <= 3:
                print(f"run failed: {record.result} {record.message}", flush=True)

    def slots_missed(
        self,
        job: slots.JobRef,
        *,
        count: int,
        newest: datetime,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        if self.since is not None:
            self.missed += count

    def slot_overlapped(
        self, job: slots.JobRef, *, slot: datetime, policy: overlap.ConcurrencyPolicy
    ) -> None:
        pass


async def _null(_: records.RunContext) -> records.Outcome:
    return records.Outcome(succeeded=True)


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    if not ordered:
        return "no runs"

    p50, p99 = percentile(ordered, 0.5), percentile(ordered, 0.99)
    return f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {ordered[-1]:.2f} ms"


async def run(
    arguments: argparse.Namespace, redis_url: str | None, target: str | None
) -> tuple[float, float]:
    every = durations.parse(arguments.every, field="--every")
    jitter = every - timedelta(milliseconds=1)
    lateness = Lateness()
    settings = replica_settings.ReplicaSettings(
        replica_id="bench", lock_backend=arguments.lock, redis_url=redis_url, metrics_port=0
    )
    meters = metrics.Metrics(prometheus_client.CollectorRegistry(), target_kinds=kinds.NAMES)
    # Leaving the block shuts the scheduler down, then closes the connections, the lock, Redis.
    async with contextlib.AsyncExitStack() as stack:
        shared = parts.connect_redis(settings, stack)
        lock = parts.open_lock(settings, stack, meters=meters, redis_connection=shared)
        connections = (
            await stack.enter_async_context(
                http_connections.HttpConnections(
                    refuse=addresses.AddressGuard.default(api_server=[], allowed=None).refusal,
                    limit_per_namespace=settings.http_connections_per_namespace,
                )
            )
            if target
            else None
        )
        scheduler = parts.start_scheduler(
            settings, stack, lock.tracked, meters=meters, stores=[lateness]
        )
        for index in range(arguments.jobs):
            uid = f"00000000-0000-0000-0000-{index:012d}"
            job = slots.JobRef(namespace="bench", name=f"job-{index:05d}", uid=uid)
            plan = plans.JobPlan(
                schedule=interval.IntervalSchedule(every=every),
                offset=slots.jitter_offset(uid, jitter=jitter, period=every),
                timeout=timedelta(seconds=5),
            )
            executor: protocols.Executor = (
                http_executor.HttpExecutor(
                    http_executor.HttpRequest(url=f"{target}/{job.name}"), connections=connections
                )
                if connections
                else _null
            )
            scheduler.arm(job, plan, executor, resume_after=clocks.system_wall())
        await asyncio.sleep(arguments.warmup)
        if arguments.gc_freeze:
            gc.freeze()
        pauses: collections.Counter[str] = collections.Counter()
        started: list[float] = []

        def watch_gc(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                started.append(time.perf_counter())
            elif started:
                generation = f"gen{info['generation']}"
                pauses[generation] += 1
                pauses[f"{generation} ms"] += round((time.perf_counter() - started.pop()) * 1e6)

        gc.callbacks.append(watch_gc)
        lateness.since = clocks.system_wall()
        cpu, wall = time.process_time(), time.monotonic()
        await asyncio.sleep(arguments.seconds)
        until = clocks.system_wall()
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        gc.callbacks.remove(watch_gc)
        gc_text = ", ".join(
            f"gen{g}: {pauses[f'gen{g}']} × "
            f"{pauses[f'gen{g} ms'] / 1e3 / max(pauses[f'gen{g}'], 1):.2f} ms"
            for g in range(3)
        )
        runs = len(lateness.values)
    print(
        f"{arguments.jobs} jobs every {arguments.every}, lock {arguments.lock}, executor "
        f"{arguments.executor}: {runs} runs in {wall:.1f}s ({runs / wall:.0f}/s), "
        f"start lateness {spread(lateness.values)}; missed {lateness.missed}, "
        f"failed {lateness.failed}; CPU {cpu / max(runs, 1) * 1e6:.0f} µs/run "
        f"({100 * cpu / wall:.0f}% of a core); load {os.getloadavg()[0]:.2f}; "
        f"GC ({gc.get_threshold()}{', frozen' if arguments.gc_freeze else ''}): {gc_text}",
        flush=True,
    )
    return lateness.since.timestamp(), until.timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--every", default="1s")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--lock", choices=["memory", "redis"], default="memory")
    parser.add_argument("--executor", choices=["null", "http"], default="null")
    parser.add_argument("--profile", type=Path, help="py-spy raw output for the whole run")
    parser.add_argument("--gc-freeze", action="store_true", help="gc.freeze() after arming")
    parser.add_argument("--gc-threshold", type=int, help="gc.set_threshold(N) (gen 0)")
    arguments = parser.parse_args()
    if arguments.gc_threshold:
        gc.set_threshold(arguments.gc_threshold, *gc.get_threshold()[1:])
    spy = None
    if arguments.profile:
        spy = subprocess.Popen(
            [
                shutil.which("py-spy") or "py-spy", "record", "--pid", str(os.getpid()),
                "--rate", "250", "--format", "raw", "--nolineno",
                "--output", str(arguments.profile),
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        local_redis = (
            LocalRedis(run_dir=Path(scratch) / "redis") if arguments.lock == "redis" else None
        )
        receiver = None
        target = None
        if arguments.executor == "http":
            port = ports.free_port()
            ready = Path(scratch) / "ready"
            receiver = processes.start(
                "receiver",
                [sys.executable, str(REPO / "bench" / "scale_receiver.py"), "--port", str(port),
                 "--ready-file", str(ready)],
                Path(scratch),
            )  # fmt: skip
            processes.wait_until(receiver, ready.exists, "the receiver listens", 30)
            target = f"http://{ports.LOOPBACK}:{port}"
        try:
            if local_redis is not None:
                local_redis.start()
            since, until = asyncio.run(
                run(arguments, local_redis.url if local_redis else None, target)
            )
            if target:
                dump = Path(scratch) / "calls.csv"
                with urllib.request.urlopen(f"{target}/__dump?path={dump}") as reply:
                    reply.read()
                values = []
                for row in dump.read_text().splitlines():
                    arrived, scheduled, _ = row.split(",", 2)
                    instant = datetime.fromisoformat(scheduled).timestamp()
                    if since <= instant <= until:
                        values.append((int(arrived) / 1e9 - instant) * 1000)
                print(f"receiver lateness: {spread(values)} ({len(values)} calls)")
        finally:
            if local_redis is not None:
                local_redis.stop()
            if receiver is not None:
                receiver.stop(grace=5)
            if spy is not None:
                spy.send_signal(2)
                spy.wait(timeout=30)


if __name__ == "__main__":
    main()
