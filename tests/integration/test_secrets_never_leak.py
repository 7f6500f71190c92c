"""Secrets never leak: not into the operator's logs, not into Events, not into any status.

The operator, logging JSON lines at DEBUG (the most it can say), gets a Redis URL with a
password; jobs send headers from a Secret (headersFrom) and carry a password in their own URL.
Runs succeed, fail with HTTP 500, fail to connect, time out, and the Redis lock goes away for a
few seconds (claims fail with the URL at hand). Then
every operator log line, every Event in the namespace and the status of every ScheduledJob is
searched for each secret value, raw and base64-encoded: none may appear.

The header recorder proves the secret headers really went out (otherwise the test would pass
by never reading the Secret).
"""

import base64
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from failure_harness import HeaderRecorder, SilentListener, closed_port, lock_claims
from operator_harness import (
    Operators,
    apply,
    counts,
    eventually,
    read_all,
    report,
    scheduled_job,
)

from localcluster import LocalCluster, LocalRedis

pytest_plugins = ["operator_fixtures"]

TOKEN = f"Bearer tok-{uuid.uuid4().hex}"
API_KEY = f"key-{uuid.uuid4().hex}"
URL_PASSWORD = f"urlpw-{uuid.uuid4().hex[:12]}"
REDIS_PASSWORD = f"redispw-{uuid.uuid4().hex[:12]}"
SECRETS = (TOKEN, API_KEY, URL_PASSWORD, REDIS_PASSWORD)
SECRET_NAME = "target-credentials"
RUN_FOR = 15.0
"""Seconds of runs (every 1s) before the Redis blip, and again after it."""


@dataclass(frozen=True)
class Evidence:
    logs: dict[str, str]
    events: list[dict[str, Any]]
    bodies: dict[str, dict[str, Any]]
    headers_received: list[dict[str, str]]


def forms(secret: str) -> list[str]:
    """A secret as it could appear: as is, and base64-encoded (a Secret's own encoding)."""
    return [secret, base64.b64encode(secret.encode()).decode()]


@pytest.fixture(scope="module")
def password_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedis]:
    run_dir = tmp_path_factory.mktemp("redis-password")
    with LocalRedis(password=REDIS_PASSWORD, run_dir=run_dir) as server:
        yield server


@pytest.fixture(scope="module")
def evidence(
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    password_redis: LocalRedis,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Evidence]:
    namespace = module_namespace
    cluster.kubectl(
        "create", "secret", "generic", SECRET_NAME, "-n", namespace,
        f"--from-literal=Authorization={TOKEN}", f"--from-literal=X-Api-Key={API_KEY}",
    )  # fmt: skip
    from_secret = [{"secretRef": {"name": SECRET_NAME}}]
    with HeaderRecorder() as target, SilentListener() as silent:
        target.answers["/fails"] = 500
        refused = closed_port()
        jobs = {
            "answered-204": {"url": target.url("/ok"), "headersFrom": from_secret},
            "answered-500": {"url": target.url("/fails"), "headersFrom": from_secret},
            "refused": {"url": f"http://127.0.0.1:{refused}/x", "headersFrom": from_secret},
            "timed-out": {"url": f"http://127.0.0.1:{silent.port}/x", "headersFrom": from_secret},
            "password-in-url-500": {
                "url": target.url("/fails").replace("://", f"://user:{URL_PASSWORD}@"),
            },
            "password-in-url-refused": {
                "url": f"http://user:{URL_PASSWORD}@127.0.0.1:{refused}/x",
            },
        }
        with Operators(
            cluster,
            tmp_path_factory.mktemp("operators"),
            namespace=namespace,
            replicas=2,
            lock_backend="redis",
            redis_url=password_redis.url,
            extra_args=["--log-format", "json", "--log-level", "DEBUG"],
        ) as operators:
            apply(
                cluster,
                *(
                    scheduled_job(
                        namespace,
                        name,
                        {"every": "1s", "timeout": "500ms", "target": {"http": http}},
                    )
                    for name, http in jobs.items()
                ),
            )
            time.sleep(RUN_FOR)
            failed_before = lock_claims(operators, outcome="error")
            with password_redis.down():  # claims now fail, with the Redis URL in hand
                eventually(
                    lambda: lock_claims(operators, outcome="error") >= failed_before + len(jobs),
                    timeout=30,
                    what="a failed claim per job",
                )
            time.sleep(RUN_FOR)

            def every_job_failed_at_least_once() -> dict[str, dict[str, Any]] | None:
                bodies = read_all(cluster, namespace)
                failing = set(jobs) - {"answered-204"}
                done = all(
                    counts(bodies[name])["failed"] + counts(bodies[name])["timedOut"] > 0
                    for name in failing
                )
                return bodies if done else None

            eventually(every_job_failed_at_least_once, timeout=30, what="failures in status")
            operators.stop()  # SIGTERM: the last status writes and log lines are in
            logs = {rid: replica.log() for rid, replica in operators.replicas.items()}
        bodies = read_all(cluster, namespace)
        events = cluster.api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        report(
            "secrets never leak",
            [
                f"{len(target.requests)} requests at the target, {len(events)} Events, "
                f"{sum(len(log.splitlines()) for log in logs.values())} log lines searched",
                *(f"{name}: counts {dict(counts(bodies[name]))}" for name in jobs),
            ],
        )
        yield Evidence(
            logs=logs,
            events=events,
            bodies=bodies,
            headers_received=[headers for _, headers in target.requests],
        )


def test_the_secret_headers_did_reach_the_target(evidence: Evidence) -> None:
    sent = {(h.get("Authorization"), h.get("X-Api-Key")) for h in evidence.headers_received}

    assert (TOKEN, API_KEY) in sent


def test_the_logs_searched_are_json_lines_with_the_runs_in_them(evidence: Evidence) -> None:
    lines = [json.loads(line) for log in evidence.logs.values() for line in log.splitlines()]
    runs = {line.get("result") for line in lines if line["message"] == "run finished"}

    assert {"DEBUG", "INFO", "WARNING"} <= {line["level"] for line in lines}
    assert {"Succeeded", "Failed", "TimedOut"} <= runs


def test_the_failures_were_reported_in_status_and_events(evidence: Evidence) -> None:
    reasons = {event["reason"] for event in evidence.events}

    assert "RunFailed" in reasons or "RunTimedOut" in reasons


@pytest.mark.parametrize("secret", SECRETS, ids=["token", "api-key", "url-password", "redis"])
class TestASecretValue:
    def test_is_in_no_operator_log(self, evidence: Evidence, secret: str) -> None:
        leaks = {
            replica: [line for line in log.splitlines() if any(f in line for f in forms(secret))]
            for replica, log in evidence.logs.items()
        }

        assert leaks == {replica: [] for replica in evidence.logs}

    def test_is_in_no_event(self, evidence: Evidence, secret: str) -> None:
        leaks = [
            event["message"]
            for event in evidence.events
            if any(f in json.dumps(event) for f in forms(secret))
        ]

        assert leaks == []

    def test_is_in_no_status(self, evidence: Evidence, secret: str) -> None:
        leaks = [
            name
            for name, body in evidence.bodies.items()
            if any(f in json.dumps(body.get("status") or {}) for f in forms(secret))
        ]

        assert leaks == []
