"""Pause on failure: a ScheduledJob with ``spec.suspendAfterFailures: N`` suspends itself after
N failed runs in a row (``spec.suspend`` set by the operator, the Suspended condition's reason
SuspendedAfterFailures, one Warning Event), and setting ``suspend: false`` resumes it with its
count of failures back at 0.

Two operator replicas (the kubernetes slot lock) watch the module's namespace: the slots are
run by either, and the suspension is written, and its Event posted, exactly once.
"""

from typing import Any

from operator_harness import (
    Operators,
    Receiver,
    apply,
    condition,
    events,
    eventually,
    http_target,
    patch_spec,
    read,
    scheduled_job,
    status,
)

from localcluster import LocalCluster

pytest_plugins = ["operator_fixtures", "replica_pairs"]


def start_failing(
    cluster: LocalCluster, receiver: Receiver, namespace: str, name: str, *, after: int
) -> str:
    """Apply job ``name``, every second, ``suspendAfterFailures: after``, on a target that
    answers 500: the target's path."""
    path = f"/{namespace}/{name}"
    receiver.answer(path, 500)
    spec = {
        "every": "1s",
        "suspendAfterFailures": after,
        "target": http_target(receiver, namespace, name),
    }
    apply(cluster, scheduled_job(namespace, name, spec))
    return path


def suspended_reason(body: dict[str, Any]) -> str | None:
    found = condition(body, "Suspended")
    return found["reason"] if found and found["status"] == "True" else None


def test_a_job_failing_n_times_in_a_row_suspends_itself_once_and_resumes_with_its_count_reset(
    cluster: LocalCluster, two_replicas: Operators, receiver: Receiver, module_namespace: str
) -> None:
    name = "flaky"
    path = start_failing(cluster, receiver, module_namespace, name, after=3)

    def paused() -> dict[str, Any] | None:
        body = read(cluster, module_namespace, name)
        return body if suspended_reason(body) == "SuspendedAfterFailures" else None

    body = eventually(paused, timeout=60, what="the job suspended after its failures")
    assert body["spec"]["suspend"] is True
    assert status(body)["consecutiveFailures"] >= 3
    assert "3 failed runs in a row" in (condition(body, "Suspended") or {})["message"]
    calls = len(receiver.calls(f"{module_namespace}/{name}"))
    assert calls >= 3
    warned = eventually(
        lambda: events(cluster, module_namespace, name=name, reason="SuspendedAfterFailures"),
        timeout=30,
        what="the SuspendedAfterFailures Event",
    )
    assert [event["type"] for event in warned] == ["Warning"]
    assert warned[0].get("count", 1) == 1

    receiver.answer(path, 204)
    patch_spec(cluster, module_namespace, name, {"suspend": False})

    def resumed() -> dict[str, Any] | None:
        body = read(cluster, module_namespace, name)
        runs = status(body).get("lastRun") or {}
        ok = runs.get("result") == "Succeeded" and status(body).get("consecutiveFailures") == 0
        return body if ok and suspended_reason(body) is None else None

    body = eventually(resumed, timeout=60, what="the resumed job succeeding, its count at 0")
    assert body["spec"]["suspend"] is False
    assert len(receiver.calls(f"{module_namespace}/{name}")) > calls
    assert len(events(cluster, module_namespace, name=name, reason="SuspendedAfterFailures")) == 1
    assert two_replicas.problems() == {}, f"see {two_replicas.logs()}"


def test_a_success_between_failures_starts_the_count_again(
    cluster: LocalCluster, two_replicas: Operators, receiver: Receiver, module_namespace: str
) -> None:
    name = "patient"
    path = start_failing(cluster, receiver, module_namespace, name, after=1000)
    eventually(
        lambda: (
            (status(read(cluster, module_namespace, name)).get("consecutiveFailures") or 0) >= 2
        ),
        timeout=60,
        what="two failures in a row counted",
    )

    receiver.answer(path, 204)

    eventually(
        lambda: status(read(cluster, module_namespace, name)).get("consecutiveFailures") == 0,
        timeout=60,
        what="the count back at 0 after a success",
    )
    assert read(cluster, module_namespace, name)["spec"].get("suspend") is not True
