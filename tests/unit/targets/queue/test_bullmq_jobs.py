"""A bullmq job: BullMQ 5's addStandardJob for a plain ``queue.add(name, data, {jobId})``, as
the framework's own script run after the slot's claim: its keys (each with the type it must
hold), the job id derived from the slot, the job's data as given, the slot in its opts."""

import json
from datetime import UTC, datetime

import pytest

from punctual.api import queue_models, task_models
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets.queue import brokers, bullmq_jobs, pushes

SLOT = "reports/nightly/0b6f2c1e/1796002200000"
SCHEDULED = datetime(2026, 11, 30, 1, 30, 0, 250_000, tzinfo=UTC)
NOW = datetime(2026, 11, 30, 1, 30, 0, 262_000, tzinfo=UTC)
BROKER = {"secretName": "broker", "key": "url"}


def bullmq_job(**fields: object) -> task_models.BullmqJob:
    return task_models.BullmqJob.model_validate({"queue": "reports", "name": "nightly", **fields})


def pushed(job: task_models.BullmqJob) -> pushes.Script:
    push = bullmq_jobs.bullmq_push(job, slot_id=SLOT, scheduled_time=SCHEDULED, now=NOW)
    assert push.commands == ()
    assert push.script is not None
    return push.script


class TestABullmqJob:
    def test_is_added_by_bullmqs_own_writes_on_the_queues_keys(self) -> None:
        script = pushed(bullmq_job())
        job_id = pushes.message_id(SLOT)
        assert script.keys == (
            ("list", "bull:reports:wait"),
            ("list", "bull:reports:paused"),
            ("hash", "bull:reports:meta"),
            ("string", "bull:reports:id"),
            ("list", "bull:reports:active"),
            ("stream", "bull:reports:events"),
            ("zset", "bull:reports:marker"),
            ("hash", f"bull:reports:{job_id}"),
        )
        assert script.body == bullmq_jobs.BODY

    def test_carries_the_name_the_data_as_given_and_the_time_it_was_added(self) -> None:
        script = pushed(bullmq_job(data={"args": [7], "region": "eu"}))
        job_id, name, data, _opts, timestamp = script.arguments
        assert (job_id, name) == (pushes.message_id(SLOT), "nightly")
        assert json.loads(str(data)) == {"args": [7], "region": "eu"}
        assert timestamp == 1796002200262

    def test_has_empty_data_when_none_is_given(self) -> None:
        assert pushed(bullmq_job()).arguments[2] == "{}"

    def test_its_opts_carry_the_job_id_and_the_slot(self) -> None:
        opts = json.loads(str(pushed(bullmq_job()).arguments[3]))
        assert opts == {
            "jobId": pushes.message_id(SLOT),
            "attempts": 0,
            "punctual_slot": SLOT,
            "punctual_scheduled_time": "2026-11-30T01:30:00.250Z",
        }

    def test_its_opts_carry_the_attempts_and_removals_given(self) -> None:
        job = bullmq_job(attempts=3, removeOnComplete=100, removeOnFail=0)
        opts = json.loads(str(pushed(job).arguments[3]))
        assert (opts["attempts"], opts["removeOnComplete"], opts["removeOnFail"]) == (3, 100, 0)

    def test_is_sent_after_the_claim_with_its_keys_types_first(self) -> None:
        push = bullmq_jobs.bullmq_push(
            bullmq_job(), slot_id=SLOT, scheduled_time=SCHEDULED, now=NOW
        )
        assert push.script is not None
        keys, arguments = brokers.script_arguments(push)
        assert keys == [key for _, key in push.script.keys]
        assert arguments == [8, *(kind for kind, _ in push.script.keys), *push.script.arguments]
        assert push.description == f"bullmq job {push.message_id} on queue 'reports'"


class TestABullmqTarget:
    @pytest.mark.parametrize(
        ("job", "problem"),
        [
            ({"queue": "a:b", "name": "n"}, "should match pattern"),
            ({"queue": "q", "name": "line\nbreak"}, "should match pattern"),
            ({"queue": "q", "name": "n", "attempts": 0}, "greater than or equal to 1"),
            ({"queue": "q", "name": "n", "removeOnComplete": -1}, "greater than or equal to 0"),
            ({"queue": "q", "name": "n", "data": [1]}, "valid dictionary"),
            ({"name": "n"}, "queue"),
        ],
    )
    def test_refuses_what_bullmq_cannot_take(self, job: dict[str, object], problem: str) -> None:
        with pytest.raises((InvalidSpecError, ValueError), match=problem):
            queue_models.QueueTarget.model_validate({"bullmq": job, "brokerFrom": BROKER})

    def test_is_one_format_among_the_others(self) -> None:
        with pytest.raises(
            ValueError,
            match="exactly one of stream, celery, rq, arq, dramatiq, taskiq, sidekiq or bullmq",
        ):
            queue_models.QueueTarget.model_validate(
                {
                    "bullmq": {"queue": "q", "name": "n"},
                    "sidekiq": {"class": "J"},
                    "brokerFrom": BROKER,
                }
            )
