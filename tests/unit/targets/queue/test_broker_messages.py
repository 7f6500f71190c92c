"""The messages a celery or rq job pushes: Celery's protocol 2 in kombu's envelope, and the job
hash read back by RQ's own ``Job.restore``. JSON only, the slot's id
and scheduled time carried, the message id derived from the slot."""

import base64
import json
import uuid
import zlib
from datetime import UTC, datetime

import pytest
import redis
from rq.job import Job
from rq.serializers import JSONSerializer

from punctual.api import models
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets.queue import celery_messages, pushes, rq_jobs

SLOT = "reports/nightly/0b6f2c1e/1796002200000"
SCHEDULED = datetime(2026, 11, 30, 1, 30, 0, 250_000, tzinfo=UTC)


class TestTheMessageId:
    def test_is_a_uuid_derived_from_the_slot_the_same_every_time(self) -> None:
        first = pushes.message_id(SLOT)
        assert first == pushes.message_id(SLOT)
        assert uuid.UUID(first).version == 5

    def test_differs_between_slots(self) -> None:
        assert pushes.message_id(SLOT) != pushes.message_id(SLOT[:-1] + "1")


def celery_task(**fields: object) -> models.CeleryTask:
    return models.CeleryTask.model_validate({"task": "reports.tasks.nightly", **fields})


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
        job_spec = models.RqJob.model_validate(
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
            models.RqJob.model_validate({"function": "m.f"}),
            slot_id=SLOT,
            scheduled_time=SCHEDULED,
            now=SCHEDULED,
        )
        fields = push.commands[0].arguments
        data = fields[fields.index("data") + 1]
        assert isinstance(data, bytes)
        assert json.loads(zlib.decompress(data)) == ["m.f", None, [], {}]


BROKER = {"secretName": "broker", "key": "url"}


class TestAQueueTargetsFormat:
    @pytest.mark.parametrize(
        ("target", "problem"),
        [
            ({"celery": {"task": "t"}}, "every format but stream needs the broker's Secret"),
            ({"stream": "s", "brokerFrom": BROKER}, "brokerFrom is for the other formats"),
            (
                {"celery": {"task": "t"}, "rq": {"function": "f"}, "brokerFrom": BROKER},
                "exactly one of stream, celery, rq, sidekiq or bullmq",
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
            models.QueueTarget.model_validate(target)

    def test_takes_a_task_on_a_broker(self) -> None:
        target = models.QueueTarget.model_validate(
            {"celery": {"task": "reports.tasks.nightly"}, "brokerFrom": BROKER}
        )
        assert target.celery is not None
        assert target.celery.queue == "celery"
