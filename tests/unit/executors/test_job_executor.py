"""The job executor over a fake Jobs API and watcher: create or adopt, follow, clean up, abort."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from punctual.executors import job
from punctual.kube import jobs
from punctual.runtime import seams
from punctual.scheduling import slots

OWNER = slots.JobRef(namespace="reports", name="nightly", uid="owner-uid")
SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
TEMPLATE = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
COMPLETE = jobs.JobEnd(True, "Complete")


def context(slot: datetime = SLOT) -> seams.RunContext:
    return seams.RunContext(
        job=OWNER,
        slot=slot,
        slot_id=slots.slot_id(OWNER, slot),
        scheduled_time=slot,
        timeout=timedelta(minutes=1, seconds=30),
    )


def state(
    slot: datetime = SLOT,
    *,
    owner: str = OWNER.uid,
    end: jobs.JobEnd | None = None,
    slot_id: str | None = None,
    deleting: bool = False,
) -> jobs.JobState:
    return jobs.JobState(
        namespace=OWNER.namespace,
        name=jobs.job_name(OWNER.name, slot),
        uid=f"uid-{int(slot.timestamp())}",
        resource_version="7",
        owner_uid=owner,
        slot_id=slots.slot_id(OWNER, slot) if slot_id is None else slot_id,
        scheduled_time=slot,
        end=end,
        deleting=deleting,
    )


@dataclass
class FakeApi:
    existing: jobs.JobState | None = None
    created: list[dict[str, Any]] = field(default_factory=list)
    deleted: list[tuple[str, str | None]] = field(default_factory=list)

    async def create(self, manifest: dict[str, Any]) -> tuple[jobs.JobState, bool]:
        if self.existing is not None:
            return self.existing, False
        self.created.append(manifest)
        return state(), True

    async def read(self, namespace: str, name: str) -> jobs.JobState | None:
        return self.existing

    async def delete(self, namespace: str, name: str, *, uid: str | None = None) -> bool:
        self.deleted.append((name, uid))
        return True


@dataclass
class FakeWatcher:
    end: jobs.JobEnd = COMPLETE
    cache: list[jobs.JobState] = field(default_factory=list)
    followed: list[jobs.JobState] = field(default_factory=list)

    async def ended(self, job_state: jobs.JobState) -> jobs.JobEnd:
        self.followed.append(job_state)
        return self.end

    def jobs_of(self, owner_uid: str) -> list[jobs.JobState]:
        return [s for s in self.cache if s.owner_uid == owner_uid]

    def known(self, namespace: str, name: str) -> jobs.JobState | None:
        return next((s for s in self.cache if s.name == name), None)


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def watcher() -> FakeWatcher:
    return FakeWatcher()


def executor(
    api: FakeApi, watcher: FakeWatcher, history: job.JobHistory | None = None
) -> job.JobExecutor:
    return job.JobExecutor(
        api=cast(jobs.JobsApi, api),
        watcher=cast(jobs.JobWatcher, watcher),
        owner=OWNER,
        template=TEMPLATE,
        active_deadline=timedelta(minutes=1),
        history=history or job.JobHistory(),
    )


class TestARun:
    async def test_creates_the_slots_job_and_follows_it_to_its_end(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        outcome = await executor(api, watcher)(context())

        assert outcome == seams.Outcome(True, "Job nightly-1796002200 complete")
        [manifest] = api.created
        assert manifest["metadata"]["name"] == "nightly-1796002200"
        assert manifest["spec"]["activeDeadlineSeconds"] == 60  # the spec's timeout, no margin
        assert watcher.followed == [state()]

    async def test_a_failed_job_is_a_failed_run_with_the_controllers_words(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        watcher.end = jobs.JobEnd(False, "BackoffLimitExceeded", "Job has reached the limit")

        outcome = await executor(api, watcher)(context())

        assert outcome == seams.Outcome(
            False, "Job nightly-1796002200 failed: BackoffLimitExceeded: Job has reached the limit"
        )

    async def test_a_job_past_its_deadline_is_a_timed_out_run(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        watcher.end = jobs.JobEnd(False, "DeadlineExceeded", "Job was active longer")

        outcome = await executor(api, watcher)(context())

        assert outcome.timed_out
        assert not outcome.succeeded

    async def test_adopts_the_job_of_the_same_slot_when_it_exists(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        api.existing = state()

        outcome = await executor(api, watcher)(context())

        assert outcome.succeeded
        assert api.created == []
        assert watcher.followed == [state()]

    @pytest.mark.parametrize(
        "foreign",
        [state(owner="someone-else"), state(slot_id="reports/nightly/owner-uid/1")],
        ids=["another-owner", "another-slot"],
    )
    async def test_leaves_a_job_by_that_name_that_is_not_the_slots_alone(
        self, api: FakeApi, watcher: FakeWatcher, foreign: jobs.JobState
    ) -> None:
        api.existing = foreign

        outcome = await executor(api, watcher)(context())

        assert outcome == seams.Outcome(
            False, "Job nightly-1796002200 exists and was not created for this slot: not touched"
        )
        assert watcher.followed == []


class TestHistory:
    async def test_keeps_the_newest_succeeded_and_failed_jobs(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        failed = jobs.JobEnd(False, "BackoffLimitExceeded")
        minutes = [SLOT - timedelta(minutes=m) for m in range(1, 7)]
        watcher.cache = [
            state(minutes[0], end=COMPLETE),
            state(minutes[1], end=failed),
            state(minutes[2], end=COMPLETE),
            state(minutes[3], end=COMPLETE),
            state(minutes[4], end=failed),
            state(minutes[5]),  # still running: never a candidate
            state(minutes[3], owner="someone-else", end=COMPLETE),
        ]

        await executor(api, watcher, job.JobHistory(succeeded=2, failed=1))(context())

        assert sorted(api.deleted) == sorted(
            [
                (jobs.job_name("nightly", minutes[3]), f"uid-{int(minutes[3].timestamp())}"),
                (jobs.job_name("nightly", minutes[4]), f"uid-{int(minutes[4].timestamp())}"),
            ]
        )


class TestAbort:
    async def test_deletes_the_slots_job_by_uid(self, api: FakeApi, watcher: FakeWatcher) -> None:
        watcher.cache = [state()]

        await executor(api, watcher).abort(context())

        assert api.deleted == [("nightly-1796002200", "uid-1796002200")]

    async def test_leaves_a_job_that_is_not_the_slots_alone(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        api.existing = state(owner="someone-else")

        await executor(api, watcher).abort(context())

        assert api.deleted == []


class TestRunningSlots:
    def test_are_the_slots_of_the_scheduled_jobs_unfinished_jobs(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        earlier = SLOT - timedelta(minutes=1)
        watcher.cache = [
            state(SLOT),
            state(earlier),
            state(SLOT - timedelta(minutes=2), end=COMPLETE),
            state(SLOT - timedelta(minutes=3), deleting=True),
            state(SLOT - timedelta(minutes=4), owner="someone-else"),
        ]

        assert sorted(executor(api, watcher).running_slots()) == [earlier, SLOT]
