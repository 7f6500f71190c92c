"""The queue frameworks' own workers as processes, and the queue target that calls their task:
shared by the frameworks' integration test and the queue lateness benchmark
(``bench/queue_lateness.py``), so that both run the same workers the same way.

Each worker runs the task of ``queue_workers`` that records the slot id and scheduled time its
message carried, one JSON line per run (``Worker.recorded``).
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import redis
from operator_harness import eventually

VENV_BIN = Path(sys.executable).parent
WORKERS = Path(__file__).resolve().parent
BULLMQ_QUEUE = "punctual-tests"
NODE_MODULES = WORKERS.parent.parent / "hack" / "node" / "node_modules"
"""BullMQ, pinned in hack/node/package-lock.json (``make install`` runs ``npm ci`` there)."""

FRAMEWORKS = (
    "celery", "rq", "arq", "dramatiq", "taskiq-list", "taskiq-stream", "sidekiq", "bullmq",
)  # fmt: skip
"""Every worker there is: taskiq twice, for its list and its stream broker."""

WORKER_COMMANDS = {
    "celery": lambda _url: [  # the app's broker is $BROKER_URL
        str(VENV_BIN / "celery"), "-A", "queue_workers.celery_app", "worker", "--pool", "solo",
        "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO",
    ],
    "rq": lambda url: [
        str(VENV_BIN / "rq"), "worker", "--url", url,
        "--serializer", "rq.serializers.JSONSerializer", "default",
    ],
    "arq": lambda _url: [str(VENV_BIN / "arq"), "queue_workers.arq_worker.WorkerSettings"],
    "dramatiq": lambda _url: [
        str(VENV_BIN / "dramatiq"), "queue_workers.dramatiq_actors", "--processes", "1",
        "--threads", "1",
    ],
    # The broker's class is $WORKER_FRAMEWORK's (queue_workers.taskiq_app).
    "taskiq-list": lambda _url: [
        str(VENV_BIN / "taskiq"), "worker", "queue_workers.taskiq_app:broker", "--workers", "1",
    ],
    "taskiq-stream": lambda _url: [
        str(VENV_BIN / "taskiq"), "worker", "queue_workers.taskiq_app:broker", "--workers", "1",
    ],
    "sidekiq": lambda _url: [  # its broker is $REDIS_URL
        "sidekiq", "-r", str(WORKERS / "queue_workers" / "sidekiq_worker.rb"),
        "--concurrency", "1", "--queue", "default", "--timeout", "5",
    ],
    "bullmq": lambda _url: ["node", str(WORKERS / "queue_workers" / "bullmq_worker.js")],
}  # fmt: skip


class Worker:
    """The framework's own worker process, recording into ``records``; ready once it reads."""

    def __init__(self, framework: str, broker_url: str, run_dir: Path) -> None:
        self.framework = framework
        self.records = run_dir / "records.jsonl"
        self.records.touch()
        self.log = run_dir / "worker.log"
        env = dict(
            os.environ,
            BROKER_URL=broker_url,
            REDIS_URL=broker_url,
            BULLMQ_QUEUE=BULLMQ_QUEUE,
            NODE_PATH=str(NODE_MODULES),
            WORKER_FRAMEWORK=framework,
            RECORD_FILE=str(self.records),
            PYTHONPATH=str(WORKERS),
        )
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                WORKER_COMMANDS[framework](broker_url),
                env=env,
                cwd=run_dir,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if framework == "taskiq-stream":
            # The stream broker's consumer group starts at the stream's end ($) when the worker
            # creates it: what was added before, it never reads.
            client = redis.Redis.from_url(broker_url)
            try:
                eventually(
                    lambda: client.exists("taskiq") and client.xinfo_groups("taskiq"),
                    timeout=30,
                    what="taskiq's consumer group on the stream",
                )
            finally:
                client.close()

    def recorded(self, job: str | None = None) -> list[dict[str, Any]]:
        lines = [json.loads(line) for line in self.records.read_text().splitlines()]
        return [line for line in lines if job is None or line["slot"].startswith(f"{job}/")]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def task_target(framework: str, name: str, *, secret: str) -> dict[str, Any]:
    """The queue target calling the recording task of ``framework``'s worker with ``[name]``,
    on the broker whose URL is key ``url`` of Secret ``secret``."""
    arguments = {"args": [name]}
    tasks: dict[str, dict[str, Any]] = {
        "celery": {"celery": {"task": "tests.record", "arguments": arguments}},
        "rq": {
            "rq": {
                "function": "queue_workers.rq_tasks.record_slot",
                "arguments": arguments,
                "timeout": "30s",
            }
        },
        "arq": {"arq": {"function": "record_slot", "arguments": arguments}},
        "dramatiq": {"dramatiq": {"actor": "record_slot", "arguments": arguments}},
        "taskiq-list": {
            "taskiq": {
                "task": "tests.record",
                "brokerClass": "ListQueueBroker",
                "arguments": arguments,
                "labels": {"team": "reports"},
            }
        },
        "taskiq-stream": {
            "taskiq": {
                "task": "tests.record",
                "brokerClass": "RedisStreamBroker",
                "arguments": arguments,
                "labels": {"team": "reports"},
            }
        },
        "sidekiq": {"sidekiq": {"class": "Tests::RecordSlot", "arguments": arguments, "retry": 0}},
        "bullmq": {
            "bullmq": {
                "queue": BULLMQ_QUEUE,
                "name": name,
                "data": arguments,
                "removeOnComplete": 100,
            }
        },
    }
    return {**tasks[framework], "brokerFrom": {"secretName": secret, "key": "url"}}
