"""Warning Events about runs come from a run store of their own: a failed, timed-out or lost
run, and slots given up, each raise one, on the object as the replica last saw it; aggregated
per job and reason (the first at once, then a count at most once a minute), and at most so many
Event writes a second per replica."""

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import records
from punctual.kube import events, objects
from punctual.scheduling import overlap, slots
from punctual.stores import events as event_store
from status_api_double import JOB, scheduled_job

pytestmark = pytest.mark.looptime(start=time.monotonic, noop_cycles=1)

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)


@dataclass
class FakeEventsApi:
    """Events as the API server would keep them: by name, with every write listed."""

    stored: dict[str, events.Occurrence] = field(default_factory=dict)
    writes: list[tuple[float, str, str]] = field(default_factory=list)
    """(loop time, "create" or "recount", Event name) of each write."""
    gone: set[str] = field(default_factory=set)
    namespaces_gone: set[str] = field(default_factory=set)
    """Creations there are refused (NamespaceGoneError), and their Events are gone."""
    refused: list[str] = field(default_factory=list)
    """The reason of each creation refused because its namespace is gone."""

    async def create(self, occurrence: events.Occurrence) -> str:
        if occurrence.regarding["namespace"] in self.namespaces_gone:
            self.refused.append(occurrence.reason)
            raise events.NamespaceGoneError(occurrence.regarding["namespace"])
        name = f"{occurrence.regarding['name']}.{len(self.stored)}"
        self.stored[name] = occurrence
        self.writes.append((asyncio.get_running_loop().time(), "create", name))
        return name

    async def recount(self, name: str, occurrence: events.Occurrence) -> None:
        if name in self.gone or occurrence.regarding["namespace"] in self.namespaces_gone:
            raise events.EventGoneError(name)
        self.stored[name] = occurrence
        self.writes.append((asyncio.get_running_loop().time(), "recount", name))

    def said(self) -> list[tuple[str, str, int]]:
        return [(event.reason, event.note, event.count) for event in self.stored.values()]


def wall() -> datetime:
    return SLOT


def job(index: int) -> slots.JobRef:
    return slots.JobRef(namespace=JOB.namespace, name=f"job-{index}", uid=f"uid-{index}")


def store(
    api: FakeEventsApi,
    *jobs: slots.JobRef,
    writes_per_second: int = 10,
    cache: objects.ObjectCache | None = None,
) -> event_store.EventStore:
    cache = objects.ObjectCache() if cache is None else cache
    for ref in jobs:
        body = scheduled_job()
        body["metadata"] |= {"namespace": ref.namespace, "name": ref.name, "uid": ref.uid}
        cache.remember(body)
    return event_store.EventStore(
        cache=cache,
        api=api,  # type: ignore[arg-type]  # the double has EventsApi's two methods
        wall=wall,
        writes_per_second=writes_per_second,
    )


@contextlib.asynccontextmanager
async def writing(events_: event_store.EventStore) -> AsyncIterator[None]:
    """The store's writer, started in the test itself: on looptime's fast clock."""
    writer = asyncio.create_task(events_.run())
    try:
        yield
    finally:
        events_.close()
        await writer


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


class TestWhatRaisesAWarning:
    @pytest.mark.parametrize(
        ("result", "reason"),
        [
            (records.RunResult.FAILED, "RunFailed"),
            (records.RunResult.TIMED_OUT, "RunTimedOut"),
            (records.RunResult.LOST, "RunLost"),
        ],
    )
    async def test_a_run_that_did_not_succeed_raises_a_warning(
        self, result: records.RunResult, reason: str
    ) -> None:
        api = FakeEventsApi()
        events_ = store(api, JOB)
        async with writing(events_):
            events_.run_finished(JOB, finished(result, "HTTP 503"))
            await asyncio.sleep(1)

        assert api.said() == [(reason, "slot 2026-11-30T01:30:00Z: HTTP 503", 1)]
        event = next(iter(api.stored.values()))
        assert (event.type, event.action, event.regarding["uid"]) == ("Warning", "Run", JOB.uid)

    async def test_slots_given_up_raise_a_warning_in_the_words_of_the_status(self) -> None:
        api = FakeEventsApi()
        events_ = store(api, JOB)
        async with writing(events_):
            events_.slots_missed(JOB, count=3, newest=SLOT)
            await asyncio.sleep(1)

        assert api.said() == [
            ("SlotsMissed", "3 slot(s) missed, the newest 2026-11-30T01:30:00Z", 1)
        ]

    async def test_slots_passed_while_suspended_raise_nothing(self) -> None:
        """A suspension is deliberate: its slots are counted in status, not warned about."""
        api = FakeEventsApi()
        events_ = store(api, JOB)
        async with writing(events_):
            events_.slots_missed(JOB, count=3, newest=SLOT, reason=records.MissedReason.SUSPENDED)
            await asyncio.sleep(1)

        assert api.writes == []

    async def test_slots_the_lock_forgot_raise_a_warning_of_their_own(self) -> None:
        api = FakeEventsApi()
        events_ = store(api, JOB)
        async with writing(events_):
            events_.slots_missed(JOB, count=6, newest=SLOT, reason=records.MissedReason.LOCK_FORGOT)
            await asyncio.sleep(1)

        ((reason, message, count),) = api.said()
        assert (reason, count) == ("LockForgot", 1)
        assert message.startswith("6 slot(s) missed, the newest 2026-11-30T01:30:00Z: ")
        assert "cannot prove they did not run" in message

    async def test_successes_skips_cancelled_runs_and_starts_raise_nothing(self) -> None:
        api = FakeEventsApi()
        events_ = store(api, JOB)
        async with writing(events_):
            events_.slot_upcoming(JOB, scheduled_time=SLOT)
            events_.run_started(
                JOB,
                records.ActiveRun(slot=SLOT, scheduled_time=SLOT, started_at=SLOT, replica="r1"),
            )
            events_.run_finished(JOB, finished(records.RunResult.SUCCEEDED))
            events_.run_finished(JOB, finished(records.RunResult.SKIPPED_OVERLAP))
            events_.run_finished(JOB, finished(records.RunResult.CANCELLED))
            events_.slot_overlapped(JOB, slot=SLOT, policy=overlap.ConcurrencyPolicy.FORBID)
            await asyncio.sleep(1)

        assert api.writes == []

    async def test_a_warm_pod_not_at_its_gate_raises_a_warning_and_one_at_it_nothing(
        self,
    ) -> None:
        api = FakeEventsApi()
        events_ = store(api, JOB)
        async with writing(events_):
            events_.warm_start_checked(JOB, scheduled_time=SLOT, not_ready=None)
            events_.warm_start_checked(
                JOB, scheduled_time=SLOT, not_ready="pod p: ImagePullBackOff (container c)"
            )
            await asyncio.sleep(1)

        assert api.said() == [
            (
                "WarmStartNotReady",
                "run due 2026-11-30T01:30:00Z: pod p: ImagePullBackOff (container c)",
                1,
            )
        ]

    async def test_an_object_this_replica_does_not_know_gets_no_event(self) -> None:
        api = FakeEventsApi()
        events_ = store(api)
        async with writing(events_):
            events_.run_finished(JOB, finished(records.RunResult.FAILED))
            await asyncio.sleep(1)

        assert api.writes == []


class TestAggregation:
    async def test_the_first_is_written_at_once_then_a_count_once_a_minute(self) -> None:
        api = FakeEventsApi()
        events_ = store(api, JOB)
        start = asyncio.get_running_loop().time()
        async with writing(events_):
            for second in range(150):  # a run failing every second for 2.5 minutes
                events_.run_finished(JOB, finished(records.RunResult.FAILED, f"run {second}"))
                await asyncio.sleep(1)

        kinds = [(kind, round(at - start)) for at, kind, _ in api.writes]
        assert kinds == [("create", 0), ("recount", 60), ("recount", 120)]
        # The note is the first's: the API server refuses to change an Event's note.
        assert api.said() == [("RunFailed", "slot 2026-11-30T01:30:00Z: run 0", 121)]

    async def test_each_reason_has_an_event_of_its_own(self) -> None:
        api = FakeEventsApi()
        events_ = store(api, JOB)
        async with writing(events_):
            events_.run_finished(JOB, finished(records.RunResult.FAILED, "500"))
            events_.run_finished(JOB, finished(records.RunResult.TIMED_OUT, "slow"))
            events_.run_finished(JOB, finished(records.RunResult.FAILED, "503"))
            await asyncio.sleep(1)

        assert sorted(reason for reason, _, _ in api.said()) == ["RunFailed", "RunTimedOut"]

    async def test_an_event_that_expired_is_written_anew_with_what_it_had_not_shown(
        self,
    ) -> None:
        api = FakeEventsApi()
        events_ = store(api, JOB)
        async with writing(events_):
            events_.run_finished(JOB, finished(records.RunResult.FAILED, "first"))
            await asyncio.sleep(1)
            api.gone.update(api.stored)
            for _ in range(3):
                events_.run_finished(JOB, finished(records.RunResult.FAILED, "again"))
            await asyncio.sleep(61)

        assert [kind for _, kind, _ in api.writes] == ["create", "create"]
        assert list(api.stored.values())[-1].count == 3

    async def test_what_is_pending_is_counted(self) -> None:
        api = FakeEventsApi()
        events_ = store(api, JOB)
        events_.run_finished(JOB, finished(records.RunResult.FAILED))

        assert events_.pending == 1


class TestTheWriteRate:
    async def test_one_replica_starts_at_most_so_many_writes_a_second(self) -> None:
        api = FakeEventsApi()
        jobs = [job(index) for index in range(100)]
        events_ = store(api, *jobs, writes_per_second=10)
        start = asyncio.get_running_loop().time()
        async with writing(events_):
            for _ in range(30):  # 100 jobs failing every second for 30 s
                for ref in jobs:
                    events_.run_finished(ref, finished(records.RunResult.FAILED))
                await asyncio.sleep(1)

        per_second = [0] * 31
        for at, _, _ in api.writes:
            per_second[int(at - start)] += 1
        assert max(per_second) <= 10
        assert len(api.stored) == 100  # every job's Event was written in the end (10 s)

    async def test_new_events_go_before_updates(self) -> None:
        api = FakeEventsApi()
        early, late = job(1), job(2)
        events_ = store(api, early, late, writes_per_second=1)
        async with writing(events_):
            events_.run_finished(early, finished(records.RunResult.FAILED))
            await asyncio.sleep(61)
            events_.run_finished(early, finished(records.RunResult.FAILED))
            events_.run_finished(late, finished(records.RunResult.FAILED))
            await asyncio.sleep(0.5)

        assert [(kind, name) for _, kind, name in api.writes] == [
            ("create", "job-1.0"),
            ("create", "job-2.1"),
        ]


class TestEventsOfWhatIsGone:
    async def test_a_namespace_gone_drops_the_event_and_the_job_s_others_for_good(self) -> None:
        api = FakeEventsApi(namespaces_gone={JOB.namespace})
        events_ = store(api, JOB)
        async with writing(events_):
            events_.run_finished(JOB, finished(records.RunResult.FAILED))
            events_.run_finished(JOB, finished(records.RunResult.TIMED_OUT))
            events_.slots_missed(JOB, count=2, newest=SLOT)
            await asyncio.sleep(300)

        assert len(api.refused) == 1  # the first write: the others were dropped with it
        assert api.writes == []
        assert events_.pending == 0

    async def test_a_namespace_deleted_after_the_first_event_drops_its_updates(self) -> None:
        api = FakeEventsApi()
        events_ = store(api, JOB)
        async with writing(events_):
            events_.run_finished(JOB, finished(records.RunResult.FAILED))
            await asyncio.sleep(1)
            api.namespaces_gone.add(JOB.namespace)
            events_.run_finished(JOB, finished(records.RunResult.FAILED))
            await asyncio.sleep(300)

        assert [kind for _, kind, _ in api.writes] == ["create"]
        assert api.refused == ["RunFailed"]  # the update, once

    async def test_another_namespace_s_events_are_still_written(self) -> None:
        other = slots.JobRef(namespace="elsewhere", name="report", uid="uid-e")
        api = FakeEventsApi(namespaces_gone={JOB.namespace})
        events_ = store(api, JOB, other)
        async with writing(events_):
            events_.run_finished(JOB, finished(records.RunResult.FAILED))
            events_.run_finished(other, finished(records.RunResult.FAILED))
            await asyncio.sleep(1)

        assert [name for _, _, name in api.writes] == ["report.0"]

    async def test_a_job_deleted_before_its_event_was_written_gets_none(self) -> None:
        api = FakeEventsApi()
        cache = objects.ObjectCache()
        events_ = store(api, JOB, cache=cache)
        async with writing(events_):
            events_.run_finished(JOB, finished(records.RunResult.FAILED))
            cache.forget(JOB)  # deleted: the reconciler forgets it
            await asyncio.sleep(120)

        assert api.writes == []
        assert events_.pending == 0
