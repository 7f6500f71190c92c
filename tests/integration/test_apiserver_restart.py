"""An API-server restart: kube-apiserver stopped for 20 s and started again (same port, flags and
etcd), under two operator replicas with the Redis lock.

HTTP runs need only Redis and the target, so the jobs keep firing while the API server is gone;
status writes wait and catch up once it is back; the replicas reconnect their watch (a job
created afterwards is scheduled); no slot runs twice.

The scenario runs once (module fixture ``restart``); each test reads one of its consequences.
``PUNCTUAL_APISERVER_DOWN_SECONDS`` sets how long the API server stays down (default 20).
"""

import os
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from failure_harness import duplicates, first_slot_after, gaps, jobs_firing, slots_of
from operator_harness import (
    Call,
    Receiver,
    apply,
    counts,
    eventually,
    http_target,
    last_schedule_time,
    now,
    read_all,
    report,
    scheduled_job,
)

from localcluster import LocalCluster, LocalRedis

pytest_plugins = ["operator_fixtures"]

DOWN = float(os.environ.get("PUNCTUAL_APISERVER_DOWN_SECONDS", "20"))
EVERY = timedelta(seconds=1)
JOBS = ("steady-a", "steady-b")
LATE_JOB = "created-after"
CATCH_UP = 30.0
"""Seconds the status gets to catch up once the API server is back (writes retry every tick)."""
MARGIN = timedelta(seconds=2)
"""Slots this close to the stop or the start are left out of "every slot ran": the stop takes
a moment, and a replica busy reconnecting may run one a little late (still the same slot)."""


@dataclass(frozen=True)
class Restart:
    down_at: datetime
    up_at: datetime
    calls: dict[str, list[Call]]
    late_job_calls: list[Call]
    bodies_after: dict[str, dict[str, Any]]
    received_before_up: dict[str, int]


@pytest.fixture(scope="module")
def restart(  # noqa: PLR0917 - fixtures
    cluster: LocalCluster,
    redis_server: LocalRedis,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    receiver: Receiver,
    tmp_path_factory: pytest.TempPathFactory,
) -> Restart:
    namespace = module_namespace
    with jobs_firing(
        cluster,
        tmp_path_factory.mktemp("operators"),
        namespace=namespace,
        redis_url=redis_server.url,
        receiver=receiver,
        names=JOBS,
    ) as operators:
        cluster.stop_apiserver()
        down_at = now()
        time.sleep(DOWN)
        received_before_up = {
            name: len({c.slot for c in receiver.calls(f"{namespace}/{name}")}) for name in JOBS
        }
        cluster.start_apiserver()
        up_at = now()
        # A watch that reconnected sees a job created now; one that did not never runs it.
        apply(
            cluster,
            scheduled_job(
                namespace,
                LATE_JOB,
                {"every": "1s", "target": http_target(receiver, namespace, LATE_JOB)},
            ),
        )
        late = f"{namespace}/{LATE_JOB}"
        eventually(lambda: receiver.calls(late), timeout=CATCH_UP, what=f"a call of {late}")

        def caught_up() -> dict[str, dict[str, Any]] | None:
            bodies = read_all(cluster, namespace)
            done = all(
                counts(bodies[name])["succeeded"] >= received_before_up[name] for name in JOBS
            )
            return bodies if done else None

        bodies_after = eventually(caught_up, timeout=CATCH_UP, what="status caught up")
        operators.stop()
        problems = operators.problems()
    calls = {name: receiver.calls(f"{namespace}/{name}") for name in JOBS}
    report(
        f"API server down for {DOWN:.0f}s",
        [
            *(
                f"{name}: {sum(down_at < s < up_at for s in slots_of(calls[name]))} runs while "
                f"it was down; succeeded in status {counts(bodies_after[name])['succeeded']} "
                f"for {received_before_up[name]} calls before it came back"
                for name in JOBS
            ),
            f"ERROR lines in operator logs: { {r: len(lines) for r, lines in problems.items()} }",
        ],
    )
    return Restart(
        down_at=down_at,
        up_at=up_at,
        calls=calls,
        late_job_calls=receiver.calls(late),
        bodies_after=bodies_after,
        received_before_up=received_before_up,
    )


class TestWhileTheApiServerIsDown:
    def test_every_slot_still_runs(self, restart: Restart) -> None:
        missing = {
            name: [
                f"{slot:%T}"
                for slot in gaps(
                    slots_of(calls),
                    start=first_slot_after(restart.down_at + MARGIN, EVERY),
                    end=restart.up_at - MARGIN,
                    every=EVERY,
                )
            ]
            for name, calls in restart.calls.items()
        }

        assert missing == {name: [] for name in JOBS}


class TestOnceTheApiServerIsBack:
    def test_the_replicas_see_a_job_created_afterwards(self, restart: Restart) -> None:
        assert restart.late_job_calls

    def test_status_counts_every_run_made_while_it_was_down(self, restart: Restart) -> None:
        succeeded = {name: counts(restart.bodies_after[name])["succeeded"] for name in JOBS}

        assert all(succeeded[name] >= restart.received_before_up[name] for name in JOBS)

    def test_last_schedule_time_moves_past_the_outage(self, restart: Restart) -> None:
        for name in JOBS:
            last = last_schedule_time(restart.bodies_after[name])
            assert last is not None
            assert last >= restart.up_at - EVERY

    def test_every_slot_runs_after_it(self, restart: Restart) -> None:
        end = max(slot for calls in restart.calls.values() for slot in slots_of(calls)) - MARGIN
        missing = {
            name: gaps(slots_of(calls), start=restart.up_at + MARGIN, end=end, every=EVERY)
            for name, calls in restart.calls.items()
        }

        assert missing == {name: [] for name in JOBS}


def test_no_slot_ever_runs_twice(restart: Restart) -> None:
    found = {name: duplicates(calls) for name, calls in restart.calls.items()}
    found[LATE_JOB] = duplicates(restart.late_job_calls)

    assert found == {name: {} for name in (*JOBS, LATE_JOB)}
