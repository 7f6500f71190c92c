"""The job executor over a fake Jobs API and watcher: create or adopt, follow, clean up, abort."""

import asyncio
import dataclasses
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from punctual.api import job_models
from punctual.contracts import protocols, records
from punctual.scheduling import plans, slots
from punctual.targets.job import executor as batch_job_executor
from punctual.targets.job import manifests, states, warm
from punctual.targets.job import requests as batch_job_requests
from punctual.targets.job import watcher as batch_job_watcher

OWNER = slots.JobRef(namespace="reports", name="nightly", uid="owner-uid")
SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
TEMPLATE = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
COMPLETE = states.BatchJobEnd(True, "Complete")


def context(slot: datetime = SLOT) -> records.RunContext:
    return records.RunContext(
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
    end: states.BatchJobEnd | None = None,
    slot_id: str | None = None,
    deleting: bool = False,
) -> states.BatchJobState:
    return states.BatchJobState(
        namespace=OWNER.namespace,
        name=manifests.batch_job_name(OWNER.name, slot),
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
    existing: states.BatchJobState | None = None
    created: list[dict[str, Any]] = field(default_factory=list)
    deleted: list[tuple[str, str | None]] = field(default_factory=list)

    async def create(self, request: manifests.BatchJobRequest) -> tuple[states.BatchJobState, bool]:
        if self.existing is not None:
            return self.existing, False
        manifest = json.loads(request.body)
        assert (request.namespace, request.name) == (
            manifest["metadata"]["namespace"],
            manifest["metadata"]["name"],
        )
        self.created.append(manifest)
        return state(), True

    async def read(self, namespace: str, name: str) -> states.BatchJobState | None:
        return self.existing

    async def delete(self, namespace: str, name: str, *, uid: str | None = None) -> bool:
        self.deleted.append((name, uid))
        return True

    pods: list[dict[str, Any]] | Exception = field(default_factory=list)
    job_status: dict[str, Any] = field(default_factory=dict)
    pods_read: list[tuple[str, str, int]] = field(default_factory=list)

    async def pods_of(self, namespace: str, job_name: str, *, limit: int) -> list[dict[str, Any]]:
        self.pods_read.append((namespace, job_name, limit))
        if isinstance(self.pods, Exception):
            raise self.pods
        return self.pods

    async def status_of(self, namespace: str, name: str) -> dict[str, Any]:
        return self.job_status


@dataclass
class FakeWatcher:
    end: states.BatchJobEnd = COMPLETE
    cache: list[states.BatchJobState] = field(default_factory=list)
    followed: list[states.BatchJobState] = field(default_factory=list)

    async def ended(self, job_state: states.BatchJobState) -> states.BatchJobEnd:
        self.followed.append(job_state)
        return self.end

    def jobs_of(self, owner: slots.JobRef) -> list[states.BatchJobState]:
        return [
            s for s in self.cache if s.owner_uid == owner.uid and s.namespace == owner.namespace
        ]

    def known(self, namespace: str, name: str) -> states.BatchJobState | None:
        return next((s for s in self.cache if s.name == name), None)

    sees_deletions: bool = True
    """False: a watch that is behind, and never tells a deletion."""
    deletions_seen: list[str] = field(default_factory=list)

    async def deleted(self, job_state: states.BatchJobState) -> None:
        if not self.sees_deletions:
            await asyncio.Event().wait()
        self.deletions_seen.append(job_state.uid)


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def watcher() -> FakeWatcher:
    return FakeWatcher()


def executor(
    api: FakeApi, watcher: FakeWatcher, history: plans.History | None = None
) -> batch_job_executor.BatchJobExecutor:
    return batch_job_executor.BatchJobExecutor(
        api=cast(batch_job_requests.BatchJobsApi, api),
        watcher=cast(batch_job_watcher.BatchJobWatcher, watcher),
        owner=OWNER,
        template=TEMPLATE,
        active_deadline=timedelta(minutes=1),
        history=history or plans.History(),
    )


class TestARun:
    async def test_creates_the_slots_job_and_follows_it_to_its_end(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        outcome = await executor(api, watcher)(context())

        assert outcome == records.Outcome(True, "Job nightly-1796002200 complete")
        [manifest] = api.created
        assert manifest["metadata"]["name"] == "nightly-1796002200"
        assert manifest["spec"]["activeDeadlineSeconds"] == 60  # the spec's timeout, no margin
        assert watcher.followed == [state()]

    async def test_a_failed_job_is_a_failed_run_with_the_controllers_words(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        watcher.end = states.BatchJobEnd(False, "BackoffLimitExceeded", "Job has reached the limit")

        outcome = await executor(api, watcher)(context())

        assert outcome == records.Outcome(
            False, "Job nightly-1796002200 failed: BackoffLimitExceeded: Job has reached the limit"
        )

    async def test_a_job_past_its_deadline_is_a_timed_out_run(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        watcher.end = states.BatchJobEnd(False, "DeadlineExceeded", "Job was active longer")

        outcome = await executor(api, watcher)(context())

        assert outcome.timed_out
        assert not outcome.succeeded

    async def test_a_job_deleted_before_it_finished_is_a_cancelled_run(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        """Another replica's Replace, the ScheduledJob's deletion or a user deleted it: no
        verdict on its workload."""
        watcher.end = states.DELETED

        outcome = await executor(api, watcher)(context())

        assert outcome == records.Outcome(
            False, "Job nightly-1796002200 deleted before it finished", cancelled=True
        )

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
        self, api: FakeApi, watcher: FakeWatcher, foreign: states.BatchJobState
    ) -> None:
        api.existing = foreign

        outcome = await executor(api, watcher)(context())

        assert outcome == records.Outcome(
            False, "Job nightly-1796002200 exists and was not created for this slot: not touched"
        )
        assert watcher.followed == []


class TestPreparingTheJobBeforeItsSlot:
    def test_the_executor_prepares_runs(self, api: FakeApi, watcher: FakeWatcher) -> None:
        assert isinstance(executor(api, watcher), protocols.PreparesRuns)

    async def test_a_prepared_slot_sends_the_job_built_ahead(
        self, api: FakeApi, watcher: FakeWatcher, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        run = executor(api, watcher)
        run.prepare(context())

        def not_at_the_slot(*args: object, **kwargs: object) -> dict[str, Any]:
            raise AssertionError("the Job was built again at the slot")

        monkeypatch.setattr(manifests, "batch_job_manifest", not_at_the_slot)
        outcome = await run(context())

        assert outcome.succeeded
        [manifest] = api.created
        assert manifest["metadata"]["name"] == "nightly-1796002200"

    async def test_the_job_built_ahead_is_the_one_built_at_the_slot(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        prepared = executor(api, watcher)
        prepared.prepare(context())
        await prepared(context())
        await executor(api, watcher)(context())

        ahead, at_the_slot = api.created
        assert ahead == at_the_slot

    async def test_a_slot_that_was_not_prepared_builds_its_own_job(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        run = executor(api, watcher)
        run.prepare(context(SLOT + timedelta(minutes=1)))

        await run(context())

        [manifest] = api.created
        assert manifest["metadata"]["name"] == "nightly-1796002200"

    async def test_only_the_two_newest_prepared_jobs_are_kept(
        self, api: FakeApi, watcher: FakeWatcher, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        run = executor(api, watcher)
        slots_ = [SLOT + timedelta(minutes=minutes) for minutes in range(3)]
        for slot in slots_:
            run.prepare(context(slot))
        built: list[datetime] = []
        build = manifests.BatchJobTemplate.request

        def counted(
            template: manifests.BatchJobTemplate, **kwargs: Any
        ) -> manifests.BatchJobRequest:
            built.append(kwargs["slot"])
            return build(template, **kwargs)

        monkeypatch.setattr(manifests.BatchJobTemplate, "request", counted)
        for slot in slots_:
            await run(context(slot))

        assert built == [SLOT]  # the oldest was let go: built at its slot; the others ahead
        assert len(api.created) == 3


class TestHistory:
    async def test_keeps_the_newest_succeeded_and_failed_jobs(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        failed = states.BatchJobEnd(False, "BackoffLimitExceeded")
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

        await executor(api, watcher, plans.History(succeeded=2, failed=1))(context())

        assert sorted(api.deleted) == sorted(
            [
                (
                    manifests.batch_job_name("nightly", minutes[3]),
                    f"uid-{int(minutes[3].timestamp())}",
                ),
                (
                    manifests.batch_job_name("nightly", minutes[4]),
                    f"uid-{int(minutes[4].timestamp())}",
                ),
            ]
        )


class TestAbort:
    async def test_deletes_the_slots_job_by_uid(self, api: FakeApi, watcher: FakeWatcher) -> None:
        watcher.cache = [state()]

        await executor(api, watcher).abort(context())

        assert api.deleted == [("nightly-1796002200", "uid-1796002200")]

    async def test_returns_once_the_watch_has_seen_the_job_gone(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        """As CronJob's Replace: the Job replaced is gone before the new one is created."""
        watcher.cache = [state()]

        await executor(api, watcher).abort(context())

        assert watcher.deletions_seen == ["uid-1796002200"]

    @pytest.mark.looptime
    async def test_a_deletion_the_watch_does_not_tell_is_waited_for_at_most_a_while(
        self, api: FakeApi, watcher: FakeWatcher, caplog: pytest.LogCaptureFixture
    ) -> None:
        watcher.cache, watcher.sees_deletions = [state()], False
        began = asyncio.get_running_loop().time()

        await executor(api, watcher).abort(context())

        waited = asyncio.get_running_loop().time() - began
        assert waited == pytest.approx(batch_job_executor.DELETION_SEEN.total_seconds())
        assert api.deleted == [("nightly-1796002200", "uid-1796002200")]
        assert "not seen within" in caplog.text

    async def test_leaves_a_job_that_is_not_the_slots_alone(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        api.existing = state(owner="someone-else")

        await executor(api, watcher).abort(context())

        assert api.deleted == []
        assert watcher.deletions_seen == []


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

    @pytest.mark.parametrize(
        "slot_id",
        [
            pytest.param(f"{slots.slot_id(OWNER, SLOT)[:-13]}\u00b2", id="a-unicode-digit"),
            pytest.param(f"{slots.slot_id(OWNER, SLOT)[:-13]}{'9' * 30}", id="past-year-9999"),
            pytest.param(f"{slots.slot_id(OWNER, SLOT)[:-13]}1/2", id="more-parts"),
        ],
    )
    def test_a_job_annotated_with_no_slot_id_is_no_run_and_hides_none(
        self, api: FakeApi, watcher: FakeWatcher, slot_id: str
    ) -> None:
        watcher.cache = [state(SLOT), state(SLOT - timedelta(minutes=1), slot_id=slot_id)]

        assert executor(api, watcher).running_slots() == [SLOT]


LEAD = timedelta(seconds=30)
WARM_TEMPLATE = {
    "spec": {
        "template": {
            "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["true"]}]}
        }
    }
}


def warm_executor(
    api: FakeApi,
    watcher: FakeWatcher,
    *,
    mode: job_models.WarmStartMode = job_models.WarmStartMode.AUTO,
    reports: protocols.WarmStartReports | None = None,
) -> batch_job_executor.WarmBatchJobExecutor:
    return batch_job_executor.WarmBatchJobExecutor(
        api=cast(batch_job_requests.BatchJobsApi, api),
        watcher=cast(batch_job_watcher.BatchJobWatcher, watcher),
        owner=OWNER,
        template=WARM_TEMPLATE,
        active_deadline=timedelta(minutes=1),
        lead=LEAD,
        mode=mode,
        gate_image="registry.example/punctual-gate:1.0",
        reports=reports,
    )


def warm_state(mode: records.StartMode = records.StartMode.EXEC) -> states.BatchJobState:
    return dataclasses.replace(state(), warm_start=mode)


class TestAWarmStart:
    def test_its_executor_arms_ahead_and_the_cold_one_does_not(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        assert isinstance(warm_executor(api, watcher), protocols.ArmsAhead)
        assert warm_executor(api, watcher).warm_lead == LEAD
        assert not isinstance(executor(api, watcher), protocols.ArmsAhead)

    @pytest.mark.parametrize(
        ("mode", "annotated"),
        [(job_models.WarmStartMode.AUTO, "Exec"), (job_models.WarmStartMode.INIT, "Init")],
    )
    async def test_arming_creates_the_slots_job_rewritten_with_its_deadline_a_lead_longer(
        self, api: FakeApi, watcher: FakeWatcher, mode: job_models.WarmStartMode, annotated: str
    ) -> None:
        await warm_executor(api, watcher, mode=mode).arm(context())

        [manifest] = api.created
        assert manifest["metadata"]["name"] == "nightly-1796002200"
        assert manifest["metadata"]["annotations"][warm.WARM_START_ANNOTATION] == annotated
        assert manifest["metadata"]["annotations"][warm.RELEASE_AT_ANNOTATION] == (
            "2026-11-30T01:30:00Z"
        )
        assert manifest["metadata"]["annotations"][manifests.SLOT_ID_ANNOTATION] == (
            slots.slot_id(OWNER, SLOT)
        )
        assert manifest["spec"]["activeDeadlineSeconds"] == 90  # lead + timeout
        init = manifest["spec"]["template"]["spec"]["initContainers"]
        assert init[0]["image"] == "registry.example/punctual-gate:1.0"

    async def test_the_run_follows_the_job_it_armed_without_creating_it_again(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        target = warm_executor(api, watcher)
        await target.arm(context())

        outcome = await target(context())

        assert len(api.created) == 1
        assert watcher.followed == [state()]
        assert outcome.succeeded

    async def test_the_run_adopts_the_job_another_replica_armed_and_says_its_mode(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        api.existing = warm_state(records.StartMode.INIT)

        outcome = await warm_executor(api, watcher)(context())

        assert api.created == []
        assert outcome.start_mode == records.StartMode.INIT

    async def test_a_slot_not_armed_runs_cold_from_the_serialised_template_and_says_so(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        outcome = await warm_executor(api, watcher)(context())

        [manifest] = api.created
        assert warm.WARM_START_ANNOTATION not in manifest["metadata"]["annotations"]
        assert manifest["spec"]["activeDeadlineSeconds"] == 60
        assert outcome.start_mode == records.StartMode.COLD

    async def test_the_cold_executor_says_nothing_of_a_start_mode(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        assert (await executor(api, watcher)(context())).start_mode is None

    async def test_arming_adopts_the_slots_job_already_there(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        api.existing = warm_state()
        target = warm_executor(api, watcher)

        await target.arm(context())
        await target(context())

        assert api.created == []
        assert watcher.followed == [warm_state()]

    async def test_arming_refuses_a_job_by_that_name_that_is_not_the_slots(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        api.existing = state(owner="someone-else")

        with pytest.raises(batch_job_requests.BatchJobApiError, match="not armed"):
            await warm_executor(api, watcher).arm(context())

    async def test_disarming_deletes_the_slots_job_by_uid_and_forgets_it(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        target = warm_executor(api, watcher)
        await target.arm(context())
        watcher.cache = [state()]

        await target.disarm(context())

        assert api.deleted == [("nightly-1796002200", "uid-1796002200")]
        watcher.cache = []
        await target(context())  # were it run after all: created anew, not the deleted one
        assert len(api.created) == 2

    async def test_disarming_leaves_a_job_that_is_not_the_slots_alone(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        api.existing = state(owner="someone-else")

        await warm_executor(api, watcher).disarm(context())

        assert api.deleted == []


@dataclass
class Checks:
    told: list[tuple[slots.JobRef, datetime, str | None]] = field(default_factory=list)

    def warm_start_checked(
        self, job: slots.JobRef, *, scheduled_time: datetime, not_ready: str | None
    ) -> None:
        self.told.append((job, scheduled_time, not_ready))


def a_pod(state: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "nightly-1796002200-x7k2p"},
        "spec": {"containers": [{"name": "c", "command": [warm.GATE_BINARY, "--at", "1"]}]},
        "status": {"containerStatuses": [{"name": "c", "state": state}]},
    }


async def run_checked(api: FakeApi, watcher: FakeWatcher, checks: Checks) -> records.Outcome:
    """A warm slot's run, and its check at the slot let finish."""
    outcome = await warm_executor(api, watcher, reports=checks)(context())
    for _ in range(5):
        await asyncio.sleep(0)
    return outcome


class TestAWarmRunChecksItsPodAtItsSlot:
    async def test_a_pod_at_its_gate_is_reported_ready(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        api.existing, api.pods = warm_state(), [a_pod({"running": {}})]
        checks = Checks()

        await run_checked(api, watcher, checks)

        assert checks.told == [(OWNER, SLOT, None)]
        assert api.pods_read == [("reports", "nightly-1796002200", 5)]

    async def test_a_pod_that_cannot_pull_its_image_is_reported_with_its_reason_and_runs_on(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        api.existing = warm_state()
        api.pods = [a_pod({"waiting": {"reason": "ImagePullBackOff"}})]
        checks = Checks()

        outcome = await run_checked(api, watcher, checks)

        assert checks.told == [
            (OWNER, SLOT, "pod nightly-1796002200-x7k2p: ImagePullBackOff (container c)")
        ]
        assert outcome.succeeded  # the run is the Job's, whenever its pod starts

    async def test_a_job_without_a_pod_says_so_with_its_conditions(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        api.existing = warm_state()
        api.job_status = {"conditions": [{"type": "X", "status": "True", "reason": "Quota"}]}
        checks = Checks()

        await run_checked(api, watcher, checks)

        [(_, _, told)] = checks.told
        assert told == (
            "no pod (the Job controller created none: see the Job's Events); the Job: Quota"
        )

    async def test_a_read_that_fails_reports_nothing_and_the_run_goes_on(
        self, api: FakeApi, watcher: FakeWatcher
    ) -> None:
        api.existing = warm_state()
        api.pods = batch_job_requests.BatchJobApiError("listing the pods: HTTP 403 Forbidden")
        checks = Checks()

        outcome = await run_checked(api, watcher, checks)

        assert checks.told == []
        assert outcome.succeeded

    async def test_a_cold_run_is_not_checked(self, api: FakeApi, watcher: FakeWatcher) -> None:
        checks = Checks()

        outcome = await run_checked(api, watcher, checks)

        assert outcome.start_mode == records.StartMode.COLD
        assert checks.told == []
        assert api.pods_read == []
