"""Health you can wait on: a ScheduledJob's ``LastRunSucceeded`` condition says whether its last
run worked, so that ``kubectl wait --for=condition=LastRunSucceeded`` answers it, and
``kubectl get sj`` shows the last result beside Ready (which keeps meaning "valid and armed").

One operator replica (the kubernetes slot lock, the default: the condition rides on its claims)
watches the module's namespace; the receiver answers each job's path as the test chooses.
"""

from collections.abc import Iterator
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
    read,
    scheduled_job,
    status,
)

from localcluster import LocalCluster

pytest_plugins = ["operator_fixtures"]

WAIT = "30s"
"""What each ``kubectl wait`` allows: a job every 2 s, its status written every second."""


@pytest.fixture(scope="module")
def operators(
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Operators]:
    with Operators(
        cluster, tmp_path_factory.mktemp("operators"), namespace=module_namespace
    ) as started:
        yield started


def start(
    cluster: LocalCluster,
    receiver: Receiver,
    namespace: str,
    name: str,
    *,
    answer: int,
    when: dict[str, str] | None = None,
) -> None:
    """Apply job ``name`` on the receiver, ``when`` its schedule (default every 2 s), whose
    target answers ``answer``."""
    receiver.answer(f"/{namespace}/{name}", answer)
    spec = {**(when or {"every": "2s"}), "target": http_target(receiver, namespace, name)}
    apply(cluster, scheduled_job(namespace, name, spec))


def kubectl_wait(cluster: LocalCluster, namespace: str, name: str, *, status: str) -> int:
    """``kubectl wait --for=condition=LastRunSucceeded=<status>``: its exit code."""
    waited = cluster.kubectl(
        "wait", f"--for=condition=LastRunSucceeded={status}", f"sj/{name}",
        "-n", namespace, f"--timeout={WAIT}",
        timeout=60, check=False,
    )  # fmt: skip
    assert waited.returncode == 0, waited.stderr
    return waited.returncode


def health(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    found = condition(read(cluster, namespace, name), "LastRunSucceeded")
    assert found is not None
    return found


def test_a_job_whose_target_fails_goes_false_with_the_reason_and_stays_ready(
    cluster: LocalCluster, operators: Operators, receiver: Receiver, module_namespace: str
) -> None:
    start(cluster, receiver, module_namespace, "failing", answer=500)

    assert kubectl_wait(cluster, module_namespace, "failing", status="False") == 0

    found = health(cluster, module_namespace, "failing")
    assert (found["status"], found["reason"]) == ("False", "Failed")
    assert found["message"].startswith("HTTP 500")
    assert found["observedGeneration"] == 1
    body = read(cluster, module_namespace, "failing")
    assert status(body)["lastRun"]["result"] == "Failed"
    assert (condition(body, "Ready") or {}).get("status") == "True"  # still valid and armed
    table = cluster.kubectl("get", "sj", "failing", "-n", module_namespace).stdout.splitlines()
    header, row = table
    assert row[header.index("LAST RESULT") :].split()[0] == "Failed"


def test_a_job_whose_target_succeeds_goes_true(
    cluster: LocalCluster, operators: Operators, receiver: Receiver, module_namespace: str
) -> None:
    start(cluster, receiver, module_namespace, "healthy", answer=204)

    assert kubectl_wait(cluster, module_namespace, "healthy", status="True") == 0

    found = health(cluster, module_namespace, "healthy")
    assert (found["status"], found["reason"]) == ("True", "Succeeded")
    assert found["message"].startswith("HTTP 204")


def test_a_failing_job_whose_target_recovers_turns_true_at_a_new_transition_time(
    cluster: LocalCluster, operators: Operators, receiver: Receiver, module_namespace: str
) -> None:
    start(cluster, receiver, module_namespace, "recovering", answer=503)
    kubectl_wait(cluster, module_namespace, "recovering", status="False")
    failed_since = health(cluster, module_namespace, "recovering")["lastTransitionTime"]

    receiver.answer(f"/{module_namespace}/recovering", 204)

    assert kubectl_wait(cluster, module_namespace, "recovering", status="True") == 0
    found = health(cluster, module_namespace, "recovering")
    assert found["reason"] == "Succeeded"
    assert found["lastTransitionTime"] > failed_since  # RFC 3339 in UTC sorts as text


def test_a_job_that_has_not_run_yet_says_unknown(
    cluster: LocalCluster, operators: Operators, receiver: Receiver, module_namespace: str
) -> None:
    yearly = {"schedule": "0 0 1 1 *"}
    start(cluster, receiver, module_namespace, "yearly", answer=204, when=yearly)

    def stated() -> dict[str, Any] | None:
        return condition(read(cluster, module_namespace, "yearly"), "LastRunSucceeded")

    found = eventually(stated, timeout=30, what="LastRunSucceeded on a job that never ran")
    assert (found["status"], found["reason"]) == ("Unknown", "NoRunYet")
    assert operators.problems() == {}, f"see {operators.logs()}"  # failing targets are no errors
