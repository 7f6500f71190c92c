"""Run now: ``kubectl annotate sj/NAME punctual.dev/run-now=<token>`` runs the job once more,
now, once per new token across replicas, keyed by the token (its Idempotency-Key carries it), and
``punctual trigger NAME`` does that with a fresh token and waits for the run's result.

Two operator replicas watch the module's namespace, with each lock backend: the claim keyed by
the token lets exactly one of them run it, and a token already taken runs nothing again, not even
after every replica restarted.
"""

import json
import subprocess
import time
from typing import Any

from failure_harness import metric
from operator_harness import (
    Operators,
    Receiver,
    apply,
    events,
    eventually,
    http_target,
    punctual,
    read,
    read_all,
    recent_runs,
    scheduled_job,
    status,
)

from localcluster import LocalCluster

pytest_plugins = ["operator_fixtures", "replica_pairs"]

YEARLY = "0 0 1 1 *"
"""A schedule that does not fire while the test runs: every call is one asked for."""
RUN_ARRIVES_WITHIN = 2.0
"""Seconds from a replica arming a job to the call of a run it claimed as it read the job."""


def start(
    cluster: LocalCluster, receiver: Receiver, namespace: str, name: str, *, answer: int = 204
) -> None:
    receiver.answer(f"/{namespace}/{name}", answer)
    spec = {"schedule": YEARLY, "target": http_target(receiver, namespace, name)}
    apply(cluster, scheduled_job(namespace, name, spec))
    eventually(
        lambda: status(read(cluster, namespace, name)).get("nextRunTime"),
        timeout=30,
        what=f"{name} scheduled",
    )


def trigger(cluster: LocalCluster, namespace: str, name: str) -> "subprocess.CompletedProcess[str]":
    return punctual(cluster, "trigger", name, "-n", namespace, "--timeout", "60s")


def annotate(cluster: LocalCluster, namespace: str, name: str, token: str) -> None:
    cluster.kubectl(
        "annotate", "--overwrite", f"sj/{name}", "-n", namespace, f"punctual.dev/run-now={token}"
    )


def calls_of(receiver: Receiver, namespace: str, name: str) -> list[str]:
    return [call.idempotency_key for call in receiver.calls(f"{namespace}/{name}")]


def test_trigger_runs_the_job_once_now_and_exits_0_when_it_succeeded(
    cluster: LocalCluster, operators: Operators, receiver: Receiver, module_namespace: str
) -> None:
    name = f"now-{operators.lock_backend}"
    start(cluster, receiver, module_namespace, name)

    done = trigger(cluster, module_namespace, name)

    assert done.returncode == 0, done.stderr
    assert "Succeeded" in done.stdout
    body = read(cluster, module_namespace, name)
    token = body["metadata"]["annotations"]["punctual.dev/run-now"]
    uid = body["metadata"]["uid"]
    assert calls_of(receiver, module_namespace, name) == [
        f"{module_namespace}/{name}/{uid}/run-now-{token}"
    ]
    last: dict[str, Any] = status(body)["lastRun"]
    assert (last["result"], last["trigger"], last["runNowToken"]) == ("Succeeded", "Manual", token)
    assert status(body)["lastRunNowToken"] == token
    assert "lastScheduleTime" not in status(body)  # no slot of the schedule was claimed


def test_trigger_exits_1_with_the_message_when_the_run_failed(
    cluster: LocalCluster, operators: Operators, receiver: Receiver, module_namespace: str
) -> None:
    name = f"broken-{operators.lock_backend}"
    start(cluster, receiver, module_namespace, name, answer=500)

    done = trigger(cluster, module_namespace, name)

    assert done.returncode == 1
    assert "Failed: HTTP 500" in done.stderr


def test_a_token_runs_once_across_replicas_and_never_again_even_after_restarts(
    cluster: LocalCluster, operators: Operators, receiver: Receiver, module_namespace: str
) -> None:
    name = f"once-{operators.lock_backend}"
    start(cluster, receiver, module_namespace, name)

    annotate(cluster, module_namespace, name, "first")
    eventually(
        lambda: len(calls_of(receiver, module_namespace, name)) == 1,
        timeout=30,
        what="the run of token first",
    )
    annotate(cluster, module_namespace, name, "second")
    eventually(
        lambda: len(calls_of(receiver, module_namespace, name)) == 2,
        timeout=30,
        what="the run of token second",
    )
    eventually(
        lambda: (
            {run.get("runNowToken") for run in recent_runs(read(cluster, module_namespace, name))}
            == {"first", "second"}
        ),
        timeout=30,
        what="the runs of both tokens recorded",
    )
    annotate(cluster, module_namespace, name, "first")  # taken already: its run is in status
    for replica_id in operators.replica_ids:  # every replica sees the annotation afresh
        operators[replica_id].terminate()
        operators.start(replica_id)
    jobs = len(read_all(cluster, module_namespace))
    for replica_id in operators.replica_ids:
        eventually(
            lambda r=replica_id: metric(operators[r].metrics(), "punctual_scheduled_jobs") == jobs,
            timeout=30,
            what=f"every job armed again by {replica_id}",
        )
    # A replica claims a run asked for as it reads the job, just before arming it: a run of
    # the taken token would have arrived by now, or in the moment after.
    time.sleep(RUN_ARRIVES_WITHIN)

    keys = calls_of(receiver, module_namespace, name)
    assert [key.rsplit("/", 1)[1] for key in keys] == ["run-now-first", "run-now-second"]


def test_a_token_that_is_no_label_value_is_refused_with_an_event_naming_the_annotation(
    cluster: LocalCluster, operators: Operators, receiver: Receiver, module_namespace: str
) -> None:
    name = f"hostile-{operators.lock_backend}"
    start(cluster, receiver, module_namespace, name)

    annotate(cluster, module_namespace, name, "x" * 64)

    refused = eventually(
        lambda: events(cluster, module_namespace, name=name, reason="InvalidRunNow"),
        timeout=30,
        what="the InvalidRunNow Event",
    )
    assert "metadata.annotations[punctual.dev/run-now]" in refused[0]["message"]
    assert calls_of(receiver, module_namespace, name) == []
    assert json.dumps(status(read(cluster, module_namespace, name))).count("x" * 64) == 0
