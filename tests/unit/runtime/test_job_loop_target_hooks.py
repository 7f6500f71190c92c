"""What the loop tells targets that outlive a call (a Job), and per-job locks (the queue target).

An ``every: 10s`` job is armed at 00:00:05: its slots are 00:00:10, 00:00:20, ...
- ``abort`` is called for a run the loop gave up on (Replace, the loop's timeout), never when
  the operator stops or forgets the job;
- a target that reports a timeout of its own (a Job's DeadlineExceeded) is a TimedOut run;
- the Job's name reaches the active run;
- a job armed with a lock of its own claims through it, missed slots included (marked so).
"""

import asyncio
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import cast

import pytest
from runtime_doubles import JOB, LOOPTIME, SECOND, FakeWall, GrantingLock, Target, at, ats, every

from punctual.contracts import protocols, records
from punctual.contracts.records import Outcome, RunResult
from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import missed, slots
from punctual.scheduling.overlap import ConcurrencyPolicy
from punctual.stores.memory import MemoryStore
from punctual.targets.job import executor as job_executor
from punctual.targets.job import manifests, states
from punctual.targets.job import requests as job_requests
from punctual.targets.job import watcher as job_watcher

pytestmark = LOOPTIME

PERIOD = 10 * SECOND


@pytest.fixture
def base() -> datetime:
    return at(5)


@dataclass
class JobLikeTarget(Target):
    """A target whose runs go on elsewhere: it can be aborted, and names what it creates."""

    aborted: list[datetime] = field(default_factory=list)

    async def abort(self, context: records.RunContext) -> None:
        await asyncio.sleep(0.01)
        self.aborted.append(context.slot)

    def job_name(self, context: records.RunContext) -> str:
        return f"nightly-{int(context.slot.timestamp())}"


class RecordingLock(GrantingLock):
    def __init__(self, wall: FakeWall) -> None:
        super().__init__(wall)
        self.claims: list[records.Claim] = []

    def answer(self, claim: records.Claim) -> bool:
        self.claims.append(claim)
        return True


class TestAbortingTheTargetsWork:
    def test_a_job_like_target_is_abortable_and_names_its_jobs(self, wall: FakeWall) -> None:
        assert isinstance(JobLikeTarget(wall), protocols.Abortable)
        assert isinstance(JobLikeTarget(wall), protocols.NamesJobs)
        assert not isinstance(Target(wall), protocols.Abortable)

    async def test_replace_aborts_the_replaced_run(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = JobLikeTarget(wall, hang=True)
        plan = every(PERIOD, concurrency=ConcurrencyPolicy.REPLACE)
        supervisor.arm(JOB, plan, target, resume_after=at(5))
        await wall.sleep_until(at(25))

        assert target.aborted == ats(10)
        [replaced] = store.jobs[JOB].finished
        assert replaced.message == "cancelled: replaced by a newer slot"

    async def test_the_loops_timeout_aborts_the_run(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = JobLikeTarget(wall, hang=True)
        supervisor.arm(JOB, every(PERIOD, timeout=3 * SECOND), target, resume_after=at(5))
        await wall.sleep_until(at(14))

        assert target.aborted == ats(10)
        [record] = store.jobs[JOB].finished
        assert record.result == RunResult.TIMED_OUT

    async def test_stopping_the_operator_leaves_the_targets_work_alone(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = JobLikeTarget(wall, hang=True)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(12))

        await supervisor.shutdown()

        assert target.cancelled == 1
        assert target.aborted == []
        [record] = store.jobs[JOB].finished
        assert record.message == "cancelled: operator stopping"

    async def test_forgetting_the_job_leaves_the_targets_work_alone(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = JobLikeTarget(wall, hang=True)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(12))

        await supervisor.disarm(JOB)

        assert target.aborted == []

    async def test_a_run_that_ends_on_its_own_is_not_aborted(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = JobLikeTarget(wall, duration=SECOND, outcome=Outcome(False, "Job failed"))
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(25))

        assert target.aborted == []


class TestATargetsOwnTimeout:
    async def test_is_recorded_as_timed_out_with_the_targets_message(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        outcome = Outcome(False, "Job nightly-10 failed: DeadlineExceeded", timed_out=True)
        target = JobLikeTarget(wall, duration=3 * SECOND, outcome=outcome)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(15))

        [record] = store.jobs[JOB].finished
        assert record.result == RunResult.TIMED_OUT
        assert record.message == "Job nightly-10 failed: DeadlineExceeded"
        assert target.aborted == []  # the target stopped it already


class TestTheActiveRunNamesItsJob:
    async def test_with_a_target_that_names_jobs(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = JobLikeTarget(wall, duration=SECOND)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(11))

        [started] = store.jobs[JOB].started
        assert started.job_name == f"nightly-{int(at(10).timestamp())}"

    async def test_not_with_other_targets(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        supervisor.arm(JOB, every(PERIOD), Target(wall), resume_after=at(5))
        await wall.sleep_until(at(11))

        [started] = store.jobs[JOB].started
        assert started.job_name is None


class TestAJobsOwnLock:
    async def test_claims_its_slots_instead_of_the_supervisors(
        self, supervisor: Supervisor, wall: FakeWall, lock: protocols.SlotLock
    ) -> None:
        own = RecordingLock(wall)
        target = Target(wall)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5), lock=own)
        await wall.sleep_until(at(25))

        assert [claim.slot for claim in own.claims] == ats(10, 20)
        assert target.slots == ats(10, 20)
        assert lock.claimed == frozenset()  # type: ignore[attr-defined]

    async def test_is_told_the_scheduled_time_and_that_the_claim_is_for_a_run(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        own = RecordingLock(wall)
        plan = every(PERIOD, offset=3 * SECOND)
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(5), lock=own)
        await wall.sleep_until(at(14))

        [claim] = own.claims
        assert claim.slot == at(10)
        assert claim.scheduled_time == at(13)
        assert claim.run is True

    async def test_claims_missed_slots_without_a_run(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        own = RecordingLock(wall)
        plan = every(PERIOD, policy=missed.MissedRunPolicy.SKIP)
        # Resumed at 00:00:05 after an outage that began at 00:00:00 - 60 s: six slots missed.
        supervisor.arm(JOB, plan, Target(wall), resume_after=at(-60), lock=own)
        await wall.sleep_until(at(6))

        assert [(claim.slot, claim.run) for claim in own.claims] == [
            (at(seconds), False) for seconds in range(-50, 1, 10)
        ]
        assert store.jobs[JOB].missed == 6

    async def test_re_arming_without_it_goes_back_to_the_supervisors_lock(
        self, supervisor: Supervisor, wall: FakeWall, lock: protocols.SlotLock
    ) -> None:
        own = RecordingLock(wall)
        supervisor.arm(JOB, every(PERIOD), Target(wall), resume_after=at(5), lock=own)
        await wall.sleep_until(at(15))
        supervisor.arm(JOB, every(PERIOD), Target(wall), resume_after=at(15))
        await wall.sleep_until(at(25))

        assert [claim.slot for claim in own.claims] == ats(10)
        assert len(lock.claimed) == 1  # type: ignore[attr-defined]


@dataclass
class SharedTarget(JobLikeTarget):
    """A target that also sees runs this loop did not start (another replica's Jobs)."""

    elsewhere: set[datetime] = field(default_factory=set)

    def running_slots(self) -> set[datetime]:
        return self.elsewhere | {context.slot for context in self.contexts[self.running_from :]}

    @property
    def running_from(self) -> int:
        return len(self.contexts) - self.running


class TestRunsElsewhereCount:
    """Another replica runs the slot of 00:00:00 until told otherwise."""

    def arm(self, supervisor: Supervisor, target: SharedTarget, policy: ConcurrencyPolicy) -> None:
        target.elsewhere = {at(0)}
        supervisor.arm(JOB, every(PERIOD, concurrency=policy), target, resume_after=at(5))

    async def test_forbid_skips_while_a_run_goes_on_elsewhere(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = SharedTarget(wall, duration=SECOND)
        self.arm(supervisor, target, ConcurrencyPolicy.FORBID)
        await wall.sleep_until(at(15))
        target.elsewhere.clear()
        await wall.sleep_until(at(25))

        assert target.slots == ats(20)
        [skipped, ran] = store.jobs[JOB].finished
        assert (skipped.slot, skipped.result) == (at(10), RunResult.SKIPPED_OVERLAP)
        assert skipped.message == "1 run(s) active, concurrencyPolicy Forbid"
        assert (ran.slot, ran.result) == (at(20), RunResult.SUCCEEDED)

    async def test_replace_aborts_the_run_elsewhere(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = SharedTarget(wall, duration=SECOND)
        self.arm(supervisor, target, ConcurrencyPolicy.REPLACE)
        await wall.sleep_until(at(15))

        assert target.aborted == ats(0)
        assert target.slots == ats(10)

    async def test_allow_runs_alongside(self, supervisor: Supervisor, wall: FakeWall) -> None:
        target = SharedTarget(wall, duration=SECOND)
        self.arm(supervisor, target, ConcurrencyPolicy.ALLOW)
        await wall.sleep_until(at(15))

        assert target.slots == ats(10)
        assert target.aborted == []

    async def test_queue_waits_for_the_run_elsewhere(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = SharedTarget(wall, duration=SECOND)
        self.arm(supervisor, target, ConcurrencyPolicy.QUEUE)
        await wall.sleep_until(at(17))
        assert target.slots == []

        target.elsewhere.clear()
        await wall.sleep_until(at(19))

        assert target.slots == ats(10)
        assert abs(target.started[0] - at(17)) <= SECOND

    async def test_its_own_runs_are_not_counted_twice(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        # Runs of 15 s: the slot of 00:00:20 finds this loop's own run of 00:00:10 going,
        # which the target sees too; it is one run, not two.
        target = SharedTarget(wall, duration=15 * SECOND)
        supervisor.arm(
            JOB, every(PERIOD, concurrency=ConcurrencyPolicy.FORBID), target, resume_after=at(5)
        )
        await wall.sleep_until(at(21))

        [skipped] = store.jobs[JOB].finished
        assert skipped.message == "1 run(s) active, concurrencyPolicy Forbid"


class TestAnOperatorStopHandsOverTheRunsThatGoOn:
    """With run leases (``hand_over``), a run whose work goes on at its target without the
    operator (a Job: the executor sees runs) is not recorded by the stopping replica: its lease
    expires, and the replica that takes it over follows the Job to its real end."""

    async def test_a_run_whose_job_goes_on_is_left_unrecorded_and_its_job_alone(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = SharedTarget(wall, hang=True)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(12))

        await supervisor.shutdown(hand_over=True)

        assert target.cancelled == 1
        assert target.aborted == []
        assert [run.slot for run in store.jobs[JOB].started] == ats(10)
        assert store.jobs[JOB].finished == []

    async def test_a_run_whose_work_cannot_be_followed_is_recorded_cancelled(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = JobLikeTarget(wall, hang=True)  # sees no runs: nobody could follow it
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(12))

        await supervisor.shutdown(hand_over=True)

        [record] = store.jobs[JOB].finished
        assert (record.result, record.message) == (
            RunResult.CANCELLED,
            "cancelled: operator stopping",
        )

    async def test_without_run_leases_a_run_whose_job_goes_on_is_recorded_cancelled(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = SharedTarget(wall, hang=True)
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(12))

        await supervisor.shutdown()

        [record] = store.jobs[JOB].finished
        assert record.result == RunResult.CANCELLED

    async def test_the_replica_that_takes_its_lease_over_follows_the_job_to_its_end(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = SharedTarget(wall, duration=SECOND, elsewhere={at(0)})  # replica-b's Job
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(7))

        await supervisor.lost(
            records.Lease(
                job=JOB, slot=at(0), slot_id=slots.slot_id(JOB, at(0)), replica="replica-b"
            )
        )
        await wall.sleep_until(at(9))

        assert target.slots == ats(0)  # created again: AlreadyExists, the Job is followed
        [record] = store.jobs[JOB].finished
        assert (record.slot, record.result, record.attempt) == (at(0), RunResult.SUCCEEDED, 1)
        assert record.replica != "replica-b"

    async def test_a_job_that_ended_while_nobody_followed_it_is_a_lost_run_as_any(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = SharedTarget(wall, duration=SECOND)  # no Job of 00:00:00 runs any more
        supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
        await wall.sleep_until(at(7))

        await supervisor.lost(
            records.Lease(
                job=JOB, slot=at(0), slot_id=slots.slot_id(JOB, at(0)), replica="replica-b"
            )
        )

        assert target.slots == []
        [record] = store.jobs[JOB].finished
        assert (record.slot, record.result) == (at(0), RunResult.LOST)


async def test_a_target_whose_work_was_ended_from_outside_is_a_cancelled_run(
    supervisor: Supervisor, wall: FakeWall, store: MemoryStore
) -> None:
    deleted = Outcome(False, "Job nightly-10 deleted before it finished", cancelled=True)
    target = JobLikeTarget(wall, duration=SECOND, outcome=deleted)
    supervisor.arm(JOB, every(PERIOD), target, resume_after=at(5))
    await wall.sleep_until(at(12))

    [record] = store.jobs[JOB].finished
    assert (record.result, record.message) == (RunResult.CANCELLED, deleted.message)


class ApiDoubles:
    """The job target's Jobs API and watch, as the executor sees them: a Job runs until it is
    deleted, and its deletion comes through the watch ``seen_after`` later. ``log`` is what the
    API server and the watch saw, in order."""

    def __init__(self, *, seen_after: float) -> None:
        self.seen_after = seen_after
        self.log: list[tuple[str, str]] = []
        self.jobs: dict[str, states.BatchJobState] = {}
        self.gone: dict[str, asyncio.Event] = {}

    async def create(self, request: manifests.BatchJobRequest) -> tuple[states.BatchJobState, bool]:
        body = json.loads(request.body)
        body["metadata"] |= {"uid": f"uid-{request.name}", "resourceVersion": "1"}
        state = self.jobs[request.name] = states.BatchJobState.from_body(body)
        self.gone[request.name] = asyncio.Event()
        self.log.append(("created", request.name))
        return state, True

    async def read(self, namespace: str, name: str) -> states.BatchJobState | None:
        return self.jobs.get(name)

    async def delete(self, namespace: str, name: str, *, uid: str | None = None) -> bool:
        self.log.append(("deleted", name))
        asyncio.get_running_loop().call_later(self.seen_after, self._seen, name)
        return self.jobs.pop(name, None) is not None

    def _seen(self, name: str) -> None:
        self.log.append(("seen gone", name))
        self.gone[name].set()

    # the watch
    async def ended(self, job_state: states.BatchJobState) -> states.BatchJobEnd:
        await self.gone[job_state.name].wait()
        return states.DELETED

    async def deleted(self, job_state: states.BatchJobState) -> None:
        await self.gone[job_state.name].wait()

    def known(self, namespace: str, name: str) -> states.BatchJobState | None:
        return self.jobs.get(name)

    def jobs_of(self, owner: slots.JobRef) -> list[states.BatchJobState]:
        return list(self.jobs.values())


class TestReplaceInCronJobsOrder:
    """The running Job is deleted and seen gone before the next slot's Job is created: never
    both at once (Kubernetes' own CronJob e2e scenario saw the new one ADDED first)."""

    async def test_the_new_slots_job_is_created_once_the_old_one_is_seen_gone(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        doubles = ApiDoubles(seen_after=2.0)
        executor = job_executor.BatchJobExecutor(
            api=cast(job_requests.BatchJobsApi, doubles),
            watcher=cast(job_watcher.BatchJobWatcher, doubles),
            owner=JOB,
            template={"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}},
            active_deadline=timedelta(hours=1),
        )
        plan = every(PERIOD, concurrency=ConcurrencyPolicy.REPLACE, timeout=timedelta(hours=1))
        supervisor.arm(JOB, plan, executor, resume_after=at(5))
        await wall.sleep_until(at(25))

        first, second = (manifests.batch_job_name(JOB.name, slot) for slot in ats(10, 20))
        assert doubles.log == [
            ("created", first),
            ("deleted", first),
            ("seen gone", first),
            ("created", second),
        ]
        [replaced] = store.jobs[JOB].finished
        assert (replaced.slot, replaced.result) == (at(10), RunResult.CANCELLED)
        [running] = store.jobs[JOB].started[1:]
        assert running.slot == at(20)

    async def test_a_replaced_runs_abort_holds_the_new_run_back_until_it_is_done(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = SlowAbortTarget(wall, hang=True)
        plan = every(PERIOD, concurrency=ConcurrencyPolicy.REPLACE)
        supervisor.arm(JOB, plan, target, resume_after=at(5))
        await wall.sleep_until(at(25))

        assert target.aborted == ats(10)
        assert target.slots == ats(10, 20)
        assert target.started[1] >= at(23)  # the abort took 3 s


@dataclass
class SlowAbortTarget(JobLikeTarget):
    async def abort(self, context: records.RunContext) -> None:
        await asyncio.sleep(3)
        self.aborted.append(context.slot)
