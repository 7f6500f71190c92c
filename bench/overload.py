"""Overload: do 1,000 invalid ScheduledJobs slow down the valid ones?

An invalid object (a bad cron expression, an unknown time zone, a jitter longer than the
schedule's period) costs the operator a parse, a status write (Ready=False, InvalidSpec) and a
Warning Event, and must cost nothing after that. This benchmark runs ``--valid`` jobs
``every: 1s`` on an HTTP receiver twice, each time with fresh operator replicas in a fresh
namespace, and measures their lateness at the receiver (arrival minus
X-Punctual-Scheduled-Time):

1. baseline: the valid jobs alone, for ``--window`` seconds;
2. overload: the same jobs while ``--invalid`` invalid ScheduledJobs are created in their
   namespace (as fast as the API server takes them, by direct POSTs), and then for
   ``--window`` seconds with all of them present.

The verdict: in both overload windows, p99 lateness is within 2x of the baseline's. Exit status
1 if not.

Usage (``make overload`` runs it with the defaults):
  uv run --frozen python bench/overload.py [--valid 100] [--invalid 1000] [--window 90]
      [--replicas 2] [--keep-logs]
"""

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from environment import Environment, create_all, environment, harness
from lib.output import load, say

INVALID_SPECS = (
    {"schedule": "61 * * * *"},  # minute out of range: only the operator's cron parser sees it
    {"schedule": "*/5 * * * *", "timeZone": "Mars/Olympus"},
    {"schedule": "* * * * *", "jitter": "2m"},  # jitter not below the shortest period
)
SETTLE = 20.0
"""Seconds after the last invalid object is created before the steady-state window opens."""


@dataclass(frozen=True)
class Window:
    name: str
    lateness: harness.Spread
    calls: int
    expected: int


@dataclass(frozen=True)
class Phase:
    name: str
    windows: list[Window]
    invalid_ready_false: int
    load_after: str
    create_seconds: float = 0.0
    status_writes: int = 0
    events: int = 0


def valid_jobs(env: Environment, namespace: str, count: int) -> list[dict[str, object]]:
    return [
        harness.scheduled_job(
            namespace,
            f"valid-{index:03d}",
            {
                "every": "1s",
                "target": harness.http_target(env.receiver, namespace, f"valid-{index:03d}"),
            },
        )
        for index in range(count)
    ]


def invalid_jobs(env: Environment, namespace: str, count: int) -> list[dict[str, object]]:
    return [
        harness.scheduled_job(
            namespace,
            f"invalid-{index:04d}",
            {
                **INVALID_SPECS[index % len(INVALID_SPECS)],
                "target": {"http": {"url": env.receiver.url(f"/{namespace}/never")}},
            },
        )
        for index in range(count)
    ]


def run_phase(
    env: Environment, name: str, *, valid: int, invalid: int, window: float, replicas: int
) -> Phase:
    namespace = f"{env.namespace}-{name}"
    env.cluster.api.post(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    )
    with harness.Operators(
        env.cluster,
        env.run_dir,
        namespace=namespace,
        replicas=replicas,
        lock_backend="redis",
        redis_url=env.redis.url,
        status_interval="5s",
    ) as operators:
        say(f"{name}: {valid} valid jobs")
        harness.apply(env.cluster, *valid_jobs(env, namespace, valid))
        wanted = {f"{namespace}/valid-{index:03d}" for index in range(valid)}
        deadline = time.monotonic() + 120
        while not wanted <= {call.job for call in env.receiver.calls()}:
            if time.monotonic() > deadline:
                raise SystemExit(f"{name}: not every valid job ran within 120s")
            time.sleep(0.5)
        writes_before = sum(harness.scheduled_job_writes(env.cluster).values())
        spans: list[tuple[str, datetime, datetime]] = []
        create_seconds = 0.0
        if invalid:
            say(f"{name}: creating {invalid} invalid ScheduledJobs")
            begun = harness.now()
            create_all(env.cluster, namespace, invalid_jobs(env, namespace, invalid))
            created = harness.now()
            create_seconds = (created - begun).total_seconds()
            spans.append((f"while creating {invalid} invalid", begun, created))
            say(f"{name}: created in {create_seconds:.0f}s; settling, then measuring")
            time.sleep(SETTLE)
            started = harness.now()
            time.sleep(window)
            spans.append((f"with {invalid} invalid present", started, harness.now()))
        else:
            started = harness.now()
            time.sleep(window)
            spans.append(("alone", started, harness.now()))
        status_writes = sum(harness.scheduled_job_writes(env.cluster).values()) - writes_before
        bodies = harness.read_all(env.cluster, namespace)
        events = len(env.cluster.api.get(f"/api/v1/namespaces/{namespace}/events")["items"])
        operators.stop()
    ready = Counter(
        ((harness.condition(body, "Ready") or {}).get("reason", "none"))
        for job_name, body in bodies.items()
        if job_name.startswith("invalid-")
    )
    windows = []
    for label, begin, end in spans:
        calls = [
            call
            for call in env.receiver.calls()
            if call.job in wanted and begin < call.scheduled_time <= end
        ]
        windows.append(
            Window(
                name=label,
                lateness=harness.Spread.of(call.lateness_ms for call in calls),
                calls=len(calls),
                expected=int(valid * (end - begin).total_seconds()),
            )
        )
    return Phase(
        name=name,
        windows=windows,
        invalid_ready_false=ready.get("InvalidSpec", 0),
        load_after=load(),
        create_seconds=create_seconds,
        status_writes=status_writes,
        events=events,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--valid", type=int, default=100)
    parser.add_argument("--invalid", type=int, default=1000)
    parser.add_argument("--window", type=float, default=90.0, metavar="SECONDS")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--keep-logs", action="store_true")
    arguments = parser.parse_args(argv)
    load_before = load()
    with environment("overload", keep=arguments.keep_logs) as env:
        phases = [
            run_phase(
                env,
                "baseline",
                valid=arguments.valid,
                invalid=0,
                window=arguments.window,
                replicas=arguments.replicas,
            ),
            run_phase(
                env,
                "overload",
                valid=arguments.valid,
                invalid=arguments.invalid,
                window=arguments.window,
                replicas=arguments.replicas,
            ),
        ]
    baseline, overload = phases
    print(
        f"\n=== overload: {arguments.valid} valid jobs every 1s, {arguments.replicas} replicas "
        f"(redis lock), {arguments.window:.0f}s windows ==="
    )
    print(f"load: before {load_before}; after baseline {baseline.load_after}; after overload "
          f"{overload.load_after}")  # fmt: skip
    reference = baseline.windows[0].lateness.p99
    ok = True
    for phase in phases:
        for window in phase.windows:
            ratio = window.lateness.p99 / max(reference, 1.0)
            within = ratio <= 2.0
            ok = ok and within
            print(
                f"  {window.name:<28} lateness {window.lateness}; runs {window.calls} of "
                f"{window.expected} slots; p99 {ratio:.2f}x the baseline"
                + ("" if phase is baseline else f" ({'OK' if within else 'over 2x'})")
            )
    print(
        f"  invalid objects: created in {overload.create_seconds:.0f}s "
        f"({arguments.invalid / max(overload.create_seconds, 1):.0f}/s), "
        f"{overload.invalid_ready_false} Ready=False InvalidSpec at the end; writes on "
        f"scheduledjobs during the phase: {overload.status_writes} (baseline "
        f"{baseline.status_writes}); Events in the namespace: {overload.events}"
    )
    print(f"verdict: {'OK' if ok else 'FAILED'} (p99 within 2x of the baseline in every window)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
