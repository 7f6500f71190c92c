"""Queue lateness: how late does the frameworks' own worker start a task Punctual enqueued, and
how late does it start the same schedule's task sent by Celery beat?

One run, side by side on one broker (a Redis with a password, the tenant's, beside the lock's
Redis; taskiq's stream broker in its database 1, as taskiq's two brokers keep their queues under
the same default key): for each of ``--frameworks`` (by default every one of the frameworks'
integration test: Celery, RQ, arq, Dramatiq, taskiq's list and stream brokers, Sidekiq, BullMQ;
Celery always) a ScheduledJob ``every: 1s`` whose queue target calls the recording task of that
framework's own worker (the test's workers, ``tests/integration/queue_framework_workers.py``),
on ``--replicas`` operator replicas (the Redis slot lock); and a real ``celery beat`` process
with one entry every second calling the same task on the same Celery worker
(``bench/celery_beat_app.py``).

Measured over ``--seconds``, once every worker ran its first task: lateness, the time the task
started (as it records it) minus its scheduled time (the slot's, as the message carries it; for
beat, the time its entry was due: the previous send plus the second, as beat reckons), p50, p99
and max, per framework; the runs, duplicates (a slot run twice), the seconds of the window
without a run, and the drift: how far the last scheduled time is behind the first's plus a
second per run (beat's interval starts at each send; Punctual's slots are on the clock's
seconds). The machine's load is printed
beside the figures: the machine may be shared. The issue's target for Punctual's rows: p99
within 50 ms plus the framework's own polling interval.

Usage (``make bench-queues`` runs it with the defaults, about 2 minutes):
  uv run --frozen python bench/queue_lateness.py [--seconds 60] [--replicas 2]
      [--frameworks celery,rq,...] [--keep-logs]
"""

import argparse
import math
import os
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from environment import Environment, environment, harness, queue_framework_workers
from lib.output import load, say
from lib.statistics import percentile
from localcluster import LocalRedis, processes

Worker = queue_framework_workers.Worker
DATABASES = {"taskiq-stream": 1}
"""The database of the broker's Redis each framework uses, when not 0: taskiq's list and stream
brokers both keep their queue at the key ``taskiq`` by default."""
BENCH = Path(__file__).resolve().parent
BEAT_JOB = "beat"
"""The prefix of beat's run ids in the Celery worker's records (``bench/celery_beat_app.py``)."""
FIRST_RUN_TIMEOUT = 120.0
DRAIN_SECONDS = 3.0
"""After the window, before the records are read: the window's last slots reach their worker."""


@dataclass(frozen=True)
class Row:
    name: str
    runs: int
    duplicates: int
    without_a_run: int
    drift_ms: float
    lateness_ms: list[float]

    def line(self) -> str:
        p50, p99 = percentile(self.lateness_ms, 0.5), percentile(self.lateness_ms, 0.99)
        highest = self.lateness_ms[-1] if self.lateness_ms else math.nan
        return (
            f"| {self.name} | {self.runs} | {self.duplicates} | {self.without_a_run} "
            f"| {self.drift_ms:.0f} | {p50:.0f} | {p99:.0f} | {highest:.0f} |"
        )


def row(name: str, records: list[dict[str, Any]], *, start: float, end: float) -> Row:
    """``records`` of one schedule, counted if their scheduled time is in [``start``, ``end``)."""
    inside = [
        line
        for line in records
        if start <= harness.parse_time(line["scheduledTime"]).timestamp() < end
    ]
    slots = Counter(line["slot"] for line in inside)
    scheduled = sorted(harness.parse_time(line["scheduledTime"]).timestamp() for line in inside)
    seconds = {int(instant) for instant in scheduled}
    return Row(
        name=name,
        runs=len(inside),
        duplicates=sum(count - 1 for count in slots.values()),
        without_a_run=len(set(range(math.ceil(start), math.ceil(end))) - seconds),
        drift_ms=(scheduled[-1] - scheduled[0] - (len(set(scheduled)) - 1)) * 1000
        if scheduled
        else math.nan,
        lateness_ms=sorted(
            (line["startedAt"] - harness.parse_time(line["scheduledTime"]).timestamp()) * 1000
            for line in inside
        ),
    )


def start_beat(broker: LocalRedis, run_dir: Path) -> processes.ManagedProcess:
    env = dict(
        os.environ,
        BROKER_URL=broker.url,
        BEAT_JOB=BEAT_JOB,
        PYTHONPATH=os.pathsep.join([str(BENCH), str(queue_framework_workers.WORKERS)]),
    )
    argv = [
        str(queue_framework_workers.VENV_BIN / "celery"),
        "-A", "celery_beat_app", "beat",
        "--scheduler", "celery_beat_app.DueTimeScheduler",
        "--schedule", str(run_dir / "celerybeat-schedule"),
        "--loglevel", "INFO",
    ]  # fmt: skip
    return processes.start("celery-beat", argv, run_dir, env=env, cwd=run_dir)


def broker_url(broker: LocalRedis, framework: str) -> str:
    return f"{broker.url.removesuffix('/0')}/{DATABASES.get(framework, 0)}"


def secret_name(framework: str) -> str:
    return f"tenant-broker-db{DATABASES.get(framework, 0)}"


def create_jobs(env: Environment, broker: LocalRedis, frameworks: list[str]) -> None:
    """A Secret per database of the broker, and a job every second per framework."""
    for framework in {secret_name(framework): framework for framework in frameworks}.values():
        env.cluster.api.post(
            f"/api/v1/namespaces/{env.namespace}/secrets",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret_name(framework)},
                "stringData": {"url": broker_url(broker, framework)},
            },
        )
    for framework in frameworks:
        target = queue_framework_workers.task_target(
            framework, framework, secret=secret_name(framework)
        )
        env.cluster.api.post(
            f"{harness.API}/namespaces/{env.namespace}/scheduledjobs",
            harness.scheduled_job(
                env.namespace, framework, {"every": "1s", "target": {"queue": target}}
            ),
        )


def measure(arguments: argparse.Namespace, env: Environment, broker: LocalRedis) -> list[Row]:
    frameworks: list[str] = arguments.frameworks
    workers: dict[str, Worker] = {}
    beat = None
    try:
        for framework in frameworks:
            folder = env.run_dir / "workers" / framework
            folder.mkdir(parents=True)
            workers[framework] = Worker(framework, broker_url(broker, framework), folder)
        say(f"started the workers of {', '.join(frameworks)}")
        beat = start_beat(broker, env.run_dir)
        (env.run_dir / "operators").mkdir()
        with harness.Operators(
            env.cluster,
            env.run_dir / "operators",
            namespace=env.namespace,
            replicas=arguments.replicas,
            lock_backend="redis",
            redis_url=env.redis.url,
            status_interval="5s",
        ):
            create_jobs(env, broker, frameworks)
            beat_worker = workers["celery"]  # runs beat's tasks too

            def without_a_run() -> list[str]:
                names = [
                    framework
                    for framework, worker in workers.items()
                    if not worker.recorded(f"{env.namespace}/{framework}")
                ]
                return names + ([] if beat_worker.recorded(BEAT_JOB) else ["celery beat"])

            try:
                harness.eventually(
                    lambda: not without_a_run(),
                    timeout=FIRST_RUN_TIMEOUT,
                    what="a first run of every framework's job and of beat's entry",
                )
            except AssertionError:
                raise SystemExit(
                    f"no run of {', '.join(without_a_run())} after {FIRST_RUN_TIMEOUT:.0f} s: "
                    f"see the logs under {env.run_dir} (--keep-logs)"
                ) from None
            start = math.ceil(time.time())
            say(f"every worker ran a first task; measuring {arguments.seconds} s ({load()})")
            time.sleep(start + arguments.seconds - time.time() + DRAIN_SECONDS)
        end = start + arguments.seconds
        rows = [
            row(
                f"Punctual → {framework}",
                workers[framework].recorded(f"{env.namespace}/{framework}"),
                start=start,
                end=end,
            )
            for framework in frameworks
        ]
        beat_row = row("Celery beat → celery", beat_worker.recorded(BEAT_JOB), start=start, end=end)
        return [*rows, beat_row]
    finally:
        if beat is not None:
            beat.stop(grace=5)
        for worker in workers.values():
            worker.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=60, help="the window measured")
    parser.add_argument("--replicas", type=int, default=2, help="operator replicas")
    parser.add_argument(
        "--frameworks",
        type=lambda text: text.split(","),
        default=list(queue_framework_workers.FRAMEWORKS),
        help="comma-separated, of "
        + ",".join(queue_framework_workers.FRAMEWORKS)
        + " (celery always: its worker runs beat's tasks too)",
    )
    parser.add_argument("--keep-logs", action="store_true", help="keep the run folder")
    arguments = parser.parse_args()
    unknown = set(arguments.frameworks) - set(queue_framework_workers.FRAMEWORKS)
    if unknown:
        parser.error(f"unknown frameworks: {', '.join(sorted(unknown))}")
    arguments.frameworks = ["celery", *(each for each in arguments.frameworks if each != "celery")]
    missing = [program for program in ("sidekiq", "node") if shutil.which(program) is None]
    if missing:
        say(f"no {', '.join(missing)} on this machine: run with --frameworks without them")
    load_before = load()
    with (
        environment("queues", keep=arguments.keep_logs) as env,
        LocalRedis(run_dir=env.run_dir / "broker", password="tenant s3cret") as broker,
    ):
        rows = measure(arguments, env, broker)
    print(
        f"\nscheduled time → the worker's task started, {arguments.seconds} s, every 1 s, "
        f"{arguments.replicas} replicas ({datetime.now():%Y-%m-%d %H:%M})"
    )
    print(f"before: {load_before}; after: {load()}")
    print(
        "| schedule | runs | duplicates | seconds without a run | drift ms "
        "| p50 ms | p99 ms | max ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for each in rows:
        print(each.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
