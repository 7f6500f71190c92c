"""A replica's stop is bounded: SIGTERM ends it within 5 s even when its last status writes
cannot land (the API server stalled), as a Deployment's rollout expects of a pod.

One replica on the redis slot lock (its claims need no API server), twenty jobs every second,
their statuses always pending (written every 5 s at most). The API server is stopped (SIGSTOP)
before the SIGTERM, so none of the last writes lands: the writer gives them up at its bound,
says how many, and the process exits.
"""

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from operator_harness import (
    Operators,
    Receiver,
    apply,
    eventually,
    http_target,
    scheduled_job,
)

from localcluster import LocalCluster, LocalRedis

pytest_plugins = ["operator_fixtures"]

JOBS = 20
STOP_WITHIN = 5.0
"""Seconds from SIGTERM to the exit: the target of a replica's stop."""
SLACK = 2.0
"""Seconds more the shared two-core machine may take."""


@pytest.fixture
def operators(
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    redis_server: LocalRedis,
    tmp_path: Path,
) -> Iterator[Operators]:
    with Operators(
        cluster,
        tmp_path,
        namespace=module_namespace,
        replicas=1,
        lock_backend="redis",
        redis_url=redis_server.url,
    ) as started:
        yield started


class TestTheStop:
    def test_ends_within_its_bound_although_the_api_server_takes_no_write(
        self,
        cluster: LocalCluster,
        operators: Operators,
        receiver: Receiver,
        module_namespace: str,
    ) -> None:
        names = [f"stopped-{index:02d}" for index in range(JOBS)]
        apply(
            cluster,
            *(
                scheduled_job(
                    module_namespace,
                    name,
                    {"every": "1s", "target": http_target(receiver, module_namespace, name)},
                )
                for name in names
            ),
        )
        eventually(
            lambda: all(receiver.calls(f"{module_namespace}/{name}") for name in names),
            timeout=60,
            what="a call of every job",
        )
        apiserver = next(p for p in cluster.launched if p.name == "kube-apiserver")
        [replica] = operators.replicas.values()

        os.kill(apiserver.pid, signal.SIGSTOP)
        try:
            stopping = time.monotonic()
            replica.send_sigterm()
            code = replica.wait_exit(timeout=STOP_WITHIN + SLACK + 10)
            took = time.monotonic() - stopping
        finally:
            os.kill(apiserver.pid, signal.SIGCONT)

        log = replica.log_path.read_text()
        print(f"SIGTERM with the API server stopped: exit status {code} after {took:.1f} s")
        assert code == 0
        assert took <= STOP_WITHIN + SLACK
        assert "jobs not written within" in log
