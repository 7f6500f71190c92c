"""``LastRunSucceeded`` tells whether the job's last run worked, for users who wait on it
(``kubectl wait --for=condition=LastRunSucceeded``): True or False after each run that started,
its reason the run's result and its message the run's; Unknown (``NoRunYet``) before any.

It follows the conventions of Ready and Suspended (the transition time moves only with the
status, each condition names the generation it was computed from), it is decided by the newest
run whichever replica wrote it, slots that never ran leave it as it is, and it goes out with
the run records that make it: never a write of its own, never an urgent one.
"""

import contextlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual.api import condition_models, status_models
from punctual.contracts import records
from punctual.scheduling import timeline
from punctual.stores import status as status_store
from status_api_double import JOB, FakeStatusApi, scheduled_job, store_on

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
SECOND = timedelta(seconds=1)
READY = status_store.Condition(type="Ready", status=True, reason="Scheduled", message="armed")
R = records.RunResult
NEVER_RAN = [R.SKIPPED_OVERLAP, R.MISSED]


def run(
    result: records.RunResult,
    slot: datetime = SLOT,
    *,
    message: str = "",
    finished_after: timedelta = timedelta(milliseconds=40),
) -> records.RunRecord:
    """The record of ``slot`` ending in ``result`` (started at the slot unless it never ran)."""
    ran = result not in NEVER_RAN
    return records.RunRecord(
        slot=slot,
        scheduled_time=slot,
        result=result,
        started_at=slot if ran else None,
        finished_at=slot + finished_after if ran else None,
        message=message,
        replica="r1",
    )


@dataclass
class Replica:
    """One replica's status store on ``api``, with a wall clock the test moves."""

    api: FakeStatusApi
    wall: list[datetime] = field(default_factory=lambda: [SLOT])
    clock: list[float] = field(default_factory=lambda: [0.0])

    def __post_init__(self) -> None:
        self.store = store_on(self.api, wall=lambda: self.wall[0], clock=lambda: self.clock[0])

    async def write(self, *runs: records.RunRecord, at: datetime | None = None) -> None:
        """Report ``runs`` and write everything pending (at ``at`` on the wall clock)."""
        self.wall[0] = at or self.wall[0]
        for record in runs:
            self.store.run_finished(JOB, record)
        await self.store._flush(due_only=False)

    def condition(self) -> dict[str, Any] | None:
        return condition_of(self.api.status)


def condition_of(status: dict[str, Any]) -> dict[str, Any] | None:
    for found in status.get("conditions") or []:
        if found["type"] == "LastRunSucceeded":
            return dict(found)
    return None


def said(condition: dict[str, Any] | None) -> tuple[str, str, str] | None:
    """What ``condition`` says: its status, reason and message."""
    if condition is None:
        return None
    return condition["status"], condition["reason"], condition["message"]


def on_a_job(**status_fields: Any) -> Replica:
    return Replica(FakeStatusApi(scheduled_job(observedGeneration=1, **status_fields)))


class TestBeforeTheFirstRun:
    async def test_the_first_write_of_a_job_says_unknown_no_run_yet(self) -> None:
        replica = Replica(FakeStatusApi(scheduled_job()))
        replica.store.set_condition(JOB, READY, generation=1)

        await replica.write()

        assert replica.condition() == {
            "type": "LastRunSucceeded",
            "status": "Unknown",
            "reason": "NoRunYet",
            "message": "no run has finished yet",
            "lastTransitionTime": "2026-11-30T01:30:00Z",
            "observedGeneration": 1,
        }
        status_models.ScheduledJobStatus.model_validate(replica.api.status)

    async def test_a_status_with_a_last_run_but_no_condition_gets_it_from_that_run(self) -> None:
        """A status an operator without the condition wrote: the next write says it."""
        failed = {"slot": "2026-11-30T01:29:00Z", "scheduledTime": "2026-11-30T01:29:00Z"}
        replica = on_a_job(lastRun={**failed, "result": "Failed", "message": "HTTP 503"})

        await replica.write(run(R.MISSED))

        assert said(replica.condition()) == ("False", "Failed", "HTTP 503")


class TestAfterEachRun:
    @pytest.mark.parametrize(
        ("result", "message", "status"),
        [
            (R.SUCCEEDED, "HTTP 204", "True"),
            (R.FAILED, "HTTP 500 Internal Server Error", "False"),
            (R.TIMED_OUT, "timed out after 10s", "False"),
            (R.LOST, "replica r2 stopped renewing the run's lease (attempt 1)", "False"),
        ],
    )
    async def test_the_status_says_whether_it_succeeded_the_reason_its_result_the_message_its(
        self, result: records.RunResult, message: str, status: str
    ) -> None:
        replica = on_a_job()

        await replica.write(run(result, message=message))

        assert said(replica.condition()) == (status, str(result), message)
        assert replica.api.status["lastRun"]["result"] == result  # the Last Result column
        status_models.ScheduledJobStatus.model_validate(replica.api.status)

    async def test_the_newest_of_the_runs_one_write_carries_decides(self) -> None:
        replica = on_a_job()

        await replica.write(
            run(R.FAILED, SLOT + 2 * SECOND, message="second"),
            run(R.SUCCEEDED, SLOT + SECOND, message="first"),
        )

        assert said(replica.condition()) == ("False", "Failed", "second")

    async def test_a_message_longer_than_a_condition_may_hold_is_cut_to_it(self) -> None:
        replica = on_a_job()

        await replica.write(run(R.FAILED, message="x" * 40_000))

        condition = replica.condition()
        assert condition is not None
        assert len(condition["message"]) == condition_models.CONDITION_MESSAGE_MAX
        assert condition["message"].endswith("x…")
        assert len(replica.api.status["lastRun"]["message"]) == 40_000
        status_models.ScheduledJobStatus.model_validate(replica.api.status)


class TestSlotsThatNeverRan:
    """Nothing ran: whether the last *run* worked is what it was."""

    @pytest.mark.parametrize("result", NEVER_RAN)
    async def test_leave_it_as_it_was_and_are_counted(self, result: records.RunResult) -> None:
        replica = on_a_job()
        await replica.write(run(R.FAILED, message="HTTP 500"))
        before = replica.condition()

        await replica.write(run(result, SLOT + SECOND), at=SLOT + 5 * SECOND)

        assert replica.condition() == before
        assert replica.api.status["lastRun"]["result"] == "Failed"
        assert replica.api.status["counts"]["failed"] == 1
        assert sum(replica.api.status["counts"].values()) == 2

    @pytest.mark.parametrize("result", NEVER_RAN)
    async def test_before_any_run_leave_it_unknown(self, result: records.RunResult) -> None:
        replica = on_a_job()

        await replica.write(run(result))

        assert said(replica.condition()) == ("Unknown", "NoRunYet", "no run has finished yet")


class TestCancelledRuns:
    """A run the operator ended (replaced, its job deleted, the operator stopping) has no
    verdict: whether the last run worked is what it was, and it shows in recentRuns only."""

    @pytest.mark.parametrize("before", [R.SUCCEEDED, R.FAILED])
    async def test_leave_it_and_last_run_as_they_were_and_are_counted(
        self, before: records.RunResult
    ) -> None:
        replica = on_a_job()
        await replica.write(run(before, message="HTTP 204"))
        condition = replica.condition()

        cancelled = run(R.CANCELLED, SLOT + SECOND, message="cancelled: replaced by a newer slot")
        await replica.write(cancelled, at=SLOT + 5 * SECOND)

        assert replica.condition() == condition
        assert replica.api.status["lastRun"]["result"] == str(before)
        assert replica.api.status["counts"]["cancelled"] == 1
        assert [entry["result"] for entry in replica.api.status["recentRuns"]] == [
            "Cancelled",
            str(before),
        ]

    async def test_before_any_run_leave_it_unknown(self) -> None:
        replica = on_a_job()

        await replica.write(run(R.CANCELLED))

        assert said(replica.condition()) == ("Unknown", "NoRunYet", "no run has finished yet")
        assert "lastRun" not in replica.api.status


class TestTheKubernetesConventions:
    @pytest.mark.parametrize(
        ("first", "then", "transition"),
        [
            pytest.param(R.SUCCEEDED, R.SUCCEEDED, "01:30:00", id="true-stays-true"),
            pytest.param(R.FAILED, R.TIMED_OUT, "01:30:00", id="false-for-another-reason"),
            pytest.param(R.SUCCEEDED, R.FAILED, "01:30:05", id="true-turns-false"),
            pytest.param(R.LOST, R.SUCCEEDED, "01:30:05", id="false-turns-true"),
        ],
    )
    async def test_the_transition_time_moves_only_when_the_status_changes(
        self, first: records.RunResult, then: records.RunResult, transition: str
    ) -> None:
        replica = on_a_job()
        await replica.write(run(first))

        await replica.write(run(then, SLOT + SECOND), at=SLOT + 5 * SECOND)

        condition = replica.condition()
        assert condition is not None
        assert condition["reason"] == then
        assert condition["lastTransitionTime"] == f"2026-11-30T{transition}Z"

    async def test_it_names_the_generation_of_the_status_its_run_was_written_to(self) -> None:
        """After a spec change it keeps the older generation until a run under the new one,
        so that ``kubectl wait`` waits for a run of the spec it was given."""
        replica = on_a_job()
        await replica.write(run(R.FAILED))

        replica.store.set_condition(JOB, READY, generation=2)
        await replica.write()
        assert replica.condition()["observedGeneration"] == 1  # type: ignore[index]

        await replica.write(run(R.FAILED, SLOT + SECOND))
        assert replica.condition()["observedGeneration"] == 2  # type: ignore[index]
        assert replica.api.status["observedGeneration"] == 2


class TestTheNewestRunDecidesWhicheverReplicaWroteIt:
    async def test_an_older_run_written_after_a_newer_one_changes_nothing(self) -> None:
        replica = on_a_job()
        other = Replica(replica.api)
        other.store.run_finished(JOB, run(R.SUCCEEDED, SLOT + 2 * SECOND, message="newer"))
        await other.store._flush(due_only=False)
        other.store.set_condition(JOB, READY, generation=2)  # then the spec changed
        await other.store._flush(due_only=False)
        before = replica.api.status["conditions"]

        await replica.write(run(R.FAILED, SLOT + SECOND, message="older"))  # on a stale cache

        assert replica.api.status["conditions"] == before  # not even its generation
        assert said(replica.condition()) == ("True", "Succeeded", "newer")
        assert replica.api.status["lastRun"]["message"] == "newer"
        assert replica.api.status["counts"]["failed"] == 1

    @pytest.mark.parametrize("writes", [1, 2], ids=["in-one-write", "in-two-writes"])
    async def test_of_a_lost_run_and_its_retry_the_retry_decides(self, writes: int) -> None:
        replica = on_a_job()
        lost = run(R.LOST, message="lost", finished_after=20 * SECOND)
        retry = run(R.SUCCEEDED, message="HTTP 204", finished_after=21 * SECOND)

        if writes == 1:
            await replica.write(lost, retry)
        else:
            await replica.write(lost)
            await replica.write(retry)

        assert said(replica.condition()) == ("True", "Succeeded", "HTTP 204")


class TestItGoesOutWithTheRunsThatMakeIt:
    async def test_a_flip_is_no_urgent_write_it_waits_for_the_interval_as_its_run_does(
        self,
    ) -> None:
        replica = on_a_job()
        await replica.write(run(R.SUCCEEDED))
        landed = len(replica.api.landed)

        replica.store.run_finished(JOB, run(R.FAILED, SLOT + SECOND))
        for tick in range(1, 20):  # the default interval is 5 s, the tick a quarter second
            replica.clock[0] = tick / 4
            await replica.store._flush(due_only=True)
        assert len(replica.api.landed) == landed
        replica.clock[0] = 5.0
        await replica.store._flush(due_only=True)

        [patch] = replica.api.landed[landed:]
        assert said(condition_of(patch)) == ("False", "Failed", "")
        assert patch["recentRuns"][0]["result"] == "Failed"

    async def test_many_runs_between_writes_cost_one_write(self) -> None:
        replica = on_a_job()

        await replica.write(*(run(R.FAILED, SLOT + n * SECOND) for n in range(10)))

        assert len(replica.api.landed) == 1
        assert said(replica.condition()) == ("False", "Failed", "")

    async def test_a_kubernetes_lock_claim_carries_it_and_leaves_the_writer_nothing(self) -> None:
        replica = on_a_job()
        replica.store.run_finished(JOB, run(R.TIMED_OUT, message="timed out after 1s"))
        version = replica.api.body["metadata"]["resourceVersion"]

        with replica.store.carry(JOB, replica.api.status) as patch:
            await replica.api.patch(JOB, patch, resource_version=version)
        await replica.store._flush(due_only=False)

        assert said(condition_of(patch)) == ("False", "TimedOut", "timed out after 1s")
        assert len(replica.api.landed) == 1

    async def test_a_claim_refused_as_a_whole_leaves_it_to_the_next_write(self) -> None:
        replica = on_a_job()
        replica.store.run_finished(JOB, run(R.FAILED, message="HTTP 500"))
        replica.api.faults.append("conflict")

        with (
            contextlib.suppress(Exception),
            replica.store.carry(JOB, replica.api.status) as patch,
        ):
            await replica.api.patch(JOB, patch, resource_version="10")
        assert replica.condition() is None
        await replica.store._flush(due_only=False)

        assert said(replica.condition()) == ("False", "Failed", "HTTP 500")
        assert timeline.parse_rfc3339(replica.condition()["lastTransitionTime"])  # type: ignore[index]
