"""What the status writer writes is the status models' shape (``punctual.api.status_models``),
the one the CRD is generated from: each entry it composes is what the model dumps, field for
field, and the status it leaves validates as ``ScheduledJobStatus``."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pydantic

from punctual.api import status_models
from punctual.contracts import records
from punctual.stores import status as status_store
from status_api_double import JOB, FakeStatusApi, scheduled_job, store_on

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
READY = status_store.Condition(type="Ready", status=True, reason="Scheduled", message="ok")


def dumped(model: type[pydantic.BaseModel], entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` read by ``model`` and written again, as the writer dumps its entries."""
    return model.model_validate(entry).model_dump(mode="json", exclude_none=True)


async def written(api: FakeStatusApi, *, runs: list[records.RunRecord]) -> dict[str, Any]:
    store = store_on(api, wall=lambda: SLOT + timedelta(seconds=2), clock=lambda: 0.0)
    store.set_condition(JOB, READY, generation=1)
    store.run_started(
        JOB,
        records.ActiveRun(
            slot=SLOT + timedelta(seconds=1),
            scheduled_time=SLOT + timedelta(seconds=1),
            started_at=SLOT + timedelta(seconds=1, milliseconds=3),
            replica="r1",
            job_name="nightly-1796002201",
            attempt=2,
        ),
    )
    for record in runs:
        store.run_finished(JOB, record)
    await store._flush(due_only=False)
    return api.status


async def test_a_run_record_is_the_models_dump_and_the_shape_it_always_had() -> None:
    run = records.RunRecord(
        slot=SLOT,
        scheduled_time=SLOT + timedelta(milliseconds=250),
        result=records.RunResult.FAILED,
        started_at=SLOT + timedelta(milliseconds=262),
        finished_at=SLOT + timedelta(seconds=1, milliseconds=2),
        message="HTTP 500",
        replica="r1",
    )

    status = await written(FakeStatusApi(scheduled_job()), runs=[run])

    [entry] = status["recentRuns"]
    assert entry == {
        "slot": "2026-11-30T01:30:00Z",
        "scheduledTime": "2026-11-30T01:30:00.250Z",
        "result": "Failed",
        "message": "HTTP 500",
        "replica": "r1",
        "startedAt": "2026-11-30T01:30:00.262Z",
        "finishedAt": "2026-11-30T01:30:01.002Z",
        "latenessMillis": 12,
        "durationMillis": 740,
    }
    assert entry == dumped(status_models.RunRecord, entry)
    assert status["lastRun"] == entry


async def test_a_warm_started_run_says_how_its_job_started() -> None:
    run = records.RunRecord(
        slot=SLOT,
        scheduled_time=SLOT,
        result=records.RunResult.SUCCEEDED,
        started_at=SLOT,
        finished_at=SLOT + timedelta(seconds=1),
        replica="r1",
        start_mode=records.StartMode.INIT,
    )

    status = await written(FakeStatusApi(scheduled_job()), runs=[run])

    [entry] = status["recentRuns"]
    assert entry["warmStart"] == "Init"
    assert entry == dumped(status_models.RunRecord, entry)


async def test_a_run_of_several_schedules_names_the_entries_that_fired_it() -> None:
    run = records.RunRecord(
        slot=SLOT,
        scheduled_time=SLOT,
        result=records.RunResult.SUCCEEDED,
        started_at=SLOT,
        finished_at=SLOT + timedelta(seconds=1),
        replica="r1",
        schedules=("hourly", "noon"),
    )

    status = await written(FakeStatusApi(scheduled_job()), runs=[run])

    [entry] = status["recentRuns"]
    assert entry["schedules"] == ["hourly", "noon"]
    assert entry == dumped(status_models.RunRecord, entry)


async def test_a_slot_that_never_ran_says_no_times() -> None:
    skipped = records.RunRecord(
        slot=SLOT, scheduled_time=SLOT, result=records.RunResult.SKIPPED_OVERLAP, replica="r1"
    )

    status = await written(FakeStatusApi(scheduled_job()), runs=[skipped])

    [entry] = status["recentRuns"]
    assert entry.keys() == {"slot", "scheduledTime", "result", "message", "replica"}
    assert entry == dumped(status_models.RunRecord, entry)


async def test_active_runs_counts_and_conditions_are_the_models_dumps() -> None:
    status = await written(FakeStatusApi(scheduled_job()), runs=[])

    [active] = status["active"]
    assert active == dumped(status_models.ActiveRun, active)
    assert [active[key] for key in ("slot", "startedAt", "heartbeatTime", "attempt")] == [
        "2026-11-30T01:30:01Z",
        "2026-11-30T01:30:01.003Z",
        "2026-11-30T01:30:02Z",
        2,
    ]
    assert status["counts"] == dict.fromkeys(
        [
            "succeeded",
            "failed",
            "timedOut",
            "skippedOverlap",
            "skippedInFlightLimit",
            "skippedQueueLimit",
            "missed",
            "lost",
            "suspended",
            "excluded",
            "cancelled",
        ],
        0,
    )
    assert status["conditions"] == [
        ready(lastTransitionTime="2026-11-30T01:30:02Z", message="ok"),
        NO_RUN_YET,
    ]
    assert status["lastScheduleTime"] == "2026-11-30T01:30:01Z"
    assert status["observedGeneration"] == 1
    status_models.ScheduledJobStatus.model_validate(status)


def ready(**changes: Any) -> dict[str, Any]:
    """A Ready condition as the writer writes it (``changes`` aside)."""
    return {
        "type": "Ready",
        "status": "True",
        "reason": "Scheduled",
        "message": "older words",
        "lastTransitionTime": "2026-11-29T00:00:00Z",
        "observedGeneration": 1,
        **changes,
    }


NO_RUN_YET = {
    "type": "LastRunSucceeded",
    "status": "Unknown",
    "reason": "NoRunYet",
    "message": "no run has finished yet",
    "lastTransitionTime": "2026-11-30T01:30:02Z",
    "observedGeneration": 1,
}
"""LastRunSucceeded as the first write of a job that has not run says it."""


async def test_an_unchanged_condition_keeps_its_transition_time() -> None:
    status = await written(FakeStatusApi(scheduled_job(conditions=[ready()])), runs=[])

    assert status["conditions"] == [ready(message="ok"), NO_RUN_YET]


async def test_an_unreadable_transition_time_is_restated_from_now() -> None:
    hand_written = ready(lastTransitionTime="0001-01-01T00:00:00+01:00")

    status = await written(FakeStatusApi(scheduled_job(conditions=[hand_written])), runs=[])

    condition, _ = status["conditions"]
    assert condition["lastTransitionTime"] == "2026-11-30T01:30:02Z"
