"""Durable runs: a replica SIGKILLed in the middle of a run. Its run is recorded ``Lost`` by
the surviving replica within a bounded time and, with ``spec.retryLostRuns: true``, run once
more under the same Idempotency-Key.

The target holds every request for ``HOLD`` seconds, so the run is in flight when the replica
that claimed it (the holder of its Redis lock key) is killed. The bound: the lease expires 15 s
after the last heartbeat (every 5 s), the survivor scans every 5 s, and the status is written
within its 1 s interval; ``DETECTION`` leaves room for a loaded machine on top.
"""

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from failure_harness import HeaderRecorder
from operator_harness import (
    Operators,
    apply,
    counts,
    eventually,
    from_millis,
    now,
    parse_time,
    read,
    recent_runs,
    report,
    scheduled_job,
)

from localcluster import LocalCluster, LocalRedis

pytest_plugins = ["operator_fixtures"]

HOLD = 12.0
"""Seconds the target takes to answer: the run is in flight all that time."""
DETECTION = 45.0
"""Seconds from the kill to the Lost record in status: the 20 s bound, plus a loaded machine."""
LEAD = timedelta(seconds=8)
"""From creating the job to its first slot: kubectl and the replicas arming it take a few
seconds on a loaded machine; a slot missed by them would cost a whole minute."""


@dataclass(frozen=True)
class Loss:
    killed: str
    slot_id: str
    killed_at: float
    body: dict[str, Any]
    keys: list[str]


@pytest.fixture
def target() -> Iterator[HeaderRecorder]:
    with HeaderRecorder() as started:
        started.delays["/slow"] = HOLD
        yield started


def kill_mid_run(
    cluster: LocalCluster,
    redis_server: LocalRedis,
    namespace: str,
    target: HeaderRecorder,
    run_dir: Path,
    *,
    retry: bool,
) -> Loss:
    """Start a once-a-minute job whose run takes HOLD s, SIGKILL the replica running its first
    slot, and wait until status records a lost run (or ``DETECTION`` passes). The job is created
    to fire at the second of the minute ``LEAD`` after its replicas are ready, so its first slot
    comes without waiting for the minute to turn, and the next one only after the scenario."""
    name = "retried" if retry else "not-retried"
    spec: dict[str, Any] = {
        "timeout": "1m",
        "concurrencyPolicy": "Allow",
        "target": {"http": {"url": target.url("/slow")}},
    }
    if retry:
        spec["retryLostRuns"] = True
    with Operators(
        cluster,
        run_dir,
        namespace=namespace,
        replicas=2,
        lock_backend="redis",
        redis_url=redis_server.url,
    ) as operators:
        spec["schedule"] = f"{(now() + LEAD).second} * * * * *"
        apply(cluster, scheduled_job(namespace, name, spec))
        first = eventually(lambda: target.keys("/slow"), timeout=90, what="the first run")[0]
        client = redis.Redis.from_url(redis_server.url)
        try:
            holder = (client.get(f"punctual:slot:{first}") or b"?:").decode()
        finally:
            client.close()
        killed = holder.split(":")[0]
        operators[killed].kill()
        killed_at = time.monotonic()

        def lost() -> dict[str, Any] | None:
            body = read(cluster, namespace, name)
            return body if counts(body)["lost"] else None

        def retried() -> dict[str, Any] | None:
            body = read(cluster, namespace, name)
            ran = {run["result"] for run in slot_records(body, first)}
            return body if "Succeeded" in ran else None

        try:
            body = eventually(lost, timeout=DETECTION, what="a Lost run in status")
            detected_after = time.monotonic() - killed_at
            if retry:  # the retry's answer (after HOLD) and its record
                body = eventually(retried, timeout=HOLD + 30, what="the retry's record")
        finally:
            operators.stop()
    report(
        f"durable runs ({'retryLostRuns' if retry else 'no retry'})",
        [
            f"killed {killed} at {now():%T} with {first} in flight",
            f"Lost in status {detected_after:.0f}s after the kill (status read every 0.2 s)",
            f"counts {dict(counts(body))}; Idempotency-Keys at the target: {target.keys('/slow')}",
        ],
    )
    return Loss(killed, first, killed_at, body, target.keys("/slow"))


def slot_records(body: dict[str, Any], slot_id: str) -> list[dict[str, Any]]:
    """The status records of the slot whose id is ``slot_id`` (``.../<unix-ms>``)."""
    slot = from_millis(int(slot_id.rsplit("/", 1)[1]))
    return [run for run in recent_runs(body) if parse_time(run["slot"]) == slot]


def test_a_run_whose_replica_died_is_recorded_lost_and_not_run_again(  # noqa: PLR0917
    cluster: LocalCluster,
    redis_server: LocalRedis,
    scheduled_job_crd: list[Path],
    namespace: str,
    target: HeaderRecorder,
    tmp_path: Path,
) -> None:
    loss = kill_mid_run(cluster, redis_server, namespace, target, tmp_path, retry=False)

    assert counts(loss.body)["lost"] == 1
    lost = [run for run in slot_records(loss.body, loss.slot_id) if run["result"] == "Lost"]
    assert [run["replica"] for run in lost] == [loss.killed]
    assert loss.keys.count(loss.slot_id) == 1
    assert all(run.get("replica") != loss.killed for run in loss.body["status"].get("active", []))


def test_with_retry_lost_runs_the_slot_runs_once_more_under_the_same_key(  # noqa: PLR0917
    cluster: LocalCluster,
    redis_server: LocalRedis,
    scheduled_job_crd: list[Path],
    namespace: str,
    target: HeaderRecorder,
    tmp_path: Path,
) -> None:
    loss = kill_mid_run(cluster, redis_server, namespace, target, tmp_path, retry=True)

    assert counts(loss.body)["lost"] == 1
    assert loss.keys.count(loss.slot_id) == 2  # the first attempt, and its one retry
    results = {run["result"] for run in slot_records(loss.body, loss.slot_id)}
    assert results == {"Lost", "Succeeded"}
    assert len(loss.keys) == len(set(loss.keys)) + 1  # no other slot ran twice
