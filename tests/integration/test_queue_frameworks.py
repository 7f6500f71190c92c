"""Celery, RQ, arq, Dramatiq, taskiq (list and stream brokers), Sidekiq and BullMQ tasks on the
tenant's broker, run by the frameworks' own workers.

Two operator replicas race for every slot (the redis slot lock on the harness's Redis); each
slot's message goes to another Redis, the tenant's broker, whose URL and password the job reads
from a Secret in its namespace. The framework's own worker (``celery worker``, ``rq worker``,
``arq``, ``dramatiq``, ``taskiq worker``, pinned in uv.lock; Debian's ``sidekiq``; BullMQ's
Worker, run by node) runs a task that records the slot id and scheduled time its message carried
(``queue_workers``, started by ``queue_framework_workers``): over a window of about 15 s every
slot runs exactly once, none missing, none twice, with the scheduled time of its slot and the
task id derived from it; so too for Celery, RQ and BullMQ when the replica that just pushed a
slot is SIGKILLed, the other going on alone. The claim and
the push are one script on the broker: the same slot pushed twice yields one message, arq's own
enqueue of the slot's job id is dropped by arq, and BullMQ itself drops a second copy of a job
id. A broker that is a Redis Cluster node (one node holding every hash slot) takes no push of
any format and makes the job ``Ready: False`` (``BrokerIsCluster``) until its Secret names a
standalone Redis; a broker named through Sentinel (``redis+sentinel://``) gets every slot's
Celery and RQ message on its primary, run once by the worker.
"""

import asyncio
import json
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
from queue_framework_workers import FRAMEWORKS, Worker, task_target
from queue_workers import arq_worker

from localcluster import LocalCluster, LocalRedis
from localcluster.sentinel import LocalSentinelRedis
from punctual.api import task_models
from punctual.redis_io import slot_keys
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
SECRET = "tenant-broker"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedis]:
    """The tenant's broker: a Redis of its own, with a password, not the lock's."""
    with LocalRedis(run_dir=tmp_path_factory.mktemp("broker"), password="tenant s3cret") as server:
        yield server


@pytest.fixture(scope="module")
def cluster_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedis]:
    """A Redis Cluster of one node holding every hash slot: a real Cluster node, answering a
    script whose keys hash to different slots with CROSSSLOT, as every node of a Cluster does."""
    run_dir = tmp_path_factory.mktemp("cluster-node")
    options = ["--cluster-enabled", "yes", "--cluster-config-file", str(run_dir / "nodes.conf")]
    with LocalRedis(run_dir=run_dir, options=options) as server:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        try:
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
            eventually(
                lambda: client.cluster("info")["cluster_state"] == "ok",
                timeout=30,
                what="the one-node cluster's state ok",
            )
        finally:
            client.close()
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


@pytest.fixture(params=FRAMEWORKS)
def worker(request: pytest.FixtureRequest, broker: LocalRedis, tmp_path: Path) -> Iterator[Worker]:
    started = Worker(request.param, broker.url, tmp_path)
    yield started
    started.stop()


def slot_of(slot_id: str) -> datetime:
    return from_millis(int(slot_id.rsplit("/", 1)[1]))


def apply_every_second_job(
    cluster: LocalCluster,
    url: str,
    namespace: str,
    framework: str,
    name: str,
    *,
    secret: str = SECRET,
) -> None:
    """The Secret ``secret`` naming the tenant's broker at ``url``, and a job every second
    calling the recording task of ``framework``'s worker on it (applied again: the Secret
    names ``url`` now, the job unchanged)."""
    apply(
        cluster,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": secret, "namespace": namespace},
            "stringData": {"url": url},
        },
        scheduled_job(
            namespace,
            name,
            {
                "every": "1s",
                "history": {"succeeded": 20, "failed": 20},
                "target": {"queue": task_target(framework, name, secret=secret)},
            },
        ),
    )


def claimed_at_the_broker(broker: LocalRedis, job: str) -> list[str]:
    client = redis.Redis.from_url(broker.url, decode_responses=True)
    try:
        return list(client.keys(f"{brokers.CLAIM_PREFIX}{job}/*"))
    finally:
        client.close()


def delete_then_drain(
    cluster: LocalCluster, broker: LocalRedis, worker: Worker, namespace: str, name: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """Delete the job and wait until the worker ran every slot claimed at the broker (the last
    ones drain): the worker's records of the job, and the claims."""
    job = f"{namespace}/{name}"
    delete(cluster, namespace, name)
    eventually(
        lambda: len(worker.recorded(job)) >= len(claimed_at_the_broker(broker, job)),
        timeout=30,
        what="the worker running every slot claimed at the broker",
    )
    return worker.recorded(job), claimed_at_the_broker(broker, job)


def lateness_ms(records: list[dict[str, Any]]) -> list[float]:
    """Scheduled time → task started, as the task recorded both, ascending."""
    return sorted(
        (line["startedAt"] - parse_time(line["scheduledTime"]).timestamp()) * 1000
        for line in records
    )


def every_second_between(slots: list[datetime]) -> list[datetime]:
    return every_slots(min(slots) - timedelta(seconds=1), max(slots), timedelta(seconds=1))


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
        apply_every_second_job(cluster, broker.url, module_namespace, framework, name)

        def window() -> list[dict[str, Any]] | None:
            slots = sorted(slot_of(line["slot"]) for line in worker.recorded(job))
            return worker.recorded(job) if slots and slots[-1] - slots[0] >= WINDOW else None

        eventually(window, timeout=90, what=f"{WINDOW} of slots run by {framework}'s worker")
        body = read(cluster, module_namespace, name)
        records, claimed = delete_then_drain(cluster, broker, worker, module_namespace, name)
        slots = [slot_of(line["slot"]) for line in records]
        duplicates = sum(count - 1 for count in Counter(slots).values())
        expected = every_second_between(slots)
        lateness = lateness_ms(records)
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


class TestEverySlotThroughAReplicaSigkill:
    @pytest.mark.parametrize("worker", ["celery", "rq", "bullmq"], indirect=True)
    def test_runs_exactly_once_when_the_replica_that_pushed_is_killed(  # noqa: PLR0917
        self,
        cluster: LocalCluster,
        redis_server: LocalRedis,
        broker: LocalRedis,
        scheduled_job_crd: list[Path],
        module_namespace: str,
        worker: Worker,
        tmp_path: Path,
    ) -> None:
        framework = worker.framework
        name = f"through-a-kill-{framework}"
        job = f"{module_namespace}/{name}"
        (tmp_path / "operators").mkdir()
        with Operators(
            cluster,
            tmp_path / "operators",
            namespace=module_namespace,
            replicas=2,
            lock_backend="redis",
            extra_args=["--sharding", "off"],  # the survivor arms every job already
            redis_url=redis_server.url,
        ) as operators:
            apply_every_second_job(cluster, broker.url, module_namespace, framework, name)
            eventually(lambda: len(worker.recorded(job)) >= 3, timeout=60, what="three runs")
            # Kill the replica that pushed a slot right after its push (its claim at the broker):
            # the next slot is a second away, so no push of the killed replica is half done.
            seen = len(claimed_at_the_broker(broker, job))
            pushed = eventually(
                lambda: sorted(claimed_at_the_broker(broker, job))[seen:],
                timeout=10,
                what="the next slot's claim at the broker",
                interval=0.02,
            )[-1].removeprefix(brokers.CLAIM_PREFIX)
            lock = redis.Redis.from_url(redis_server.url, decode_responses=True)
            try:
                holder = lock.get(slot_keys.slot_key(pushed)) or "?:"
            finally:
                lock.close()
            killed = holder.split(":")[0]
            operators[killed].kill()
            killed_at = slot_of(pushed)
            eventually(
                lambda: any(
                    slot_of(line["slot"]) >= killed_at + WINDOW for line in worker.recorded(job)
                ),
                timeout=60,
                what=f"{WINDOW} of slots after the kill",
            )
            records, claimed = delete_then_drain(cluster, broker, worker, module_namespace, name)
            survivors = {rid: lines for rid, lines in operators.problems().items() if rid != killed}
        slots = [slot_of(line["slot"]) for line in records]
        duplicates = sum(count - 1 for count in Counter(slots).values())
        expected = every_second_between(slots)
        lateness = lateness_ms([line for line in records if slot_of(line["slot"]) > killed_at])
        report(
            f"{framework} worker, 2 replicas, {killed} SIGKILLed after its push of {pushed}",
            [
                f"{len(records)} runs, {duplicates} duplicates, "
                f"{len(set(expected) - set(slots))} missing; after the kill, scheduled time → "
                f"task started: p50 {lateness[len(lateness) // 2]:.0f} ms, "
                f"max {lateness[-1]:.0f} ms"
            ],
        )
        assert duplicates == 0
        assert sorted(slots) == expected
        assert len(claimed) == len(records)
        assert survivors == {}, f"see {operators.logs()}"


class TestTheSameSlotPushedTwice:
    def test_yields_one_message(self, broker: LocalRedis, tmp_path: Path) -> None:
        celery_worker = Worker("celery", broker.url, tmp_path)
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


class TestARedisClusterBroker:
    def test_fails_every_formats_push_saying_so_and_writes_nothing(
        self, cluster_node: LocalRedis
    ) -> None:
        every_push = pushes_of_every_format(f"cluster/job/uid/{int(datetime.now().timestamp())}")

        async def push_each() -> list[str]:
            clients = brokers.Brokers(guard=addresses.AddressGuard())
            refused = []
            try:
                for push in every_push:
                    with pytest.raises(brokers.BrokerIsClusterError) as raised:
                        await clients.push(
                            namespace="cluster",
                            url=cluster_node.url,
                            slot_id=push.message_id,
                            push=push,
                        )
                    refused.append(str(raised.value))
            finally:
                await clients.close()
            return refused

        refused = asyncio.run(push_each())
        assert all("is a Redis Cluster node (ClusterCrossSlotError)" in text for text in refused)
        client = redis.Redis.from_url(cluster_node.url)
        try:
            assert client.dbsize() == 0
        finally:
            client.close()

    def test_makes_the_job_not_ready_until_its_secret_names_a_standalone_redis(
        self,
        cluster: LocalCluster,
        broker: LocalRedis,
        cluster_node: LocalRedis,
        module_namespace: str,
        two_replicas: Operators,
    ) -> None:
        name, secret = "on-a-cluster", "cluster-broker"

        def ready() -> dict[str, Any]:
            return condition(read(cluster, module_namespace, name), "Ready") or {}

        apply_every_second_job(
            cluster, cluster_node.url, module_namespace, "celery", name, secret=secret
        )
        not_ready = eventually(
            lambda: (found := ready()).get("reason") == "BrokerIsCluster" and found,
            timeout=60,
            what="Ready False, BrokerIsCluster",
        )
        assert not_ready["status"] == "False"
        assert "is a Redis Cluster node (ClusterCrossSlotError)" in not_ready["message"]
        assert f"(URL from Secret {module_namespace}/{secret} key url)" in not_ready["message"]
        assert "tenant s3cret" not in json.dumps(not_ready)

        apply_every_second_job(cluster, broker.url, module_namespace, "celery", name, secret=secret)
        ready_again = eventually(
            lambda: (found := ready()).get("status") == "True" and found,
            timeout=90,  # the Secret's value is cached for 30 s
            what="Ready True once the Secret names a standalone Redis",
        )
        delete(cluster, module_namespace, name)
        assert ready_again["reason"] == "Scheduled"
        client = redis.Redis.from_url(cluster_node.url)
        try:
            assert client.dbsize() == 0
        finally:
            client.close()


class TestABrokerBehindSentinel:
    @pytest.mark.parametrize("framework", ["celery", "rq"])
    def test_every_slot_lands_on_the_primary_and_runs_once_in_the_frameworks_worker(  # noqa: PLR0917
        self,
        cluster: LocalCluster,
        sentinel_redis: LocalSentinelRedis,
        module_namespace: str,
        two_replicas: Operators,
        tmp_path: Path,
        framework: str,
    ) -> None:
        primary = sentinel_redis.primary()
        name, secret = f"via-sentinel-{framework}", f"sentinel-broker-{framework}"
        job = f"{module_namespace}/{name}"
        worker = Worker(framework, primary.url, tmp_path)  # the worker reads the primary itself
        try:
            apply_every_second_job(
                cluster, sentinel_redis.url, module_namespace, framework, name, secret=secret
            )
            eventually(
                lambda: len(worker.recorded(job)) >= 5,
                timeout=60,
                what=f"five slots pushed through Sentinel and run by {framework}'s worker",
            )
            records, claimed = delete_then_drain(cluster, primary, worker, module_namespace, name)
        finally:
            worker.stop()
        slots = [slot_of(line["slot"]) for line in records]
        report(
            f"{framework} worker on a primary behind Sentinel",
            [f"{len(records)} runs, claimed at the primary {len(claimed)}"],
        )
        assert sorted(slots) == every_second_between(slots)  # none twice, none missing
        assert len(claimed) == len(records)
