"""A sidekiq job: the JSON Sidekiq's own client pushes onto ``queue:<name>``, with the queue's
name added to ``queues``; the jid derived from the slot, the slot and its scheduled time as the
job's own fields, positional arguments only."""

import json
from datetime import UTC, datetime

import pytest

from punctual.api import queue_models, spec_parsing, task_models
from punctual.scheduling import slots
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets import addresses
from punctual.targets.queue import brokers, pushes, sidekiq_jobs, wiring

SLOT = "reports/nightly/0b6f2c1e/1796002200000"
SCHEDULED = datetime(2026, 11, 30, 1, 30, 0, 250_000, tzinfo=UTC)
NOW = datetime(2026, 11, 30, 1, 30, 0, 262_500, tzinfo=UTC)
BROKER = {"secretName": "broker", "key": "url"}


def sidekiq_job(**fields: object) -> task_models.SidekiqJob:
    return task_models.SidekiqJob.model_validate({"class": "Reports::NightlyJob", **fields})


def pushed_item(job: task_models.SidekiqJob) -> tuple[pushes.Push, dict[str, object]]:
    push = sidekiq_jobs.sidekiq_push(job, slot_id=SLOT, scheduled_time=SCHEDULED, now=NOW)
    return push, json.loads(push.commands[1].arguments[0])


class TestASidekiqJob:
    def test_is_pushed_as_sidekiqs_client_pushes_it(self) -> None:
        push, _ = pushed_item(sidekiq_job(queue="reports"))
        sadd, lpush = push.commands
        assert (sadd.kind, sadd.name, sadd.key, sadd.arguments) == (
            "set",
            "SADD",
            "queues",
            ("reports",),
        )
        assert (lpush.kind, lpush.name, lpush.key) == ("list", "LPUSH", "queue:reports")
        assert push.description == f"sidekiq job {push.message_id} on list 'queue:reports'"

    def test_carries_the_class_the_arguments_and_the_jid_of_the_slot(self) -> None:
        push, item = pushed_item(sidekiq_job(arguments={"args": [7, "eu", {"dry": True}]}))
        assert item["class"] == "Reports::NightlyJob"
        assert item["args"] == [7, "eu", {"dry": True}]
        assert item["queue"] == "default"
        assert item["jid"] == push.message_id == pushes.message_id(SLOT)

    def test_carries_the_slot_and_its_scheduled_time_as_job_fields(self) -> None:
        _, item = pushed_item(sidekiq_job())
        assert item["punctual_slot"] == SLOT
        assert item["punctual_scheduled_time"] == "2026-11-30T01:30:00.250Z"

    def test_is_created_and_enqueued_at_the_push_in_unix_seconds(self) -> None:
        _, item = pushed_item(sidekiq_job())
        assert item["created_at"] == item["enqueued_at"] == NOW.timestamp()

    @pytest.mark.parametrize(
        ("retry", "written"), [(None, True), (0, 0), (3, 3)], ids=["default", "never", "three"]
    )
    def test_retries_as_the_worker_defaults_unless_told(
        self, retry: int | None, written: object
    ) -> None:
        _, item = pushed_item(sidekiq_job(retry=retry))
        assert item["retry"] is written if isinstance(written, bool) else item["retry"] == written

    def test_has_no_arguments_when_none_are_given(self) -> None:
        _, item = pushed_item(sidekiq_job())
        assert item["args"] == []


class TestASidekiqTarget:
    @pytest.mark.parametrize(
        ("job", "problem"),
        [
            ({"class": "reports_job"}, "should match pattern"),
            ({"class": "Reports::"}, "should match pattern"),
            ({"class": "J", "arguments": {"kwargs": {"a": 1}}}, "positional args only"),
            ({"class": "J", "retry": -1}, "greater than or equal to 0"),
            ({"class": "J", "retry": True}, "valid integer"),
        ],
    )
    def test_refuses_what_sidekiq_cannot_take(self, job: dict[str, object], problem: str) -> None:
        with pytest.raises((InvalidSpecError, ValueError), match=problem):
            queue_models.QueueTarget.model_validate({"sidekiq": job, "brokerFrom": BROKER})

    def test_needs_the_brokers_secret(self) -> None:
        with pytest.raises(ValueError, match="needs the broker's Secret"):
            queue_models.QueueTarget.model_validate({"sidekiq": {"class": "J"}})

    def test_takes_the_class_by_its_ruby_name(self) -> None:
        target = queue_models.QueueTarget.model_validate(
            {"sidekiq": {"class": "Reports::NightlyJob", "retry": 5}, "brokerFrom": BROKER}
        )
        assert target.sidekiq == sidekiq_job(retry=5)
        assert target.model_dump(exclude_none=True)["sidekiq"]["class"] == "Reports::NightlyJob"


class TestASidekiqJobsWiring:
    async def test_goes_to_the_brokers_queue_and_says_so(self) -> None:
        class NoSecrets:
            async def read(self, *, namespace: str, name: str) -> dict[str, str]:
                return {}

        queues = wiring.QueueTargets(
            brokers=brokers.Brokers(guard=addresses.AddressGuard()), secrets=NoSecrets()
        )
        spec = spec_parsing.parse_spec(
            {
                "every": "1m",
                "target": {
                    "queue": {
                        "sidekiq": {"class": "Reports::NightlyJob", "queue": "reports"},
                        "brokerFrom": BROKER,
                    }
                },
            }
        )
        wired = queues.wire(slots.JobRef(namespace="reports", name="nightly", uid="0b6f2c1e"), spec)
        assert wired.lock is None
        assert wired.destination == (
            "sidekiq job Reports::NightlyJob on queue reports, on the broker of Secret "
            "reports/broker key url"
        )
