"""The objects each system is given, and the cluster they are applied to."""

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from comparing.systems import (
    JOB_TEMPLATE,
    MINUTE,
    NAMESPACE,
    READY_TIMEOUT,
    STREAM,
)
from lib.output import say
from localcluster import LocalCluster, LocalRedis, processes
from localcluster.api import ApiError
from localcluster.binaries import REPO_ROOT

# -- the objects -----------------------------------------------------------------------------


def cronjob(
    name: str,
    *,
    namespace: str = NAMESPACE,
    template: dict[str, Any] = JOB_TEMPLATE,
    policy: str = "Forbid",
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedule": "*/1 * * * *", "concurrencyPolicy": policy, "jobTemplate": template},
    }


def scheduled_job(name: str, spec: dict[str, Any], *, namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "punctual.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def job_spec(template: dict[str, Any], history: dict[str, int], **more: Any) -> dict[str, Any]:
    """A ScheduledJob's spec as the CronJob's: every minute, Forbid, the same Job template."""
    return {
        "schedule": "*/1 * * * *",
        "concurrencyPolicy": "Forbid",
        "timeout": "5m",
        "history": history,
        "target": {"job": {"template": template}},
        **more,
    }


def warm_job_spec(
    template: dict[str, Any], history: dict[str, int], *, mode: str, lead: timedelta
) -> dict[str, Any]:
    """job_spec's, warm: the slot's Job made ``lead`` ahead and released at the slot by the gate
    in ``mode``. The timeout is the rest of the minute: a lead and a timeout fit in the period."""
    seconds = int(lead.total_seconds())
    spec = job_spec(template, history, timeout=f"{int(MINUTE.total_seconds()) - seconds}s")
    spec["target"]["job"]["warmStart"] = {"lead": f"{seconds}s", "mode": mode}
    return spec


def objects(count: int, minutes: int) -> list[dict[str, Any]]:
    history = {"succeeded": min(100, minutes + 5), "failed": min(100, minutes + 5)}
    made = []
    for index in range(count):
        made.append(cronjob(f"cron-{index:02d}"))
        made.append(scheduled_job(f"sj-{index:02d}", job_spec(JOB_TEMPLATE, history)))
        made.append(
            scheduled_job(
                f"q-{index:02d}",
                {
                    "every": "1m",
                    "history": history,
                    "target": {"queue": {"stream": STREAM, "payload": {"i": index}}},
                },
            )
        )
    return made


def apply(cluster: LocalCluster, items: Sequence[dict[str, Any]]) -> None:
    document = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})
    cluster.kubectl("create", "-f", "-", input=document, timeout=600)


def create_namespace(cluster: LocalCluster, name: str, *, for_pods: bool = False) -> None:
    cluster.api.post(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    deadline = time.monotonic() + 60
    while for_pods and not cluster.api.exists(f"/api/v1/namespaces/{name}/serviceaccounts/default"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"namespace {name} got no default ServiceAccount")
        time.sleep(0.2)


def wait_served(cluster: LocalCluster) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        try:
            cluster.api.get("/apis/punctual.dev/v1alpha1/scheduledjobs")
            return
        except ApiError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def wait_armed(
    cluster: LocalCluster,
    operator: processes.ManagedProcess,
    count: int,
    namespace: str = NAMESPACE,
) -> None:
    """Until ``count`` ScheduledJobs are Ready and have their next run time (armed)."""

    def armed() -> bool:
        listing = cluster.api.get(
            f"/apis/punctual.dev/v1alpha1/namespaces/{namespace}/scheduledjobs"
        )
        ready = 0
        for item in listing["items"]:
            status = item.get("status") or {}
            conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
            ready += conditions.get("Ready") == "True" and bool(status.get("nextRunTime"))
        return ready == count

    timeout = READY_TIMEOUT * max(1, math.ceil(count / 500))
    processes.wait_until(operator, armed, f"{count} ScheduledJobs are Ready", timeout, 0.5)


def start_operator(
    cluster: LocalCluster,
    redis_server: LocalRedis,
    run_dir: Path,
    *,
    namespace: str | None = NAMESPACE,
    extra: Sequence[str] = (),
) -> processes.ManagedProcess:
    """The operator as a local process; ``namespace=None``: every namespace."""
    script = Path(sys.executable).parent / "punctual"
    argv = [
        str(script if script.exists() else shutil.which("punctual") or "punctual"),
        "run",
        *(["--namespace", namespace] if namespace else []),
        "--lock-backend",
        "redis",
        "--redis-url",
        redis_server.url,
        "--replica-id",
        "compare",
        "--metrics-port",
        "0",
        "--health-port",
        "0",
        *extra,
    ]
    return processes.start("punctual-operator", argv, run_dir, env=cluster.env, cwd=REPO_ROOT)


@contextlib.contextmanager
def stress(enabled: bool) -> Iterator[None]:
    """A busy process loading one core for the duration, with --stress."""
    if not enabled:
        yield
        return
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    say(f"one core loaded by a busy process (pid {busy.pid})")
    try:
        yield
    finally:
        os.killpg(busy.pid, signal.SIGKILL)
        busy.wait()
