"""``plans.JobPlan``: a job's resolved timing and policies, and the slot-claim TTL."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

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
