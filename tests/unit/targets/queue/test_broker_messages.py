"""The messages a task's job pushes: Celery's protocol 2 in kombu's envelope, and the job hash
read back by RQ's own ``Job.restore``, arq's job, Dramatiq's message and taskiq's message each
read back by the framework's own decoder. JSON only, the slot's id and scheduled time carried,
the message id derived from the slot."""

import base64
import json
import uuid
import zlib
from datetime import UTC, datetime, timedelta

import pytest
import redis
from arq.jobs import deserialize_job_raw
from dramatiq.message import Message
from rq.job import Job
from rq.serializers import JSONSerializer
from taskiq.message import TaskiqMessage

from punctual.api import queue_models, task_models
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets.queue import (
    arq_jobs,
    celery_messages,
    dramatiq_messages,
    pushes,
    rq_jobs,
    taskiq_messages,
)

SLOT = "reports/nightly/0b6f2c1e/1796002200000"
SCHEDULED = datetime(2026, 11, 30, 1, 30, 0, 250_000, tzinfo=UTC)


class TestTheMessageId:
    def test_is_a_uuid_derived_from_the_slot_the_same_every_time(self) -> None:
        first = pushes.message_id(SLOT)
        assert first == pushes.message_id(SLOT)
        assert uuid.UUID(first).version == 5

    def test_differs_between_slots(self) -> None:
        assert pushes.message_id(SLOT) != pushes.message_id(SLOT[:-1] + "1")


def celery_task(**fields: object) -> task_models.CeleryTask:
    return task_models.CeleryTask.model_validate({"task": "reports.tasks.nightly", **fields})


class TestACeleryMessage:
    def test_is_protocol_2_json_in_kombus_envelope(self) -> None:
        task = celery_task(arguments={"args": [7, "eu"], "kwargs": {"dry": True}})
        push = celery_messages.celery_push(task, slot_id=SLOT, scheduled_time=SCHEDULED)
        (command,) = push.commands
        assert (command.kind, command.name, command.key) == ("list", "LPUSH", "celery")
        envelope = json.loads(command.arguments[0])
        assert envelope["content-type"] == "application/json"
        assert envelope["properties"]["body_encoding"] == "base64"
        assert envelope["properties"]["delivery_info"] == {"exchange": "", "routing_key": "celery"}
        args, kwargs, embed = json.loads(base64.b64decode(envelope["body"]))
        assert (args, kwargs) == ([7, "eu"], {"dry": True})
        assert embed == {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
        headers = envelope["headers"]
        assert headers["task"] == "reports.tasks.nightly"
        assert headers["id"] == headers["root_id"] == pushes.message_id(SLOT) == push.message_id
        assert headers["punctual_slot"] == SLOT
        assert headers["punctual_scheduled_time"] == "2026-11-30T01:30:00.250Z"

    def test_expires_counts_from_the_scheduled_time(self) -> None:
        push = celery_messages.celery_push(
            celery_task(expires="90s"), slot_id=SLOT, scheduled_time=SCHEDULED
        )
        headers = json.loads(push.commands[0].arguments[0])["headers"]
        assert headers["expires"] == "2026-11-30T01:31:30.250000+00:00"

    @pytest.mark.parametrize(
        ("priority", "key"),
        [(0, "celery"), (2, "celery"), (3, "celery\x06\x163"), (8, "celery\x06\x166"),
         (9, "celery\x06\x169")],
    )  # fmt: skip
    def test_goes_to_the_list_of_its_priority_step_as_kombu_puts_it(
        self, priority: int, key: str
    ) -> None:
        push = celery_messages.celery_push(
            celery_task(priority=priority), slot_id=SLOT, scheduled_time=SCHEDULED
        )
        assert push.commands[0].key == key


class TestAnRqJob:
    def test_is_the_hash_rq_restores_with_its_json_serializer(self) -> None:
        job_spec = task_models.RqJob.model_validate(
            {
                "function": "reports.jobs.nightly",
                "arguments": {"args": [1], "kwargs": {"region": "eu"}},
                "queue": "reports",
                "timeout": "1m30s",
            }
        )
        now = datetime(2026, 11, 30, 1, 30, 1, tzinfo=UTC)
        push = rq_jobs.rq_push(job_spec, slot_id=SLOT, scheduled_time=SCHEDULED, now=now)
        hset, sadd, rpush = push.commands
        job_id = pushes.message_id(SLOT)
        assert (hset.name, hset.key) == ("HSET", f"rq:job:{job_id}")
        assert (sadd.name, sadd.key, sadd.arguments) == ("SADD", "rq:queues", ("rq:queue:reports",))
        assert (rpush.name, rpush.key, rpush.arguments) == ("RPUSH", "rq:queue:reports", (job_id,))
        fields = hset.arguments
        raw = {
            str(name).encode(): value if isinstance(value, bytes) else str(value).encode()
            for name, value in zip(fields[::2], fields[1::2], strict=True)
        }
        job = Job(job_id, connection=redis.Redis(), serializer=JSONSerializer)
        job.restore(raw)
        assert job.func_name == "reports.jobs.nightly"
        assert (job.args, job.kwargs) == ([1], {"region": "eu"})
        assert job.origin == "reports"
        assert job.timeout == 90
        assert job.get_status(refresh=False) == "queued"
        assert job.meta == {
            "punctual_slot": SLOT,
            "punctual_scheduled_time": "2026-11-30T01:30:00.250Z",
        }
        assert job.enqueued_at == now.replace(tzinfo=UTC)

    def test_data_is_json_never_pickle(self) -> None:
        push = rq_jobs.rq_push(
            task_models.RqJob.model_validate({"function": "m.f"}),
            slot_id=SLOT,
            scheduled_time=SCHEDULED,
            now=SCHEDULED,
        )
        fields = push.commands[0].arguments
        data = fields[fields.index("data") + 1]
        assert isinstance(data, bytes)
        assert json.loads(zlib.decompress(data)) == ["m.f", None, [], {}]


NOW = datetime(2026, 11, 30, 1, 30, 1, tzinfo=UTC)


class TestAnArqJob:
    def test_is_the_job_arq_reads_with_a_json_deserializer_due_at_the_scheduled_time(
        self,
    ) -> None:
        job = task_models.ArqJob.model_validate(
            {"function": "nightly", "arguments": {"args": [1], "kwargs": {"region": "eu"}}}
        )
        push = arq_jobs.arq_push(job, slot_id=SLOT, scheduled_time=SCHEDULED, now=NOW)
        stored, queued = push.commands
        job_id = pushes.message_id(SLOT)
        assert (stored.kind, stored.name, stored.key) == ("string", "SET", f"arq:job:{job_id}")
        data, px, expires = stored.arguments
        assert (px, expires) == ("PX", 24 * 60 * 60 * 1000)
        assert isinstance(data, str)
        function, args, kwargs, job_try, enqueued = deserialize_job_raw(
            data.encode(), deserializer=json.loads
        )
        assert (function, args, kwargs, job_try) == ("nightly", [1], {"region": "eu"}, None)
        assert enqueued == int(NOW.timestamp() * 1000)
        assert json.loads(data)["punctual_slot"] == SLOT
        assert json.loads(data)["punctual_scheduled_time"] == "2026-11-30T01:30:00.250Z"
        score = int(SCHEDULED.timestamp() * 1000)
        assert (queued.kind, queued.name, queued.key) == ("zset", "ZADD", "arq:queue")
        assert queued.arguments == (score, job_id)

    def test_a_job_pushed_ahead_of_its_time_lives_a_day_past_it(self) -> None:
        job = task_models.ArqJob.model_validate({"function": "nightly", "queue": "reports"})
        early = SCHEDULED - timedelta(seconds=2)
        push = arq_jobs.arq_push(job, slot_id=SLOT, scheduled_time=SCHEDULED, now=early)
        assert push.commands[0].arguments[2] == 2000 + 24 * 60 * 60 * 1000
        assert push.commands[1].key == "reports"


class TestADramatiqMessage:
    def test_is_the_message_dramatiqs_redis_broker_enqueues_with_the_slot_in_its_options(
        self,
    ) -> None:
        spec = task_models.DramatiqMessage.model_validate(
            {"actor": "nightly", "queue": "reports", "arguments": {"args": [7], "kwargs": {}}}
        )
        push = dramatiq_messages.dramatiq_push(
            spec, slot_id=SLOT, scheduled_time=SCHEDULED, now=NOW
        )
        stored, queued = push.commands
        message_id = pushes.message_id(SLOT)
        assert (stored.kind, stored.name, stored.key) == ("hash", "HSET", "dramatiq:reports.msgs")
        field, data = stored.arguments
        assert field == message_id
        assert (queued.kind, queued.name, queued.key) == ("list", "RPUSH", "dramatiq:reports")
        assert queued.arguments == (message_id,)
        assert isinstance(data, str)
        message = Message.decode(data.encode())
        assert (message.queue_name, message.actor_name) == ("reports", "nightly")
        assert (message.args, message.kwargs) == ((7,), {})
        assert message.message_id == message_id
        assert message.message_timestamp == int(NOW.timestamp() * 1000)
        assert message.options == {
            "redis_message_id": message_id,
            "punctual_slot": SLOT,
            "punctual_scheduled_time": "2026-11-30T01:30:00.250Z",
        }


def taskiq_task(**fields: object) -> task_models.TaskiqTask:
    return task_models.TaskiqTask.model_validate(
        {"task": "reports.tasks:nightly", "brokerClass": "ListQueueBroker", **fields}
    )


class TestATaskiqMessage:
    def test_is_the_message_taskiq_reads_with_its_labels_typed(self) -> None:
        task = taskiq_task(
            arguments={"args": ["eu"], "kwargs": {"dry": True}},
            labels={"max_retries": 3, "retry_on_error": False, "team": "reports"},
        )
        push = taskiq_messages.taskiq_push(task, slot_id=SLOT, scheduled_time=SCHEDULED)
        (command,) = push.commands
        assert (command.kind, command.name, command.key) == ("list", "LPUSH", "taskiq")
        message = TaskiqMessage.model_validate(json.loads(command.arguments[0]))
        message.parse_labels()
        assert message.task_id == pushes.message_id(SLOT) == push.message_id
        assert message.task_name == "reports.tasks:nightly"
        assert (message.args, message.kwargs) == (["eu"], {"dry": True})
        assert message.labels == {
            "max_retries": 3,
            "retry_on_error": False,
            "team": "reports",
            "punctual_slot": SLOT,
            "punctual_scheduled_time": "2026-11-30T01:30:00.250Z",
        }

    def test_goes_to_the_stream_as_its_data_field_for_a_stream_broker(self) -> None:
        task = taskiq_task(brokerClass="RedisStreamBroker", queue="reports")
        (command,) = taskiq_messages.taskiq_push(
            task, slot_id=SLOT, scheduled_time=SCHEDULED
        ).commands
        assert (command.kind, command.name, command.key) == ("stream", "XADD", "reports")
        auto_id, field, data = command.arguments
        assert (auto_id, field) == ("*", "data")
        assert isinstance(data, str)
        assert json.loads(data)["task_name"] == "reports.tasks:nightly"

    @pytest.mark.parametrize(
        ("labels", "problem"),
        [
            ({"punctual_slot": "mine"}, "set by the operator on every message"),
            ({"delay": 1.5}, "a string, an integer or a boolean"),
            ({"nested": {"a": 1}}, "a string, an integer or a boolean"),
            ({f"l{index}": index for index in range(33)}, "at most 32 labels"),
        ],
    )
    def test_refuses_labels_taskiq_cannot_carry(
        self, labels: dict[str, object], problem: str
    ) -> None:
        with pytest.raises((InvalidSpecError, ValueError), match=problem):
            taskiq_task(labels=labels)


BROKER = {"secretName": "broker", "key": "url"}


class TestAQueueTargetsFormat:
    @pytest.mark.parametrize(
        ("target", "problem"),
        [
            ({"celery": {"task": "t"}}, "every format but stream needs the broker's Secret"),
            ({"dramatiq": {"actor": "a"}}, "every format but stream needs the broker's Secret"),
            (
                {"bullmq": {"queue": "q", "name": "n"}},
                "every format but stream needs the broker's Secret",
            ),
            ({"stream": "s", "brokerFrom": BROKER}, "brokerFrom is for the other formats"),
            (
                {"celery": {"task": "t"}, "rq": {"function": "f"}, "brokerFrom": BROKER},
                "exactly one of stream, celery, rq, arq, dramatiq, taskiq, sidekiq or bullmq",
            ),
            (
                {"arq": {"function": "f"}, "dramatiq": {"actor": "a"}, "brokerFrom": BROKER},
                "exactly one of stream, celery, rq, arq, dramatiq, taskiq, sidekiq or bullmq",
            ),
            (
                {
                    "taskiq": {"task": "m:t", "brokerClass": "ListQueueBroker"},
                    "sidekiq": {"class": "A"},
                    "brokerFrom": BROKER,
                },
                "exactly one of stream, celery, rq, arq, dramatiq, taskiq, sidekiq or bullmq",
            ),
            (
                {"taskiq": {"task": "m:t"}, "brokerFrom": BROKER},
                "brokerClass",
            ),
            (
                {"celery": {"task": "t"}, "brokerFrom": BROKER, "payload": {}},
                "payload and maxLen are only for stream",
            ),
            (
                {"celery": {"task": "t", "arguments": {"argv": []}}, "brokerFrom": BROKER},
                "only args and kwargs, not argv",
            ),
            (
                {"rq": {"function": "f", "arguments": {"args": {}}}, "brokerFrom": BROKER},
                "a list of at most 64 JSON values",
            ),
        ],
    )
    def test_refuses_what_cannot_be_sent(self, target: dict[str, object], problem: str) -> None:
        with pytest.raises((InvalidSpecError, ValueError), match=problem):
            queue_models.QueueTarget.model_validate(target)

    def test_takes_a_task_on_a_broker(self) -> None:
        target = queue_models.QueueTarget.model_validate(
            {"celery": {"task": "reports.tasks.nightly"}, "brokerFrom": BROKER}
        )
        assert target.celery is not None
        assert target.celery.queue == "celery"
