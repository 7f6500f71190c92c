"""Celery, RQ, arq, Dramatiq, taskiq (list and stream brokers), Sidekiq and BullMQ tasks on the
tenant's broker, run by the frameworks' own workers.

Two operator replicas race for every slot (the redis slot lock on the harness's Redis); each
slot's message goes to another Redis, the tenant's broker, whose URL and password the job reads
from a Secret in its namespace. The framework's own worker (``celery worker``, ``rq worker``,
``arq``, ``dramatiq``, ``taskiq worker``, pinned in uv.lock; Debian's ``sidekiq``; BullMQ's
Worker, run by node) runs a task that records the slot id and scheduled time its message carried
(``queue_workers``): over a window of about 15 s every slot runs exactly once, none missing,
none twice, with the scheduled time of its slot and the task id derived from it. The claim and
the push are one script on the broker: the same slot pushed twice yields one message, arq's own
enqueue of the slot's job id is dropped by arq, and BullMQ itself drops a second copy of a job
id.
"""

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from arq.connections import create_pool
from operator_harness import (
    Operators,
    apply,
    condition,
    delete,
    eventually,
    every_slots,
    from_millis,
    parse_time,
    read,
    recent_runs,
    report,
    scheduled_job,
)
from queue_workers import arq_worker

from localcluster import LocalCluster, LocalRedis
from punctual.api import task_models
from punctual.targets import addresses
from punctual.targets.queue import (
    arq_jobs,
    brokers,
    bullmq_jobs,
    celery_messages,
    dramatiq_messages,
    pushes,
    rq_jobs,
    sidekiq_jobs,
    taskiq_messages,
)

pytest_plugins = ["operator_fixtures"]

WINDOW = timedelta(seconds=15)
VENV_BIN = Path(sys.executable).parent
WORKERS = Path(__file__).resolve().parent
SECRET = "tenant-broker"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedis]:
    """The tenant's broker: a Redis of its own, with a password, not the lock's."""
    with LocalRedis(run_dir=tmp_path_factory.mktemp("broker"), password="tenant s3cret") as server:
        yield server


@pytest.fixture(scope="module")
def two_replicas(
    cluster: LocalCluster,
    redis_server: LocalRedis,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Operators]:
    with Operators(
        cluster,
        tmp_path_factory.mktemp("operators"),
        namespace=module_namespace,
        replicas=2,
        lock_backend="redis",
        extra_args=["--sharding", "off"],  # both arm every job: the slot lock picks one
        redis_url=redis_server.url,
    ) as started:
        yield started


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
BULLMQ_QUEUE = "punctual-tests"
NODE_MODULES = WORKERS.parent.parent / "hack" / "node" / "node_modules"
"""BullMQ, pinned in hack/node/package-lock.json (``make install`` runs ``npm ci`` there)."""


class Worker:
    """The framework's own worker process, recording into ``records``."""

    def __init__(self, framework: str, broker: LocalRedis, run_dir: Path) -> None:
        self.framework = framework
        self.records = run_dir / "records.jsonl"
        self.records.touch()
        self.log = run_dir / "worker.log"
        env = dict(
            os.environ,
            BROKER_URL=broker.url,
            REDIS_URL=broker.url,
            BULLMQ_QUEUE=BULLMQ_QUEUE,
            NODE_PATH=str(NODE_MODULES),
            WORKER_FRAMEWORK=framework,
            RECORD_FILE=str(self.records),
            PYTHONPATH=str(WORKERS),
        )
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                WORKER_COMMANDS[framework](broker.url),
                env=env,
                cwd=run_dir,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

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


@pytest.fixture(
    params=["celery", "rq", "arq", "dramatiq", "taskiq-list", "taskiq-stream", "sidekiq", "bullmq"]
)
def worker(request: pytest.FixtureRequest, broker: LocalRedis, tmp_path: Path) -> Iterator[Worker]:
    started = Worker(request.param, broker, tmp_path)
    if request.param == "taskiq-stream":
        # The stream broker's consumer group starts at the stream's end ($) when the worker
        # creates it: what was added before, it never reads.
        client = redis.Redis.from_url(broker.url)
        try:
            eventually(
                lambda: client.exists("taskiq") and client.xinfo_groups("taskiq"),
                timeout=30,
                what="taskiq's consumer group on the stream",
            )
        finally:
            client.close()
    yield started
    started.stop()


def task_target(framework: str, name: str) -> dict[str, Any]:
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
    return {**tasks[framework], "brokerFrom": {"secretName": SECRET, "key": "url"}}


def slot_of(slot_id: str) -> datetime:
    return from_millis(int(slot_id.rsplit("/", 1)[1]))


class TestEverySlotOnTheTenantsBroker:
    def test_runs_exactly_once_in_the_frameworks_own_worker(
        self,
        cluster: LocalCluster,
        broker: LocalRedis,
        module_namespace: str,
        two_replicas: Operators,
        worker: Worker,
    ) -> None:
        framework = worker.framework
        name = f"every-second-{framework}"
        job = f"{module_namespace}/{name}"
        apply(
            cluster,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": SECRET, "namespace": module_namespace},
                "stringData": {"url": broker.url},
            },
            scheduled_job(
                module_namespace,
                name,
                {
                    "every": "1s",
                    "history": {"succeeded": 20, "failed": 20},
                    "target": {"queue": task_target(framework, name)},
                },
            ),
        )

        def window() -> list[dict[str, Any]] | None:
            slots = sorted(slot_of(line["slot"]) for line in worker.recorded(job))
            return worker.recorded(job) if slots and slots[-1] - slots[0] >= WINDOW else None

        eventually(window, timeout=90, what=f"{WINDOW} of slots run by {framework}'s worker")
        body = read(cluster, module_namespace, name)
        delete(cluster, module_namespace, name)
        client = redis.Redis.from_url(broker.url, decode_responses=True)
        try:
            # Every slot claimed at the broker is run by the worker (the last ones drain).
            eventually(
                lambda: (
                    len(worker.recorded(job)) >= len(client.keys(f"{brokers.CLAIM_PREFIX}{job}/*"))
                ),
                timeout=30,
                what="the worker running every slot claimed at the broker",
            )
            claimed = client.keys(f"{brokers.CLAIM_PREFIX}{job}/*")
        finally:
            client.close()
        records = worker.recorded(job)
        slots = [slot_of(line["slot"]) for line in records]
        duplicates = sum(count - 1 for count in Counter(slots).values())
        expected = every_slots(min(slots) - timedelta(seconds=1), max(slots), timedelta(seconds=1))
        lateness = sorted(
            (line["startedAt"] - parse_time(line["scheduledTime"]).timestamp()) * 1000
            for line in records
        )
        report(
            f"{framework} worker on the tenant's broker, 2 replicas, every 1s",
            [
                f"{len(records)} runs, {duplicates} duplicates, "
                f"{len(set(expected) - set(slots))} missing; scheduled time → task started: "
                f"p50 {lateness[len(lateness) // 2]:.0f} ms, max {lateness[-1]:.0f} ms"
            ],
        )
        assert duplicates == 0
        assert sorted(slots) == expected
        assert len(claimed) == len(records)
        uid = body["metadata"]["uid"]
        for line in records:
            assert line["slot"] == f"{job}/{uid}/{line['slot'].rsplit('/', 1)[1]}"
            assert parse_time(line["scheduledTime"]) == slot_of(line["slot"])
            args, _kwargs, task_id = line["args"]
            assert args == [name]
            assert task_id == pushes.message_id(line["slot"])
        ready = condition(body, "Ready")
        assert ready is not None
        assert f"on the broker of Secret {module_namespace}/{SECRET} key url" in ready["message"]
        runs = [run for run in recent_runs(body) if run["result"] == "Succeeded"]
        assert runs
        assert all(
            run["message"].startswith(f"enqueued {framework.split('-')[0]} ") for run in runs
        )
        assert "s3cret" not in json.dumps(body)
        assert two_replicas.problems() == {}, f"see {two_replicas.logs()}"


class TestTheSameSlotPushedTwice:
    def test_yields_one_message(self, broker: LocalRedis, tmp_path: Path) -> None:
        celery_worker = Worker("celery", broker, tmp_path)
        try:
            slot_id = f"twice/pushed/uid/{int(datetime.now().timestamp() * 1000)}"
            task = task_models.CeleryTask.model_validate(
                {"task": "tests.record", "arguments": {"args": ["twice"]}}
            )
            push = celery_messages.celery_push(
                task, slot_id=slot_id, scheduled_time=slot_of(slot_id)
            )

            async def push_twice() -> list[bool]:
                clients = brokers.Brokers(guard=addresses.AddressGuard())
                try:
                    return [
                        await clients.push(
                            namespace="twice", url=broker.url, slot_id=slot_id, push=push
                        )
                        for _ in range(2)
                    ]
                finally:
                    await clients.close()

            assert asyncio.run(push_twice()) == [True, False]
            eventually(
                lambda: celery_worker.recorded("twice/pushed"), timeout=30, what="the task run"
            )
            client = redis.Redis.from_url(broker.url)
            try:
                assert client.llen("celery") == 0  # nothing left for a second run
            finally:
                client.close()
            assert [line["slot"] for line in celery_worker.recorded("twice/pushed")] == [slot_id]
        finally:
            celery_worker.stop()


class TestArqsOwnEnqueueOfTheSameSlot:
    def test_is_dropped_by_arq_as_a_job_id_it_holds(self, broker: LocalRedis) -> None:
        slot_id = f"arq/native/uid/{int(datetime.now().timestamp() * 1000)}"
        job = task_models.ArqJob.model_validate({"function": "record_slot", "queue": "arq:native"})
        scheduled_time = slot_of(slot_id)
        push = arq_jobs.arq_push(
            job, slot_id=slot_id, scheduled_time=scheduled_time, now=scheduled_time
        )

        async def push_then_enqueue_with_arq() -> tuple[bool, object, int, float | None]:
            clients = brokers.Brokers(guard=addresses.AddressGuard())
            arq_redis = await create_pool(arq_worker.redis_settings_of(broker.url))
            try:
                pushed = await clients.push(
                    namespace="arq", url=broker.url, slot_id=slot_id, push=push
                )
                again = await arq_redis.enqueue_job(
                    "record_slot", _job_id=push.message_id, _queue_name="arq:native"
                )
                return (
                    pushed,
                    again,
                    await arq_redis.zcard("arq:native"),
                    await arq_redis.zscore("arq:native", push.message_id),
                )
            finally:
                await arq_redis.aclose()
                await clients.close()

        pushed, again, queued, score = asyncio.run(push_then_enqueue_with_arq())
        assert pushed
        assert again is None  # arq's enqueue_job: "None if a job with this ID already exists"
        assert queued == 1
        assert score == scheduled_time.timestamp() * 1000


class TestAQueueKeyOfAnotherType:
    def test_fails_the_push_and_writes_nothing_not_even_the_claim(self, broker: LocalRedis) -> None:
        client = redis.Redis.from_url(broker.url, decode_responses=True)
        try:
            client.set("not-a-list", "the tenant's own value")
            slot_id = "typed/job/uid/1"
            task = task_models.CeleryTask.model_validate(
                {"task": "tests.record", "queue": "not-a-list"}
            )
            push = celery_messages.celery_push(
                task, slot_id=slot_id, scheduled_time=slot_of(slot_id)
            )

            async def push_once() -> bool:
                clients = brokers.Brokers(guard=addresses.AddressGuard())
                try:
                    return await clients.push(
                        namespace="typed", url=broker.url, slot_id=slot_id, push=push
                    )
                finally:
                    await clients.close()

            with pytest.raises(brokers.BrokerUnavailableError, match="holds a string, not a list"):
                asyncio.run(push_once())
            assert client.get("not-a-list") == "the tenant's own value"
            assert client.exists(brokers.claim_key(slot_id)) == 0
        finally:
            client.close()


class TestABullmqKeyOfAnotherType:
    def test_fails_the_push_before_bullmqs_own_writes_and_the_claim(
        self, broker: LocalRedis
    ) -> None:
        client = redis.Redis.from_url(broker.url, decode_responses=True)
        try:
            client.set("bull:typed:marker", "the tenant's own value")
            slot_id = "typed/bullmq/uid/1"
            job = task_models.BullmqJob.model_validate({"queue": "typed", "name": "nightly"})
            push = bullmq_jobs.bullmq_push(
                job, slot_id=slot_id, scheduled_time=slot_of(slot_id), now=datetime.now(UTC)
            )

            async def push_once() -> bool:
                clients = brokers.Brokers(guard=addresses.AddressGuard())
                try:
                    return await clients.push(
                        namespace="typed", url=broker.url, slot_id=slot_id, push=push
                    )
                finally:
                    await clients.close()

            with pytest.raises(brokers.BrokerUnavailableError, match="holds a string, not a zset"):
                asyncio.run(push_once())
            assert client.keys("bull:typed:*") == ["bull:typed:marker"]
            assert client.exists(brokers.claim_key(slot_id)) == 0
        finally:
            client.close()


class TestASecondCopyOfABullmqJob:
    def test_is_dropped_by_bullmq_itself_once_the_claim_is_gone(self, broker: LocalRedis) -> None:
        slot_id = f"native/drop/uid/{int(datetime.now().timestamp() * 1000)}"
        job = task_models.BullmqJob.model_validate({"queue": "native-drop", "name": "nightly"})
        queue = "bull:native-drop:"
        client = redis.Redis.from_url(broker.url, decode_responses=True)

        async def push() -> bool:
            clients = brokers.Brokers(guard=addresses.AddressGuard())
            try:
                message = bullmq_jobs.bullmq_push(
                    job, slot_id=slot_id, scheduled_time=slot_of(slot_id), now=datetime.now(UTC)
                )
                return await clients.push(
                    namespace="native", url=broker.url, slot_id=slot_id, push=message
                )
            finally:
                await clients.close()

        try:
            assert asyncio.run(push()) is True
            client.delete(brokers.claim_key(slot_id))  # as if its day had passed
            assert asyncio.run(push()) is False
            job_id = pushes.message_id(slot_id)
            assert client.lrange(f"{queue}wait", 0, -1) == [job_id]
            events = [fields["event"] for _, fields in client.xrange(f"{queue}events")]
            assert events == ["added", "waiting", "duplicated"]
            assert client.get(f"{queue}id") == "2"  # BullMQ counts every add, as its own does
        finally:
            client.close()


def pushes_of_every_format(slot_id: str) -> list[pushes.Push]:
    scheduled_time = slot_of(slot_id)
    queue = f"types-{slot_id.rsplit('/', 1)[1]}"
    return [
        celery_messages.celery_push(
            task_models.CeleryTask.model_validate({"task": "t", "queue": queue}),
            slot_id=f"{slot_id}/celery",
            scheduled_time=scheduled_time,
        ),
        rq_jobs.rq_push(
            task_models.RqJob.model_validate({"function": "m.f", "queue": queue}),
            slot_id=f"{slot_id}/rq",
            scheduled_time=scheduled_time,
            now=scheduled_time,
        ),
        arq_jobs.arq_push(
            task_models.ArqJob.model_validate({"function": "f", "queue": f"{queue}-arq"}),
            slot_id=f"{slot_id}/arq",
            scheduled_time=scheduled_time,
            now=scheduled_time,
        ),
        dramatiq_messages.dramatiq_push(
            task_models.DramatiqMessage.model_validate({"actor": "a", "queue": queue}),
            slot_id=f"{slot_id}/dramatiq",
            scheduled_time=scheduled_time,
            now=scheduled_time,
        ),
        *(
            taskiq_messages.taskiq_push(
                task_models.TaskiqTask.model_validate(
                    {"task": "m:t", "brokerClass": broker_class, "queue": f"{queue}-{broker_class}"}
                ),
                slot_id=f"{slot_id}/{broker_class}",
                scheduled_time=scheduled_time,
            )
            for broker_class in task_models.TaskiqBrokerClass
        ),
        sidekiq_jobs.sidekiq_push(
            task_models.SidekiqJob.model_validate({"class": "Types::Job", "queue": queue}),
            slot_id=f"{slot_id}/sidekiq",
            scheduled_time=scheduled_time,
            now=scheduled_time,
        ),
        bullmq_jobs.bullmq_push(
            task_models.BullmqJob.model_validate({"queue": queue, "name": "n"}),
            slot_id=f"{slot_id}/bullmq",
            scheduled_time=scheduled_time,
            now=scheduled_time,
        ),
    ]


class TestEveryFormatsKeys:
    def test_hold_the_redis_type_the_push_checks_them_for(self, broker: LocalRedis) -> None:
        every_push = pushes_of_every_format(f"types/job/uid/{int(datetime.now().timestamp())}")

        async def push_each() -> list[bool]:
            clients = brokers.Brokers(guard=addresses.AddressGuard())
            try:
                return [
                    # A claim per push: its message id is as distinct as its slot.
                    await clients.push(
                        namespace="types", url=broker.url, slot_id=push.message_id, push=push
                    )
                    for push in every_push
                ]
            finally:
                await clients.close()

        assert asyncio.run(push_each()) == [True] * len(every_push)
        client = redis.Redis.from_url(broker.url, decode_responses=True)
        try:
            for push in every_push:
                for command in push.commands:
                    assert client.type(command.key) == command.kind, push.description
                # BullMQ's script also reads keys it writes only in other states (paused, active).
                for kind, key in push.script.keys if push.script else ():
                    assert client.type(key) in (kind, "none"), push.description
        finally:
            client.close()
