"""A Redis outage: redis-server stopped for 30 s, then started again on the same port.

Two operator replicas with the Redis lock schedule three 1-second HTTP jobs. While Redis is
down no slot can be claimed, so none may run (fail closed), and every failed claim shows in
``punctual_lock_claims_total{outcome="error"}``; the jobs' Ready condition says why nothing
runs. Once Redis answers again the jobs run from the next slot on, the slots due meanwhile are
counted missed once (``LockUnavailable``), and no slot ever ran twice.

The scenario runs once (module fixture ``outage``); each test reads one of its consequences.
``PUNCTUAL_REDIS_OUTAGE_SECONDS`` sets the length of the outage (default 30).
"""

import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from failure_harness import (
    ConditionLog,
    duplicates,
    first_slot_after,
    jobs_firing,
    lock_claims,
    metric,
    slots_of,
)
from operator_harness import (
    Call,
    Operators,
    Receiver,
    now,
    report,
    sleep_until,
)

from localcluster import LocalCluster, LocalRedis

pytest_plugins = ["operator_fixtures"]

OUTAGE = float(os.environ.get("PUNCTUAL_REDIS_OUTAGE_SECONDS", "30"))
EVERY = timedelta(seconds=1)
JOBS = ("outage-a", "outage-b", "outage-c")
SETTLE = timedelta(seconds=3)
"""After Redis stops: the time a claim already past Redis takes to reach the receiver."""
AFTER = 12.0
"""Seconds watched after Redis is back."""


@dataclass(frozen=True)
class Outage:
    down_at: datetime
    """redis-server stopped (its process gone)."""
    restarted_at: datetime
    """redis-server started again: it listens from some moment before ``up_at``."""
    up_at: datetime
    """PING answered (the first probe that did)."""
    calls: dict[str, list[Call]]
    errors_before: float
    errors_during: float
    won_before_down: float
    won_at_end_of_outage: float
    missed_before: float
    missed_after: float
    """``punctual_slots_missed_total`` summed over both replicas, before Redis stopped and at
    the end."""
    conditions: ConditionLog


@pytest.fixture(scope="module")
def outage(  # noqa: PLR0917 - fixtures
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    receiver: Receiver,
    own_redis: LocalRedis,
    tmp_path_factory: pytest.TempPathFactory,
) -> Outage:
    namespace = module_namespace
    with jobs_firing(
        cluster,
        tmp_path_factory.mktemp("operators"),
        namespace=namespace,
        redis_url=own_redis.url,
        receiver=receiver,
        names=JOBS,
    ) as operators:
        with ConditionLog(cluster, namespace) as conditions:
            errors_before = lock_claims(operators, outcome="error")
            missed_before = _slots_missed(operators)
            own_redis.stop_server()
            down_at = now()
            # Claims already on their way when Redis stopped may still be counted as won.
            sleep_until(down_at + SETTLE)
            won_before_down = lock_claims(operators, outcome="won")
            sleep_until(down_at + timedelta(seconds=OUTAGE))
            errors_during = lock_claims(operators, outcome="error") - errors_before
            won_at_end = lock_claims(operators, outcome="won")
            restarted_at = now()
            own_redis.start_server()
            up_at = now()
            sleep_until(up_at + timedelta(seconds=AFTER))
            missed_after = _slots_missed(operators)
        operators.stop()
        problems = operators.problems()
    calls = {name: receiver.calls(f"{namespace}/{name}") for name in JOBS}
    report(
        f"Redis outage of {OUTAGE:.0f}s",
        [
            f"lock claim errors during the outage: {errors_during:.0f}",
            f"slots counted missed: {missed_after - missed_before:.0f}",
            *(
                f"{name}: last slot before {_latest_before(calls[name], down_at)}, "
                f"first after {_earliest_after(calls[name], up_at)} (Redis back at {up_at:%T.%f})"
                for name in JOBS
            ),
            f"ERROR lines in operator logs: { {r: len(lines) for r, lines in problems.items()} }",
        ],
    )
    return Outage(
        down_at=down_at,
        restarted_at=restarted_at,
        up_at=up_at,
        calls=calls,
        errors_before=errors_before,
        errors_during=errors_during,
        won_before_down=won_before_down,
        won_at_end_of_outage=won_at_end,
        missed_before=missed_before,
        missed_after=missed_after,
        conditions=conditions,
    )


def _slots_missed(operators: Operators) -> float:
    return sum(
        metric(replica.metrics(), "punctual_slots_missed_total")
        for replica in operators.replicas.values()
        if replica.running()
    )


def _latest_before(calls: list[Call], instant: datetime) -> str:
    before = [slot for slot in slots_of(calls) if slot <= instant]
    return f"{max(before):%T}" if before else "-"


def _earliest_after(calls: list[Call], instant: datetime) -> str:
    after = [slot for slot in slots_of(calls) if slot > instant]
    return f"{min(after):%T}" if after else "-"


class TestWhileRedisIsDown:
    def test_no_slot_runs_without_a_claim(self, outage: Outage) -> None:
        # A run calls its target after its claim was won, so no call of a slot due once Redis
        # had stopped arrives before redis-server was started again. (By slot time alone, the
        # slot just before PING answered may run: its backup's claim, or a late claim, can
        # reach Redis in the quarter of a second the probe sleeps.)
        ran_while_down = {
            name: [
                f"{call.slot:%T}"
                for call in calls
                if call.slot > outage.down_at and call.arrived < outage.restarted_at
            ]
            for name, calls in outage.calls.items()
        }

        assert ran_while_down == {key: [] for key in JOBS}

    def test_the_slots_it_missed_are_not_run_later(self, outage: Outage) -> None:
        # Claims that failed are not made again: only a slot due within a backup delay and a
        # loaded machine's lateness (1 s) before Redis was started again may run.
        missed = (outage.down_at, outage.restarted_at - timedelta(seconds=1))
        ran_later = {
            name: [f"{slot:%T}" for slot in slots_of(calls) if missed[0] < slot < missed[1]]
            for name, calls in outage.calls.items()
        }

        assert ran_later == {key: [] for key in JOBS}

    def test_no_claim_is_won(self, outage: Outage) -> None:
        assert outage.won_at_end_of_outage == outage.won_before_down

    def test_every_failed_claim_is_counted_as_a_lock_error(self, outage: Outage) -> None:
        # Each replica tries each job's every slot: at least one error per job per second,
        # less a few seconds of slack for a loaded machine.
        assert outage.errors_during >= len(JOBS) * (OUTAGE - 5)

    def test_ready_says_lock_backend_unavailable(self, outage: Outage) -> None:
        # From a few seconds in (the first failed claim, then a status write), to the end.
        window = (outage.down_at + timedelta(seconds=5), outage.up_at)
        for name in JOBS:
            seen = outage.conditions.between(*window, job=name)
            assert seen, f"no status read for {name} during the outage"
            assert {(s.status, s.reason) for s in seen} == {("False", "LockBackendUnavailable")}


class TestOnceRedisIsBack:
    def test_every_job_runs_again_within_one_slot(self, outage: Outage) -> None:
        # The first slot after Redis answers may be claimed on a connection the outage broke
        # (one retry on a fresh one); the next one must run whatever happens.
        deadline = first_slot_after(outage.up_at, EVERY) + EVERY
        first_after = {
            name: min((s for s in slots_of(calls) if s > outage.up_at), default=None)
            for name, calls in outage.calls.items()
        }

        assert all(first is not None and first <= deadline for first in first_after.values()), (
            first_after
        )

    def test_then_every_slot_runs(self, outage: Outage) -> None:
        start = first_slot_after(outage.up_at, EVERY) + EVERY
        end = outage.up_at + timedelta(seconds=AFTER - 3)
        missing = {
            name: [
                f"{slot:%T}" for slot in _every_slot(start, end) if slot not in set(slots_of(calls))
            ]
            for name, calls in outage.calls.items()
        }

        assert missing == {key: [] for key in JOBS}

    def test_the_slots_due_meanwhile_are_counted_missed_once(self, outage: Outage) -> None:
        # Each job's slots from Redis stopping to it answering, by both replicas together:
        # a slot counted by each replica would double it. Slack: the slots of the seconds at
        # either end may have been claimed, or fall to the claim Redis answers first.
        down_for = (outage.up_at - outage.down_at).total_seconds()
        counted = outage.missed_after - outage.missed_before

        assert len(JOBS) * (down_for - 4) <= counted <= len(JOBS) * (down_for + 2)

    def test_ready_is_true_again(self, outage: Outage) -> None:
        window = (outage.up_at + timedelta(seconds=5), outage.up_at + timedelta(seconds=AFTER))
        for name in JOBS:
            before = outage.conditions.between(outage.down_at, outage.up_at, job=name)
            assert ("False", "LockBackendUnavailable") in {(s.status, s.reason) for s in before}
            seen = outage.conditions.between(*window, job=name)
            assert seen
            assert {(s.status, s.reason) for s in seen} == {("True", "Scheduled")}


def test_no_slot_ever_runs_twice(outage: Outage) -> None:
    assert {name: duplicates(calls) for name, calls in outage.calls.items()} == {
        key: {} for key in JOBS
    }


def _every_slot(start: datetime, end: datetime) -> list[datetime]:
    slots = []
    slot = start
    while slot <= end:
        slots.append(slot)
        slot += EVERY
    return slots
