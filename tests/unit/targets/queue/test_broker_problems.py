"""A queue job's broker found, at a run, to be a Redis Cluster node is a problem the job's Ready
condition shows (``BrokerIsCluster``, naming the Secret and its key), not only a failed run;
every other outcome of a run takes it back, and only a change is told."""

from datetime import UTC, datetime, timedelta
from typing import cast

import pytest

from punctual.api import queue_models
from punctual.contracts import records
from punctual.kube import secrets
from punctual.scheduling import slots
from punctual.targets import problems
from punctual.targets.queue import brokers, executor, pushes

JOB = slots.JobRef(namespace="reports", name="nightly", uid="uid-1")
SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
CONTEXT = records.RunContext(
    job=JOB,
    slot=SLOT,
    slot_id=slots.slot_id(JOB, SLOT),
    scheduled_time=SLOT,
    timeout=timedelta(minutes=1),
)
PUSH = pushes.Push(message_id="id-1", commands=(), description="celery task t on list celery")
CLUSTER = brokers.BrokerIsClusterError("broker redis://10.0.0.1:6379/0 is a Redis Cluster node")


class ScriptedBrokers:
    """Stands for ``Brokers``: each push answers the next of ``answers`` (raised if an error)."""

    def __init__(self, *answers: bool | Exception) -> None:
        self.answers = list(answers)

    async def push(self, **_: object) -> bool:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class SecretsOf:
    def __init__(self, data: dict[str, str]) -> None:
        self.data = data

    async def read(self, *, namespace: str, name: str) -> dict[str, str]:
        return self.data


def broker_executor(
    answers: ScriptedBrokers, found: problems.TargetProblems, data: dict[str, str] | None = None
) -> executor.BrokerExecutor:
    return executor.BrokerExecutor(
        lambda _context, _now: PUSH,
        brokers=cast(brokers.Brokers, answers),
        reader=cast(
            secrets.SecretReader, SecretsOf({"url": "redis://b"} if data is None else data)
        ),
        namespace="reports",
        source=queue_models.BrokerSource(secret_name="broker", key="url"),
        problems=found,
    )


class TestARunTellsWhatItFoundOfTheBroker:
    @pytest.mark.parametrize(
        ("answer", "data", "reason"),
        [
            (CLUSTER, None, "BrokerIsCluster"),
            (True, None, None),
            (False, None, None),
            (brokers.BrokerUnavailableError("broker redis://b: no answer"), None, None),
            (brokers.BrokerRefusedError("broker redis://b: link-local"), None, None),
            (True, {}, None),
        ],
        ids=["a cluster node", "pushed", "pushed before", "unavailable", "refused", "no key"],
    )
    async def test_only_a_cluster_node_is_a_problem(
        self, answer: bool | Exception, data: dict[str, str] | None, reason: str | None
    ) -> None:
        found = problems.TargetProblems()
        await broker_executor(ScriptedBrokers(answer), found, data)(CONTEXT)
        problem = found.of(JOB)
        assert (problem.reason if problem else None) == reason

    async def test_the_problem_names_the_secret_and_its_key_and_fails_the_run(self) -> None:
        found = problems.TargetProblems()
        outcome = await broker_executor(ScriptedBrokers(CLUSTER), found)(CONTEXT)
        assert not outcome.succeeded
        assert found.of(JOB) == problems.Problem(
            "BrokerIsCluster",
            "broker redis://10.0.0.1:6379/0 is a Redis Cluster node "
            "(URL from Secret reports/broker key url)",
        )
        assert outcome.message == found.of(JOB).message  # type: ignore[union-attr]

    async def test_a_later_run_past_it_takes_it_back_and_each_change_is_told_once(self) -> None:
        found = problems.TargetProblems()
        told: list[problems.Problem | None] = []
        found.subscribe(lambda job: told.append(found.of(job)))
        run = broker_executor(ScriptedBrokers(CLUSTER, CLUSTER, True, True), found)
        for _ in range(4):
            await run(CONTEXT)
        assert [problem.reason if problem else None for problem in told] == [
            "BrokerIsCluster",
            None,
        ]

    def test_forgetting_a_job_tells_no_one(self) -> None:
        found = problems.TargetProblems()
        told: list[slots.JobRef] = []
        found.found(JOB, problems.Problem("BrokerIsCluster", "m"))
        found.subscribe(told.append)
        found.forget(JOB)
        assert found.of(JOB) is None
        assert told == []
