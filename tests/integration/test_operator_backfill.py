"""Backfill: ``punctual backfill NAME --from T1 --to T2`` runs the job's slots of that past
window once each, oldest first, through the claim of each slot, printing the progress; status
shows them as backfilled runs, and a slot that ran already does not run again.

Two operator replicas watch the module's namespace, with each lock backend: one of them takes
the request, and each slot runs once.
"""

import subprocess
from datetime import datetime, timedelta

from operator_harness import (
    Operators,
    Receiver,
    apply,
    events,
    eventually,
    from_millis,
    http_target,
    millis,
    now,
    punctual,
    read,
    recent_runs,
    scheduled_job,
    status,
)

from localcluster import LocalCluster

pytest_plugins = ["operator_fixtures", "replica_pairs"]

EVERY = timedelta(seconds=10)


def backfill(
    cluster: LocalCluster, namespace: str, name: str, start: datetime, end: datetime
) -> "subprocess.CompletedProcess[str]":
    return punctual(
        cluster, "backfill", name, "-n", namespace,
        "--from", start.isoformat(), "--to", end.isoformat(), "--timeout", "90s",
    )  # fmt: skip


def slots_in(start: datetime, end: datetime) -> list[datetime]:
    step = EVERY // timedelta(milliseconds=1)
    first = -(-millis(start) // step) * step
    return [from_millis(ms) for ms in range(first, millis(end) + 1, step)]


def test_a_past_window_runs_once_each_oldest_first_and_never_again(
    cluster: LocalCluster, operators: Operators, receiver: Receiver, module_namespace: str
) -> None:
    name = f"late-{operators.lock_backend}"
    spec = {
        "every": "10s",
        "history": {"succeeded": 100},  # the kubernetes lock reads what ran in recentRuns
        "target": http_target(receiver, module_namespace, name),
    }
    apply(cluster, scheduled_job(module_namespace, name, spec))
    end = now() - timedelta(seconds=1)
    start = end - timedelta(seconds=59)
    expected = slots_in(start, end)

    done = backfill(cluster, module_namespace, name, start, end)

    assert done.returncode == 0, done.stderr
    total = len(expected)
    assert f"{total}/{total} slots: {total} succeeded, 0 did not, 0 skipped" in done.stdout
    ran = [call.slot for call in receiver.calls(f"{module_namespace}/{name}") if call.slot <= end]
    assert ran == expected  # once each, oldest first
    body = read(cluster, module_namespace, name)
    backfilled = [run for run in recent_runs(body) if run.get("trigger") == "Backfill"]
    assert len(backfilled) == total
    assert status(body)["backfill"]["finished"] is True

    again = backfill(cluster, module_namespace, name, start, end)

    assert again.returncode == 0, again.stderr
    assert f"{total}/{total} slots: 0 succeeded, 0 did not, {total} skipped" in again.stdout
    calls = [call for call in receiver.calls(f"{module_namespace}/{name}") if call.slot <= end]
    assert len(calls) == total


def test_a_window_in_the_future_or_too_large_is_refused_before_anything_runs(
    cluster: LocalCluster, operators: Operators, receiver: Receiver, module_namespace: str
) -> None:
    name = f"eager-{operators.lock_backend}"
    spec = {"every": "1s", "target": http_target(receiver, module_namespace, name)}
    apply(cluster, scheduled_job(module_namespace, name, spec))
    moment = now()

    future = backfill(cluster, module_namespace, name, moment, moment + timedelta(hours=1))
    huge = backfill(cluster, module_namespace, name, moment - timedelta(hours=1), moment)

    assert future.returncode == 2
    assert "in the future" in future.stderr
    assert huge.returncode == 2
    assert "more than 1000 slots" in huge.stderr
    assert "punctual.dev/backfill" not in read(cluster, module_namespace, name)["metadata"].get(
        "annotations", {}
    )


def test_a_hand_written_request_that_is_no_request_is_refused_with_an_event(
    cluster: LocalCluster, operators: Operators, receiver: Receiver, module_namespace: str
) -> None:
    name = f"garbled-{operators.lock_backend}"
    spec = {"every": "1h", "target": http_target(receiver, module_namespace, name)}
    apply(cluster, scheduled_job(module_namespace, name, spec))

    cluster.kubectl(
        "annotate", f"sj/{name}", "-n", module_namespace, "punctual.dev/backfill=yesterday please"
    )

    refused = eventually(
        lambda: events(cluster, module_namespace, name=name, reason="InvalidBackfill"),
        timeout=30,
        what="the InvalidBackfill Event",
    )
    assert "metadata.annotations[punctual.dev/backfill]" in refused[0]["message"]
    assert receiver.calls(f"{module_namespace}/{name}") == []
