"""Schedules as people write them, on the real control plane: several named schedules that share
one job's history, and a one-off run (``startsAt`` and no schedule) that runs exactly once even
when the replica running it is SIGKILLed.

The receiver's record of calls is the ground truth: a slot "ran" when its Idempotency-Key
arrived.
"""

from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from operator_harness import (
    Operators,
    Receiver,
    apply,
    condition,
    eventually,
    http_target,
    millis,
    new_namespace,
    now,
    parse_time,
    read,
    recent_runs,
    report,
    scheduled_job,
    sleep_until,
)

from localcluster import LocalCluster

pytest_plugins = ["operator_fixtures", "replica_pairs"]

SECOND = timedelta(seconds=1)


class KilledCallersReceiver(Receiver):
    """A receiver whose callers may be SIGKILLed: their pooled connections reset quietly."""

    quiet_errors = True


@pytest.fixture
def killed_callers_receiver() -> Iterator[Receiver]:
    with KilledCallersReceiver() as started:
        yield started


def fired_by(slot: datetime) -> tuple[str, ...]:
    """The entries of ``every-2s`` and ``every-3s`` (cron seconds) whose grid holds ``slot``."""
    second = slot.second
    return tuple(
        name
        for name, period in (("every-2s", 2), ("every-3s", 3))
        if second % period == 0 and slot.microsecond == 0
    )


def test_several_schedules_share_one_history_with_one_run_per_instant(
    cluster: LocalCluster, two_replicas: Operators, receiver: Receiver, module_namespace: str
) -> None:
    """Seconds divisible by 2 or 3 fire; those divisible by 6 are fired by both entries and
    still run once, recorded once, naming both."""
    name = "two-grids"
    job = f"{module_namespace}/{name}"
    spec = {
        "schedules": [
            {"name": "every-2s", "schedule": "*/2 * * * * *"},
            {"name": "every-3s", "schedule": "*/3 * * * * *"},
        ],
        "history": {"succeeded": 20, "failed": 5},
        "target": http_target(receiver, module_namespace, name),
    }
    apply(cluster, scheduled_job(module_namespace, name, spec))

    def two_coinciding_instants() -> bool:
        return sum(call.slot.second % 6 == 0 for call in receiver.calls(job)) >= 2

    eventually(two_coinciding_instants, timeout=40, what=f"two slots of {job} on both grids")
    calls = receiver.calls(job)
    first, last = min(call.slot for call in calls), max(call.slot for call in calls)
    expected = [
        first + offset * SECOND
        for offset in range(int((last - first) / SECOND) + 1)
        if fired_by(first + offset * SECOND)
    ]

    def recorded() -> list[dict[str, Any]] | None:
        runs = [
            run
            for run in recent_runs(read(cluster, module_namespace, name))
            if first <= parse_time(run["slot"]) <= last
        ]
        return runs if len(runs) >= len(expected) else None

    runs = eventually(recorded, timeout=20, what="a record of every slot seen")
    per_slot = Counter(call.slot for call in calls)
    report(
        "several schedules, one history",
        [
            f"{slot:%T} x{count} fired by {fired_by(slot)}"
            for slot, count in sorted(per_slot.items())
        ],
    )
    assert sorted(per_slot) == expected
    assert set(per_slot.values()) == {1}
    assert len({call.idempotency_key for call in calls}) == len(calls)
    assert sorted(parse_time(run["slot"]) for run in runs) == expected
    for run in runs:
        assert tuple(run["schedules"]) == fired_by(parse_time(run["slot"])), run
    assert two_replicas.problems() == {}, f"see {two_replicas.logs()}"


def test_a_one_off_runs_exactly_once_through_a_sigkill_of_the_replica_that_ran_it(
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    killed_callers_receiver: Receiver,
    tmp_path: Path,
) -> None:
    """The only replica is SIGKILLed as the one-off's call arrives, before it can write the
    run's end, and started again: the instant, long past by then, is not run a second time,
    and the job ends."""
    receiver = killed_callers_receiver
    with (
        new_namespace(cluster, "one-off-kill") as namespace,
        Operators(cluster, tmp_path, namespace=namespace) as operators,
    ):
        name = "once"
        job = f"{namespace}/{name}"
        starts_at = (now() + 5 * SECOND).replace(microsecond=0)
        spec = {
            "startsAt": starts_at.isoformat(),
            "target": http_target(receiver, namespace, name),
        }
        apply(cluster, scheduled_job(namespace, name, spec))

        eventually(
            lambda: receiver.calls(job), timeout=30, what=f"the call of {job}", interval=0.01
        )
        operators["r1"].kill()
        killed = now()
        operators.start("r1")

        def ended() -> dict[str, Any] | None:
            ready = condition(read(cluster, namespace, name), "Ready")
            return ready if ready is not None and ready["reason"] == "Ended" else None

        ready = eventually(ended, timeout=60, what=f"{job} Ready with reason Ended")
        # The restarted replica has planned the job (it ended): a second run would come now.
        sleep_until(now() + 3 * SECOND)
        calls = receiver.calls(job)
        runs = recent_runs(read(cluster, namespace, name))
        report(
            "a one-off through a SIGKILL",
            [
                f"killed {millis(killed) - millis(starts_at)} ms after its instant",
                *(f"call of {call.slot:%T} arrived {call.arrived:%T.%f}" for call in calls),
                *(f"recorded {run['slot']} {run['result']}" for run in runs),
            ],
        )
        assert [call.slot for call in calls] == [starts_at]
        assert ready["status"] == "True"
        assert operators.problems() == {}, f"see {operators.logs()}"
