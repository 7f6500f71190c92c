"""A Redis that forgets, plus a replica restarted: no slot runs twice.

One replica (redis lock, status written every 5 s, the default) runs a ``CatchUp`` job every
second. It is SIGKILLed about 3 s after a status write, so ``lastScheduleTime`` lags the slots
it ran; redis-server is restarted empty; the replica is started again and resumes from that
stale mark. The slots due before the new server started may have run (they did: the killed
replica ran them), and the server cannot prove otherwise: they are counted missed, reason
``LockForgot``, never run again. The slots due since it started run, once.

The scenario runs once (module fixture ``forgotten``); each test reads one of its consequences.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from failure_harness import duplicates, slots_of
from operator_harness import (
    Call,
    Operators,
    Receiver,
    apply,
    counts,
    events,
    eventually,
    every_slots,
    http_target,
    last_schedule_time,
    now,
    read,
    recent_runs,
    report,
    scheduled_job,
    sleep_until,
)

from localcluster import LocalCluster, LocalRedis

pytest_plugins = ["operator_fixtures"]

NAME = "forgotten"
EVERY = timedelta(seconds=1)
LAG = timedelta(seconds=3)
"""How long after a status write the replica is killed: the slots ``lastScheduleTime`` lags."""
AFTER = timedelta(seconds=8)
"""Watched after the replica is back."""


@dataclass(frozen=True)
class Forgotten:
    high_water: datetime
    """``lastScheduleTime`` as the killed replica left it."""
    killed_at: datetime
    redis_stopped_at: datetime
    redis_up_at: datetime
    """The new redis-server answered PING: it started at some moment before."""
    replica_back_at: datetime
    calls: list[Call]
    body: dict[str, Any]
    forgot_events: list[dict[str, Any]]


@pytest.fixture(scope="module")
def forgotten(  # noqa: PLR0917 - fixtures
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    receiver: Receiver,
    own_redis: LocalRedis,
    tmp_path_factory: pytest.TempPathFactory,
) -> Forgotten:
    namespace, job = module_namespace, f"{module_namespace}/{NAME}"
    with Operators(
        cluster,
        tmp_path_factory.mktemp("operators"),
        namespace=namespace,
        lock_backend="redis",
        redis_url=own_redis.url,
        status_interval="5s",
    ) as operators:
        spec = {
            "every": "1s",
            "missedRuns": {"policy": "CatchUp", "maxCatchUp": 100},
            "target": http_target(receiver, namespace, NAME),
        }
        apply(cluster, scheduled_job(namespace, NAME, spec))
        eventually(lambda: len(receiver.calls(job)) >= 3, timeout=60, what="the first runs")
        # Right after a status write, so that the mark lags by about LAG when the replica dies.
        first_mark = eventually(
            lambda: last_schedule_time(read(cluster, namespace, NAME)),
            timeout=30,
            what="a lastScheduleTime",
        )
        eventually(
            lambda: last_schedule_time(read(cluster, namespace, NAME)) != first_mark,
            timeout=30,
            what="the next status write",
        )
        sleep_until(now() + LAG)
        operators["r1"].kill()
        killed_at = now()
        high_water = last_schedule_time(read(cluster, namespace, NAME))
        assert high_water is not None
        redis_stopped_at = now()
        own_redis.stop_server()
        own_redis.start_server()
        redis_up_at = now()
        operators.start("r1")
        replica_back_at = now()
        sleep_until(replica_back_at + AFTER)
        body = eventually(
            lambda: (found := read(cluster, namespace, NAME)) and counts(found)["missed"] and found,
            timeout=30,
            what="missed slots in status",
        )
        forgot_events = eventually(
            lambda: events(cluster, namespace, name=NAME, reason="LockForgot"),
            timeout=30,
            what="a LockForgot Event",
        )
        operators.stop()
    calls = receiver.calls(job)
    report(
        "Redis restarted empty, replica restarted",
        [
            f"lastScheduleTime {high_water:%T.%f}, killed {killed_at:%T.%f}, "
            f"Redis stopped {redis_stopped_at:%T.%f}, up {redis_up_at:%T.%f}, "
            f"replica back {replica_back_at:%T.%f}",
            f"counts {dict(counts(body))}, duplicates {duplicates(calls)}",
        ],
    )
    return Forgotten(
        high_water=high_water,
        killed_at=killed_at,
        redis_stopped_at=redis_stopped_at,
        redis_up_at=redis_up_at,
        replica_back_at=replica_back_at,
        calls=calls,
        body=body,
        forgot_events=forgot_events,
    )


def test_no_slot_runs_twice(forgotten: Forgotten) -> None:
    assert duplicates(forgotten.calls) == {}


def test_the_slots_the_mark_lagged_were_run_before_the_kill(forgotten: Forgotten) -> None:
    # The scenario's premise: without the rule, these are the slots that ran twice.
    ran = set(slots_of(forgotten.calls))
    lagged = every_slots(forgotten.high_water, forgotten.killed_at - EVERY, EVERY)

    assert len(lagged) >= 2
    assert set(lagged) <= ran


def test_the_slots_due_before_the_new_server_are_counted_missed_as_forgotten(
    forgotten: Forgotten,
) -> None:
    # Every slot after the mark and before the server stopped was due before the new one
    # started: each is counted once, the ones the killed replica ran among them. Slots due
    # until a second after the server answered (its start, taken as the latest it may be) may
    # be counted too.
    surely = every_slots(forgotten.high_water, forgotten.redis_stopped_at, EVERY)
    at_most = every_slots(forgotten.high_water, forgotten.redis_up_at + EVERY, EVERY)

    assert len(surely) <= counts(forgotten.body)["missed"] <= len(at_most)
    missed = [run for run in recent_runs(forgotten.body) if run["result"] == "Missed"]
    assert missed
    assert all("LockForgot" in run["message"] for run in missed)
    assert forgotten.forgot_events


def test_the_slots_due_since_run_once_each(forgotten: Forgotten) -> None:
    # From a second after the server answered to the end of the watch.
    start = forgotten.redis_up_at + EVERY
    due = every_slots(start, forgotten.replica_back_at + AFTER - 2 * EVERY, EVERY)
    ran = set(slots_of(forgotten.calls))

    assert [f"{slot:%T}" for slot in due if slot not in ran] == []
