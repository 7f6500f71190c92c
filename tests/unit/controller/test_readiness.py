"""The Ready condition of a job being scheduled says the first thing in the way of its runs: its
loop stopped by itself, then a lock backend that does not answer, then a destination its runs
found unusable; with none, Scheduled and where the work goes."""

import pytest

from punctual.controller import readiness
from punctual.targets import problems

CLUSTER = problems.Problem("BrokerIsCluster", "broker redis://b is a Redis Cluster node")
LOCK = "redis://lock:6379/0: connection refused"
NO_SLOTS = ("NoFutureSlots", "the schedule has no slot after 2026-12-01T00:00:00Z")


@pytest.mark.parametrize(
    ("stopped", "lock", "problem", "expected"),
    [
        (None, None, None, (True, "Scheduled", "scheduling slots; to the stream s")),
        (None, None, CLUSTER, (False, "BrokerIsCluster", CLUSTER.message)),
        (None, LOCK, CLUSTER, (False, "LockBackendUnavailable", LOCK)),
        (NO_SLOTS, LOCK, CLUSTER, (False, *NO_SLOTS)),
        (("Ended", "the active window ended"), None, CLUSTER,
         (True, "Ended", "the active window ended")),
    ],
    ids=["nothing in the way", "a cluster broker", "the lock first", "stopped first", "ended"],
)  # fmt: skip
def test_ready_says_the_first_thing_in_the_way(
    stopped: tuple[str, str] | None,
    lock: str | None,
    problem: problems.Problem | None,
    expected: tuple[bool, str, str],
) -> None:
    verdict = readiness.ready(
        stopped=stopped, lock_unavailable=lock, problem=problem, destination="to the stream s"
    )
    assert (verdict.ok, verdict.reason, verdict.message) == expected


def test_without_a_destination_ready_says_only_that_it_schedules() -> None:
    verdict = readiness.ready(stopped=None, lock_unavailable=None, problem=None, destination="")
    assert verdict.message == "scheduling slots"
