"""The firing: made once where a run is decided, it says the same of the run to the claim, the
executor, the lease and the record, whatever decided it."""

from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import firings, records
from punctual.scheduling import interval, plans, slots

JOB = slots.JobRef(namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-00000000abcd")
SLOT = datetime(2026, 12, 1, 1, 30, tzinfo=UTC)
JITTER = timedelta(seconds=7)
PLAN = plans.JobPlan(schedule=interval.IntervalSchedule(every=timedelta(hours=1)), offset=JITTER)
ASKED_AT = datetime(2026, 12, 1, 9, 15, 2, 123456, tzinfo=UTC)
ASKED = datetime(2026, 12, 1, 9, 15, 2, 123000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("firing", "slot_id", "scheduled_time", "trigger", "purpose", "token", "backfill"),
    [
        pytest.param(
            firings.scheduled(JOB, SLOT, PLAN),
            slots.slot_id(JOB, SLOT),
            SLOT + JITTER,
            records.Trigger.SCHEDULED,
            records.ScheduledSlot(),
            None,
            None,
            id="a-slot-of-the-schedule",
        ),
        pytest.param(
            firings.asked(JOB, "deploy-42", at=ASKED_AT),
            slots.run_now_slot_id(JOB, "deploy-42"),
            ASKED,
            records.Trigger.MANUAL,
            records.RunNow("deploy-42"),
            "deploy-42",
            None,
            id="a-run-asked-for-by-hand-is-due-when-asked-to-the-millisecond",
        ),
        pytest.param(
            firings.backfilled(JOB, SLOT, PLAN, "q3"),
            slots.slot_id(JOB, SLOT),
            SLOT + JITTER,
            records.Trigger.BACKFILL,
            records.BackfilledSlot("q3"),
            None,
            "q3",
            id="a-backfilled-slot-keeps-its-slot-s-id",
        ),
    ],
)
def test_what_each_way_of_deciding_a_run_says_of_it(
    firing: firings.Firing,
    slot_id: str,
    *,
    scheduled_time: datetime,
    trigger: records.Trigger,
    purpose: records.ClaimPurpose,
    token: str | None,
    backfill: str | None,
) -> None:
    claim = firing.claim(holder="r1:1", ttl=timedelta(minutes=1))
    context = firing.context(timeout=timedelta(minutes=5))
    lease = firing.lease(replica="r1", started_at=scheduled_time)
    record = firing.record(records.RunResult.SUCCEEDED, replica="r1")

    assert (claim.slot_id, claim.scheduled_time, claim.purpose) == (
        slot_id,
        scheduled_time,
        purpose,
    )
    assert (context.slot_id, context.scheduled_time, context.token) == (
        slot_id,
        scheduled_time,
        token,
    )
    assert (lease.slot_id, lease.slot) == (slot_id, firing.slot)
    assert (record.trigger, record.token, record.backfill, record.scheduled_time) == (
        trigger,
        token,
        backfill,
        scheduled_time,
    )


def test_a_slot_claimed_only_to_count_it_missed_runs_nothing() -> None:
    claim = firings.scheduled(JOB, SLOT, PLAN).claim(holder="r1:1", ttl=timedelta(1), run=False)

    assert (claim.purpose, claim.run) == (records.CountedMissed(), False)


class TestALeaseTakenOverIsTheSameRun:
    @pytest.mark.parametrize(
        "firing",
        [
            pytest.param(firings.scheduled(JOB, SLOT, PLAN), id="a-slot-of-the-schedule"),
            pytest.param(firings.asked(JOB, "deploy-42", at=ASKED_AT), id="a-run-asked-for"),
        ],
    )
    def test_its_firing_comes_back_from_its_lease(self, firing: firings.Firing) -> None:
        lease = firing.lease(replica="r1", started_at=SLOT)

        assert firings.of_lease(lease, PLAN) == firing

    def test_its_retry_is_the_next_attempt_of_the_same_run(self) -> None:
        firing = firings.asked(JOB, "deploy-42", at=ASKED_AT)

        retried = firing.retried()

        assert (retried.slot_id, retried.token, retried.trigger, retried.attempt) == (
            firing.slot_id,
            "deploy-42",
            records.Trigger.MANUAL,
            2,
        )

    def test_a_slot_of_a_job_no_longer_armed_is_due_at_its_slot(self) -> None:
        lease = firings.scheduled(JOB, SLOT, PLAN).lease(replica="r1", started_at=SLOT)

        firing = firings.of_lease(lease, None)

        assert (firing.slot_id, firing.scheduled_time) == (lease.slot_id, SLOT)
