"""``plans.JobPlan``: a job's resolved timing and policies, and the slot-claim TTL."""

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from punctual.runtime import leases
from punctual.scheduling import cron, interval, missed, overlap, plans, timeline


def every(duration: timedelta) -> timeline.Schedule:
    return interval.IntervalSchedule(every=duration)


class TestAClaimOutlivesItsHolderByTwoPeriodsOrTheTimeoutPlusAMinute:
    @pytest.mark.parametrize(
        ("schedule", "timeout", "ttl"),
        [
            pytest.param(every(timedelta(seconds=10)), timedelta(minutes=10),
                         timedelta(minutes=11), id="short-period-timeout-wins"),
            pytest.param(every(timedelta(hours=1)), timedelta(minutes=10),
                         timedelta(hours=2), id="long-period-two-periods-win"),
            pytest.param(every(timedelta(minutes=5)), timedelta(minutes=9),
                         timedelta(minutes=10), id="a-tie"),
            pytest.param(every(timedelta(milliseconds=250)), timedelta(seconds=1),
                         timedelta(seconds=61), id="sub-second-interval"),
            pytest.param(cron.parse("30 2 * * *", zone=ZoneInfo("Europe/Copenhagen")),
                         timedelta(minutes=10), timedelta(days=2), id="daily-cron"),
            pytest.param(cron.parse("*/10 * * * * *", zone=ZoneInfo("UTC")),
                         timedelta(seconds=5), timedelta(seconds=65), id="ten-second-cron"),
        ],
    )  # fmt: skip
    def test_lock_ttl(
        self, schedule: timeline.Schedule, timeout: timedelta, ttl: timedelta
    ) -> None:
        assert plans.JobPlan(schedule=schedule, timeout=timeout).lock_ttl == ttl


QUEUE = overlap.ConcurrencyPolicy.QUEUE
FORBID = overlap.ConcurrencyPolicy.FORBID


def deadline(duration: timedelta) -> missed.MissedRuns:
    return missed.MissedRuns(starting_deadline=duration)


class TestAClaimLivesAsLongAsItsSlotCanStillStartOrRun:
    """Each second: a job ``every: 1s``, so that two periods never win."""

    @pytest.mark.parametrize(
        ("plan", "ttl"),
        [
            pytest.param({}, timedelta(minutes=11), id="a-run-started-at-once"),
            pytest.param({"concurrency": QUEUE, "max_queued": 3}, timedelta(minutes=41),
                         id="queued-behind-a-run-and-three-queued"),
            pytest.param({"concurrency": FORBID, "max_queued": 3}, timedelta(minutes=11),
                         id="only-queue-queues"),
            pytest.param({"retry_lost_runs": True}, timedelta(minutes=21, seconds=20),
                         id="a-lost-run-noticed-and-run-again"),
            pytest.param({"concurrency": QUEUE, "max_queued": 1, "retry_lost_runs": True},
                         timedelta(minutes=31, seconds=20), id="queued-then-lost-and-retried"),
            pytest.param({"missed_runs": deadline(timedelta(hours=2))},
                         timedelta(hours=2, minutes=1), id="claimed-late-within-its-deadline"),
            pytest.param({"missed_runs": deadline(timedelta(minutes=1))}, timedelta(minutes=11),
                         id="a-short-deadline-changes-nothing"),
            pytest.param({"concurrency": QUEUE, "max_queued": 100, "timeout": timedelta(hours=1)},
                         timedelta(days=1, minutes=1),
                         id="a-long-queue-is-kept-a-day"),
            pytest.param({"missed_runs": deadline(timedelta(days=365))},
                         timedelta(days=1, minutes=1), id="a-long-deadline-is-kept-a-day"),
            pytest.param({"concurrency": QUEUE, "max_queued": 5, "timeout": timedelta(days=2)},
                         timedelta(days=2, minutes=1), id="a-timeout-past-a-day-is-kept-whole"),
        ],
    )  # fmt: skip
    def test_lock_ttl(self, plan: dict[str, Any], ttl: timedelta) -> None:
        settings = {"timeout": timedelta(minutes=10), **plan}
        job = plans.JobPlan(schedule=every(timedelta(seconds=1)), **settings)
        assert job.lock_ttl == ttl

    def test_a_lost_run_is_noticed_within_the_wait_the_plan_allows(self) -> None:
        rules = leases.LeaseRules()
        assert rules.ttl + rules.scan <= plans.LOST_RUN_NOTICE


class TestNowOnAJobsSlotTimelineIsTheWallClockLessItsOffset:
    @pytest.mark.parametrize(
        ("offset", "nominal"),
        [
            pytest.param(timedelta(0), datetime(2026, 12, 1, 17, 56, 7, tzinfo=UTC),
                         id="no-jitter"),
            pytest.param(timedelta(seconds=25), datetime(2026, 12, 1, 17, 55, 42, tzinfo=UTC),
                         id="the-slot-of-17-56-still-ahead"),
        ],
    )  # fmt: skip
    def test_nominal(self, offset: timedelta, nominal: datetime) -> None:
        plan = plans.JobPlan(schedule=every(timedelta(seconds=30)), offset=offset)
        assert plan.nominal(datetime(2026, 12, 1, 17, 56, 7, tzinfo=UTC)) == nominal


class TestAPlanHasTheDocumentedDefaults:
    def test_defaults(self) -> None:
        plan = plans.JobPlan(schedule=every(timedelta(minutes=1)))
        assert plan.offset == timedelta(0)
        assert plan.missed_runs == missed.MissedRuns()
        assert plan.concurrency is overlap.ConcurrencyPolicy.FORBID
        assert plan.max_queued == 1
        assert plan.timeout == timedelta(minutes=10)
        assert plan.lock_ttl == timedelta(minutes=11)
