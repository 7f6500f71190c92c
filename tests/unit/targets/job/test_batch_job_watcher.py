"""The shared Job watch, on kubernetes-asyncio's real ``Watch`` over a scripted API.

The fake API answers the list with chosen Jobs and a resourceVersion, in pages of the size
asked for, and each watch request with a stream of event lines the test pushes (an empty line
ends a stream, as the server's timeout does).
"""

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, cast

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.kube import watching
from punctual.scheduling import slots
from punctual.targets.job import manifests, states
from punctual.targets.job import requests as batch_job_requests
from punctual.targets.job import watcher as batch_job_watcher

OWNER = "owner-uid"
OTHER_OWNER = "other-owner-uid"
END = b""


def job(
    name: str,
    *,
    uid: str | None = None,
    rv: int = 1,
    owner: str = OWNER,
    condition: str | None = None,
    reason: str = "",
    namespace: str = "ns",
    annotations: dict[str, str] | None = None,
    controller: dict[str, Any] | None = None,
) -> dict[str, Any]:
    conditions = [] if condition is None else [{"type": condition, "status": "True"}]
    if reason:
        conditions[0]["reason"] = reason
    reference = {
        "apiVersion": "punctual.dev/v1alpha1",
        "kind": "ScheduledJob",
        "name": "nightly",
        "uid": owner,
        "controller": True,
    }
    return {
        "metadata": {
            "namespace": namespace,
            "name": name,
            "uid": uid or f"uid-{name}",
            "resourceVersion": str(rv),
            "ownerReferences": [reference if controller is None else controller],
            "annotations": dict(annotations or {}),
        },
        "status": {"conditions": conditions},
    }


def event(kind: str, body: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": body}).encode() + b"\n"


def expired() -> bytes:
    status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    return json.dumps({"type": "ERROR", "object": status}).encode() + b"\n"


class _Response:
    def __init__(self, lines: "asyncio.Queue[bytes]") -> None:
        self._lines = lines
        self.content = self

    async def readline(self) -> bytes:
        return await self._lines.get()

    def release(self) -> None:
        pass

    def close(self) -> None:
        pass


class FakeBatchJobsApi:
    def __init__(self) -> None:
        self.listing: tuple[list[dict[str, Any]], str] = ([], "1")
        self.lists = 0
        self.pages: list[tuple[int, str | None]] = []
        """Each page asked for: its limit and continue token."""
        self.expired_tokens: set[str] = set()
        """Continue tokens answered once with 410 Gone."""
        self.watches: list[dict[str, Any]] = []
        self.lines: asyncio.Queue[bytes] = asyncio.Queue()
        self.readable: dict[str, dict[str, Any]] = {}
        self.reads = 0

    async def list_page(
        self, namespace: str | None, *, limit: int, continue_token: str | None
    ) -> watching.Page:
        self.pages.append((limit, continue_token))
        if continue_token in self.expired_tokens:
            self.expired_tokens.discard(continue_token)
            raise ApiException(status=410, reason="Expired")
        if continue_token is None:
            self.lists += 1
        items, resource_version = self.listing
        start = int(continue_token or 0)
        end = start + limit
        return watching.Page(
            items=items[start:end],
            resource_version=resource_version,
            continue_token=str(end) if end < len(items) else "",
        )

    def watch_function(self, namespace: str | None) -> tuple[Any, tuple[str, ...]]:
        async def list_job_for_all_namespaces(**kwargs: Any) -> _Response:
            """:rtype: V1JobList"""
            self.watches.append(kwargs)
            return _Response(self.lines)

        return list_job_for_all_namespaces, ()

    async def read(self, namespace: str, name: str) -> states.BatchJobState | None:
        self.reads += 1
        body = self.readable.get(name)
        return None if body is None else states.BatchJobState.from_body(body)

    def push(self, *lines: bytes) -> None:
        for line in lines:
            self.lines.put_nowait(line)


@pytest.fixture
def api() -> FakeBatchJobsApi:
    return FakeBatchJobsApi()


@pytest.fixture
async def watcher(api: FakeBatchJobsApi) -> AsyncIterator[batch_job_watcher.BatchJobWatcher]:
    started = batch_job_watcher.BatchJobWatcher(cast(batch_job_requests.BatchJobsApi, api))
    yield started
    await started.close()


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def state(body: dict[str, Any]) -> states.BatchJobState:
    return states.BatchJobState.from_body(body)


async def waiting(
    watcher: batch_job_watcher.BatchJobWatcher, body: dict[str, Any]
) -> "asyncio.Task[states.BatchJobEnd]":
    task = asyncio.create_task(watcher.ended(state(body)))
    await settle()
    return task


class TestARunLearnsHowItsJobEnded:
    async def test_from_the_event_that_completes_it(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        await watcher.listed()
        ended = await waiting(watcher, job("a", rv=2))

        api.push(event("ADDED", job("a", rv=2)), event("MODIFIED", job("a", rv=3)))
        await settle()
        assert not ended.done()
        api.push(event("MODIFIED", job("a", rv=4, condition="Complete")))

        assert (await asyncio.wait_for(ended, 1)).succeeded

    async def test_from_the_list_when_it_ended_before_the_watch_started(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        api.listing = ([job("a", rv=5, condition="Failed", reason="BackoffLimitExceeded")], "6")

        end = await asyncio.wait_for(watcher.ended(state(job("a", rv=2))), 1)

        assert end == states.BatchJobEnd(False, "BackoffLimitExceeded", "")

    async def test_at_once_when_the_watcher_already_saw_it_end(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        await watcher.listed()
        api.push(event("ADDED", job("a", rv=2, condition="Complete")))
        await settle()

        assert (await asyncio.wait_for(watcher.ended(state(job("a"))), 1)).succeeded

    async def test_deleted_when_its_job_is_deleted_unfinished(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        await watcher.listed()
        ended = await waiting(watcher, job("a", rv=2))

        api.push(event("DELETED", job("a", rv=3)))

        assert await asyncio.wait_for(ended, 1) == states.DELETED

    async def test_deleted_when_it_asks_after_its_job_was_deleted(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        await watcher.listed()
        api.push(event("ADDED", job("a", rv=2)), event("DELETED", job("a", rv=3)))
        await settle()

        assert await asyncio.wait_for(watcher.ended(state(job("a"))), 1) == states.DELETED

    async def test_not_from_another_job_by_the_same_name(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        await watcher.listed()
        ended = await waiting(watcher, job("a", uid="mine", rv=2))

        api.push(event("MODIFIED", job("a", uid="someone-elses", rv=3, condition="Complete")))
        await settle()

        assert not ended.done()
        ended.cancel()


class TestAnAbortLearnsItsJobIsGone:
    """``deleted``: the Job is gone from the API server (its DELETED seen), not merely ended,
    so that a Job replacing it is created after it is gone, as CronJob's Replace does."""

    async def test_when_its_deletion_comes_through_the_watch(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        await watcher.listed()
        api.push(event("ADDED", job("a", rv=2)))
        await settle()
        gone = asyncio.create_task(watcher.deleted(state(job("a", rv=2))))
        await settle()
        assert not gone.done()

        api.push(event("DELETED", job("a", rv=3)))

        await asyncio.wait_for(gone, 1)

    async def test_not_when_it_merely_ends_nor_for_another_job_by_that_name(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        await watcher.listed()
        gone = asyncio.create_task(watcher.deleted(state(job("a", uid="mine", rv=2))))
        await settle()

        api.push(
            event("MODIFIED", job("a", uid="mine", rv=3, condition="Complete")),
            event("DELETED", job("a", uid="another", rv=4)),
        )
        await settle()

        assert not gone.done()
        gone.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await gone

    async def test_at_once_when_the_watch_saw_it_deleted_already(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        await watcher.listed()
        api.push(event("ADDED", job("a", rv=2)), event("DELETED", job("a", rv=3)))
        await settle()

        await asyncio.wait_for(watcher.deleted(state(job("a"))), 1)


def owner(namespace: str = "ns") -> slots.JobRef:
    return slots.JobRef(namespace=namespace, name="nightly", uid=OWNER)


class TestTheWatchGoesOn:
    @pytest.mark.parametrize(
        "scheduled_time",
        [
            pytest.param("0001-01-01T00:00:00+01:00", id="before-year-one-in-utc"),
            pytest.param("2026-01-01T00:00:00z", id="a-lowercase-z"),
            pytest.param("tomorrow", id="no-timestamp"),
        ],
    )
    async def test_past_a_job_whose_scheduled_time_annotation_cannot_be_read(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher, scheduled_time: str
    ) -> None:
        await watcher.listed()
        ended = await waiting(watcher, job("b", rv=2))
        odd = job("a", rv=3, annotations={manifests.SCHEDULED_TIME_ANNOTATION: scheduled_time})

        api.push(event("ADDED", odd), event("MODIFIED", job("b", rv=4, condition="Complete")))

        assert (await asyncio.wait_for(ended, 1)).succeeded
        known = watcher.known("ns", "a")
        assert known is not None
        assert known.scheduled_time is None
        assert len(api.watches) == 1  # one stream: nothing broke it

    async def test_it_resumes_from_the_last_resource_version_after_a_stream_ends(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        api.listing = ([], "10")
        await watcher.listed()
        api.push(event("ADDED", job("a", rv=11)), END)
        await settle()

        assert [w["resource_version"] for w in api.watches] == ["10", "11"]
        assert api.lists == 1
        assert all(w["label_selector"] == "punctual.dev/scheduled-job" for w in api.watches)

    async def test_it_lists_again_on_410_gone(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        api.listing = ([job("a", rv=2)], "10")
        await watcher.listed()
        deleted_meanwhile = await waiting(watcher, job("a", rv=2))
        newer_than_the_list = await waiting(watcher, job("b", rv=30))

        api.listing = ([], "20")
        api.push(expired())
        await settle()

        assert api.lists == 2
        assert api.watches[-1]["resource_version"] == "20"
        assert await asyncio.wait_for(deleted_meanwhile, 1) == states.DELETED
        assert not newer_than_the_list.done()
        assert watcher.known("ns", "a") is None
        newer_than_the_list.cancel()


class TestTheListing:
    @pytest.fixture(autouse=True)
    def small_pages(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(watching, "LIST_PAGE_SIZE", 2)

    async def test_is_read_in_pages_each_from_where_the_last_ended(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        api.listing = ([job(name) for name in "abcde"], "9")

        await watcher.listed()

        assert api.pages == [(2, None), (2, "2"), (2, "4")]
        assert sorted(s.name for s in watcher.jobs_of(owner())) == list("abcde")
        assert api.watches[-1]["resource_version"] == "9"

    async def test_starts_again_from_the_first_page_when_a_continue_token_expired(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        api.listing = ([job(name) for name in "abcde"], "9")
        api.expired_tokens = {"4"}

        await asyncio.wait_for(watcher.listed(), 1)

        assert api.pages == [(2, None), (2, "2"), (2, "4"), (2, None), (2, "2"), (2, "4")]
        assert sorted(s.name for s in watcher.jobs_of(owner())) == list("abcde")

    async def test_that_started_again_misses_no_job_deleted_in_between(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        api.listing = ([job(name) for name in "abcd"], "9")
        await watcher.listed()
        ended = await waiting(watcher, job("a", rv=1))
        api.listing = ([job(name) for name in "bcd"], "20")
        api.expired_tokens = {"2"}

        api.push(expired())

        assert await asyncio.wait_for(ended, 1) == states.DELETED
        assert watcher.known("ns", "a") is None
        assert api.watches[-1]["resource_version"] == "20"


class TestJobsNoScheduledJobControls:
    """The label is anyone's to set: the watcher keeps only the Jobs a ScheduledJob controls."""

    @pytest.mark.parametrize(
        "reference",
        [
            pytest.param(
                {"apiVersion": "batch/v1", "kind": "CronJob", "uid": OWNER, "controller": True},
                id="a-cronjob",
            ),
            pytest.param(
                {
                    "apiVersion": "example.com/v1",
                    "kind": "ScheduledJob",
                    "uid": OWNER,
                    "controller": True,
                },
                id="a-scheduled-job-of-another-group",
            ),
            pytest.param(
                {"apiVersion": "punctual.dev/v1alpha1", "kind": "ScheduledJob", "uid": OWNER},
                id="an-owner-that-is-not-its-controller",
            ),
        ],
    )
    async def test_are_not_kept_from_the_listing_nor_from_an_event(
        self,
        api: FakeBatchJobsApi,
        watcher: batch_job_watcher.BatchJobWatcher,
        reference: dict[str, Any],
    ) -> None:
        api.listing = ([job("listed", controller=reference), job("ours")], "5")
        await watcher.listed()
        api.push(event("ADDED", job("added", rv=6, controller=reference)))
        await settle()

        assert watcher.known("ns", "listed") is None
        assert watcher.known("ns", "added") is None
        assert [s.name for s in watcher.jobs_of(owner())] == ["ours"]

    async def test_a_job_that_loses_its_controller_is_gone_for_its_run(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        api.listing = ([job("a", rv=2)], "5")
        await watcher.listed()
        ended = await waiting(watcher, job("a", rv=2))
        orphan = {"apiVersion": "batch/v1", "kind": "CronJob", "uid": "x", "controller": True}

        api.push(event("MODIFIED", job("a", rv=6, controller=orphan)))

        assert await asyncio.wait_for(ended, 1) == states.DELETED
        assert watcher.jobs_of(owner()) == []

    async def test_a_slot_id_longer_than_any_slot_id_is_not_kept(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        huge = "ns/nightly/owner-uid/" + "1" * 100_000
        api.listing = ([job("a", annotations={manifests.SLOT_ID_ANNOTATION: huge})], "5")
        await watcher.listed()

        known = watcher.known("ns", "a")
        assert known is not None
        assert known.slot_id is None


class TestTheCache:
    async def test_tells_the_jobs_of_one_scheduled_job(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        api.listing = ([job("a"), job("b", owner=OTHER_OWNER), job("c")], "5")
        await watcher.listed()

        assert sorted(s.name for s in watcher.jobs_of(owner())) == ["a", "c"]

    async def test_a_job_in_another_namespace_naming_the_same_owner_is_not_its(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        api.listing = ([job("a"), job("b", namespace="another-tenant")], "5")
        await watcher.listed()

        assert [s.name for s in watcher.jobs_of(owner())] == ["a"]
        assert [s.name for s in watcher.jobs_of(owner("another-tenant"))] == ["b"]

    async def test_an_older_event_does_not_replace_a_newer_state(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        await watcher.listed()
        api.push(event("MODIFIED", job("a", rv=9, condition="Complete")))
        api.push(event("MODIFIED", job("a", rv=7)))
        await settle()

        known = watcher.known("ns", "a")
        assert known is not None
        assert known.end is not None


class TestAStuckWatch:
    @pytest.fixture
    async def watcher(
        self, api: FakeBatchJobsApi
    ) -> AsyncIterator[batch_job_watcher.BatchJobWatcher]:
        started = batch_job_watcher.BatchJobWatcher(
            cast(batch_job_requests.BatchJobsApi, api), recheck=timedelta(milliseconds=50)
        )
        yield started
        await started.close()

    async def test_a_long_wait_reads_the_job_itself(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        await watcher.listed()
        api.readable["a"] = job("a", rv=2)
        ended = await waiting(watcher, job("a", rv=2))
        await asyncio.sleep(0.2)
        assert not ended.done()

        api.readable["a"] = job("a", rv=3, condition="Complete")

        assert (await asyncio.wait_for(ended, 1)).succeeded
        assert api.reads >= 2

    async def test_a_job_that_is_gone_is_deleted(
        self, api: FakeBatchJobsApi, watcher: batch_job_watcher.BatchJobWatcher
    ) -> None:
        await watcher.listed()

        end = await asyncio.wait_for(watcher.ended(state(job("a", rv=2))), 1)

        assert end == states.DELETED
