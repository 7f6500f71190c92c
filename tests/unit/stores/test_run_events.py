"""Warning Events about runs come from a run store of their own: a failed, timed-out or lost
run, and slots given up, each raise one, on the object as the replica last saw it."""

from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import records
from punctual.kube import events, objects, resources
from punctual.scheduling import overlap
from punctual.stores import events as event_store
from status_api_double import JOB, scheduled_job

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)

Posted = list[tuple[str, str, str]]


@pytest.fixture
def posted(monkeypatch: pytest.MonkeyPatch) -> Posted:
    warnings: Posted = []

    def warn(body: resources.Body, *, reason: str, message: str) -> None:
        warnings.append((body["metadata"]["name"], reason, message))

    monkeypatch.setattr(events, "warn", warn)
    return warnings


def store(*, known: bool = True) -> event_store.EventStore:
    cache = objects.ObjectCache()
    if known:
        cache.remember(scheduled_job())
    return event_store.EventStore(cache=cache)


def finished(result: records.RunResult, message: str = "") -> records.RunRecord:
    return records.RunRecord(
        slot=SLOT,
        scheduled_time=SLOT,
        result=result,
        started_at=SLOT,
        finished_at=SLOT + timedelta(seconds=1),
        message=message,
        replica="r1",
    )


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        (records.RunResult.FAILED, "RunFailed"),
        (records.RunResult.TIMED_OUT, "RunTimedOut"),
        (records.RunResult.LOST, "RunLost"),
    ],
)
def test_a_run_that_did_not_succeed_raises_a_warning(
    posted: Posted, result: records.RunResult, reason: str
) -> None:
    store().run_finished(JOB, finished(result, "HTTP 503"))

    assert posted == [(JOB.name, reason, "slot 2026-11-30T01:30:00Z: HTTP 503")]


def test_slots_given_up_raise_a_warning_in_the_words_of_the_status(posted: Posted) -> None:
    store().slots_missed(JOB, count=3, newest=SLOT)

    assert posted == [
        (JOB.name, "SlotsMissed", "3 slot(s) missed, the newest 2026-11-30T01:30:00Z")
    ]


def test_successes_skips_and_starts_raise_nothing(posted: Posted) -> None:
    events_ = store()
    events_.slot_upcoming(JOB, scheduled_time=SLOT)
    events_.run_started(
        JOB, records.ActiveRun(slot=SLOT, scheduled_time=SLOT, started_at=SLOT, replica="r1")
    )
    events_.run_finished(JOB, finished(records.RunResult.SUCCEEDED))
    events_.run_finished(JOB, finished(records.RunResult.SKIPPED_OVERLAP))
    events_.slot_overlapped(JOB, slot=SLOT, policy=overlap.ConcurrencyPolicy.FORBID)

    assert posted == []


def test_an_object_this_replica_does_not_know_gets_no_event(posted: Posted) -> None:
    store(known=False).run_finished(JOB, finished(records.RunResult.FAILED))

    assert posted == []
