"""Every slot runs exactly once across replicas: three operator processes, twenty 1-second jobs.

Once per lock backend (redis: ``SET NX`` per slot; kubernetes: compare-and-swap of
``status.lastScheduleTime``). The receiver is the judge: each Idempotency-Key (slot id) must
arrive at most once, and every slot between a job's first and last call must have arrived or be
accounted for in ``status.counts`` (missed, skippedOverlap).

The same run yields the figures of the closing note: lateness (at the receiver and in status),
API-server writes per run, Redis round trips per slot per replica. They are printed (``-s`` or
``-rP``). ``PUNCTUAL_EXACTLY_ONCE_SECONDS`` sets the measured window (default 30 s).
"""

import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from operator_harness import (
    Call,
    Operators,
    Receiver,
    Spread,
    Write,
    apply,
    condition,
    counts,
    eventually,
    every_slots,
    http_target,
    new_namespace,
    now,
    parse_time,
    read_all,
    recent_runs,
    redis_command_calls,
    report,
    scheduled_job,
    scheduled_job_writes,
    status,
    status_lateness,
)

from localcluster import LocalCluster, LocalRedis

pytest_plugins = ["operator_fixtures"]

REPLICAS = 3
JOBS = 20
EVERY = timedelta(seconds=1)
WINDOW = float(os.environ.get("PUNCTUAL_EXACTLY_ONCE_SECONDS", "30"))
POLL = 2.0
"""How often status is read during the window, to collect the lateness of (nearly) every run:
``recentRuns`` keeps only the newest ``history.succeeded`` runs."""
HISTORY = 10


@dataclass(frozen=True)
class Tally:
    """One job's slots, as the receiver saw them and as its status accounts for them."""

    job: str
    calls: int
    duplicates: int
    expected: int
    """Slots from the first call's to the last call's, inclusive."""
    gaps: int
    """Of those, slots that never arrived."""
    counts: Counter[str]

    @property
    def explained(self) -> int:
        return self.counts["missed"] + self.counts["skippedOverlap"]


@dataclass(frozen=True)
class Run:
    backend: str
    calls: list[Call]
    window_calls: list[Call]
    bodies: dict[str, dict[str, Any]]
    status_runs: dict[tuple[str, str], dict[str, Any]]
    """Every run record seen in status during the window, by (job, slot)."""
    writes: Counter[Write]
    set_calls: int
    window: float
    replicas_at_work: Counter[str]
    problems_running: dict[str, list[str]]
    """Error lines in the replicas' logs before SIGTERM, by replica."""
    problems_stopping: dict[str, list[str]]
    """Those logged after SIGTERM."""


def measure(
    *,
    cluster: LocalCluster,
    redis_server: LocalRedis,
    receiver: Receiver,
    namespace: str,
    run_dir: Path,
    backend: str,
) -> Run:
    names = [f"job-{index:02d}" for index in range(JOBS)]
    # Created before the replicas start: with the kubernetes lock, 60 claims a second can
    # starve kubectl's creations for a minute on a small machine.
    apply(
        cluster,
        *(
            scheduled_job(
                namespace,
                name,
                {
                    "every": "1s",
                    "history": {"succeeded": HISTORY, "failed": HISTORY},
                    "target": http_target(receiver, namespace, name),
                },
            )
            for name in names
        ),
    )
    with Operators(
        cluster,
        run_dir,
        namespace=namespace,
        replicas=REPLICAS,
        lock_backend=backend,
        redis_url=redis_server.url,
        # The default: the write figures are those of a production configuration.
        status_interval="5s",
    ) as operators:
        jobs = {f"{namespace}/{name}" for name in names}
        eventually(
            lambda: jobs <= {call.job for call in receiver.calls()},
            timeout=30,
            what="a call of every job",
        )
        # Every replica has armed every job by now (they all saw the same creations); the
        # window starts on the next slot.
        writes_before = scheduled_job_writes(cluster)
        sets_before = redis_command_calls(redis_server.url, "set")
        started = now()
        status_runs: dict[tuple[str, str], dict[str, Any]] = {}
        while (now() - started).total_seconds() < WINDOW:
            time.sleep(POLL)
            for name, body in read_all(cluster, namespace).items():
                for run in recent_runs(body):
                    status_runs[(name, run["slot"])] = run
        ended = now()
        writes = scheduled_job_writes(cluster) - writes_before
        set_calls = redis_command_calls(redis_server.url, "set") - sets_before
        problems_running = operators.problems()
        # SIGTERM: each replica cancels what runs and writes its last status.
        operators.stop()
        problems_stopping = {
            replica: lines[len(problems_running.get(replica, [])) :]
            for replica, lines in operators.problems().items()
            if len(lines) > len(problems_running.get(replica, []))
        }
    calls = receiver.calls()
    bodies = read_all(cluster, namespace)
    for name, body in bodies.items():
        for run in recent_runs(body):
            status_runs[(name, run["slot"])] = run
    return Run(
        backend=backend,
        calls=calls,
        window_calls=[call for call in calls if started < call.arrived <= ended],
        bodies=bodies,
        status_runs=status_runs,
        writes=writes,
        set_calls=set_calls,
        window=(ended - started).total_seconds(),
        replicas_at_work=Counter(run.get("replica", "?") for run in status_runs.values()),
        problems_running=problems_running,
        problems_stopping=problems_stopping,
    )


def tally(run: Run) -> list[Tally]:
    tallies = []
    for name, body in sorted(run.bodies.items()):
        job = f"{body['metadata']['namespace']}/{name}"
        calls = [call for call in run.calls if call.job == job]
        slots = {call.slot for call in calls}
        expected = every_slots(min(slots) - EVERY, max(slots), EVERY)
        tallies.append(
            Tally(
                job=job,
                calls=len(calls),
                duplicates=len(calls) - len({call.idempotency_key for call in calls}),
                expected=len(expected),
                gaps=len(set(expected) - slots),
                counts=counts(body),
            )
        )
    return tallies


def summary(run: Run, tallies: list[Tally]) -> list[str]:
    runs = len(run.window_calls)
    slots = JOBS * run.window / EVERY.total_seconds()
    total = sum(run.writes.values())
    succeeded = sum(n for w, n in run.writes.items() if w.code.startswith("2"))
    lines = [
        f"{REPLICAS} replicas, {JOBS} jobs every 1s, window {run.window:.1f}s",
        f"calls received {sum(t.calls for t in tallies)}, duplicates "
        f"{sum(t.duplicates for t in tallies)}, expected slots {sum(t.expected for t in tallies)}, "
        f"gaps {sum(t.gaps for t in tallies)}",
        "status counts: "
        + ", ".join(
            f"{key} {sum(t.counts[key] for t in tallies)}"
            for key in ("succeeded", "failed", "timedOut", "skippedOverlap", "missed")
        ),
        "runs per replica (status records): "
        + ", ".join(f"{r} {n}" for r, n in sorted(run.replicas_at_work.items())),
        f"lateness at the receiver (arrival - X-Punctual-Scheduled-Time): "
        f"{Spread.of(call.lateness_ms for call in run.window_calls)}",
        f"lateness in status (latenessMillis): "
        f"{Spread.of(status_lateness(run.status_runs.values()))}",
        f"API-server writes on scheduledjobs in the window: {total} for {runs} runs = "
        f"{total / max(runs, 1):.2f} per run ({succeeded / max(runs, 1):.2f} succeeded, "
        f"{(total - succeeded) / max(runs, 1):.2f} refused)",
        *(f"  {write}: {n}" for write, n in sorted(run.writes.items(), key=str)),
    ]
    if run.backend == "redis":
        lines.append(
            f"Redis SET calls in the window: {run.set_calls} for {slots:.0f} slots x "
            f"{REPLICAS} replicas = {run.set_calls / slots / REPLICAS:.2f} per slot per replica"
        )
    for when, found in (("running", run.problems_running), ("stopping", run.problems_stopping)):
        for replica, problems in found.items():
            lines += [f"{replica} log while {when}: {line[:160]}" for line in problems[:3]]
    for t in tallies:
        if t.duplicates or t.gaps or t.explained:
            lines.append(
                f"{t.job}: calls {t.calls}, duplicates {t.duplicates}, gaps {t.gaps}, "
                f"counts {dict(t.counts)}"
            )
    return lines


BACKENDS = [
    pytest.param("redis", id="redis"),
    pytest.param("kubernetes", id="kubernetes"),
]


@pytest.fixture(scope="module", params=BACKENDS)
def run(
    request: pytest.FixtureRequest,
    cluster: LocalCluster,
    redis_server: LocalRedis,
    scheduled_job_crd: list[Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Run]:
    """One measured run per backend, shared by the tests below."""
    backend: str = request.param
    with Receiver() as receiver, new_namespace(cluster, f"exactly-once-{backend}") as namespace:
        yield measure(
            cluster=cluster,
            redis_server=redis_server,
            receiver=receiver,
            namespace=namespace,
            run_dir=tmp_path_factory.mktemp(f"operators-{backend}"),
            backend=backend,
        )


def job_of(body: dict[str, Any]) -> str:
    return f"{body['metadata']['namespace']}/{body['metadata']['name']}"


def test_the_figures(run: Run) -> None:
    """Not a check: the summary of the run, printed for the closing note."""
    report(f"exactly once, lock backend {run.backend}", summary(run, tally(run)))
    assert len(run.bodies) == JOBS


def test_no_slot_runs_twice(run: Run) -> None:
    """Each Idempotency-Key (slot id) arrives at most once, whichever replica claimed it."""
    assert [t.job for t in tally(run) if t.duplicates] == []
    assert all(t.calls > 0 for t in tally(run))


def test_every_slot_between_the_first_and_the_last_ran_or_is_counted(run: Run) -> None:
    unexplained = {t.job: (t.gaps, dict(t.counts)) for t in tally(run) if t.gaps > t.explained}
    assert unexplained == {}


def test_after_a_graceful_stop_status_counts_each_run_exactly_once(run: Run) -> None:
    """Each call answered 204 is one Succeeded run; a run cut by the shutdown may have reached
    the receiver and still be recorded Cancelled ("operator stopping")."""
    wrong = {}
    for body in run.bodies.values():
        received = len({c.slot for c in run.calls if c.job == job_of(body)})
        fates = counts(body)
        if (
            not fates["succeeded"]
            <= received
            <= fates["succeeded"] + fates["failed"] + fates["cancelled"]
        ):
            wrong[job_of(body)] = (received, dict(fates))
    assert wrong == {}


def test_status_stays_ready_and_keeps_the_high_water_mark(run: Run) -> None:
    for body in run.bodies.values():
        ready = condition(body, "Ready") or {}
        assert (ready.get("status"), ready.get("reason")) == ("True", "Scheduled")
        newest = max(c.slot for c in run.calls if c.job == job_of(body))
        assert parse_time(status(body)["lastScheduleTime"]) >= newest


def test_the_replicas_log_no_error_while_running(run: Run) -> None:
    assert run.problems_running == {}


def test_the_replicas_log_no_error_when_stopped(run: Run) -> None:
    assert run.problems_stopping == {}
