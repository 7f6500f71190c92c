"""``schedules.build``: from the fields users write to a schedule, for the operator and the CLI."""

from datetime import UTC, datetime, timedelta

import pytest

from punctual.scheduling import cron, dst, interval, schedules
from punctual.scheduling.errors import InvalidSpecError


class TestExactlyOneOfScheduleAndEvery:
    @pytest.mark.parametrize(
        ("schedule", "every"),
        [
            pytest.param(None, None, id="neither"),
            pytest.param("30 2 * * *", "10s", id="both"),
        ],
    )
    def test_anything_else_is_rejected_on_spec_schedule(
        self, schedule: str | None, every: str | None
    ) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            schedules.build(schedule=schedule, every=every)
        assert caught.value.field == "spec.schedule"
        assert "exactly one of schedule (cron) or every (interval)" in caught.value.problem

    def test_a_cron_schedule_is_evaluated_in_its_zone_with_its_rules(self) -> None:
        rules = dst.DstRules(nonexistent=dst.Nonexistent.SKIP, ambiguous=dst.Ambiguous.BOTH)
        built = schedules.build(
            schedule="30 2 * * *", every=None, time_zone="Europe/Copenhagen", rules=rules
        )
        assert isinstance(built, cron.CronSchedule)
        assert built.expression == "30 2 * * *"
        assert str(built.zone) == "Europe/Copenhagen"
        assert built.rules == rules
        assert built.next_after(datetime(2026, 1, 1, tzinfo=UTC)).at == datetime(
            2026, 1, 1, 1, 30, tzinfo=UTC
        )

    def test_a_cron_schedule_defaults_to_utc_and_the_default_rules(self) -> None:
        built = schedules.build(schedule="30 2 * * *", every=None)
        assert isinstance(built, cron.CronSchedule)
        assert str(built.zone) == "UTC"
        assert built.rules == dst.DstRules(
            nonexistent=dst.Nonexistent.SHIFT_FORWARD, ambiguous=dst.Ambiguous.FIRST
        )

    def test_an_every_schedule_is_an_interval(self) -> None:
        built = schedules.build(schedule=None, every="1h30m")
        assert built == interval.IntervalSchedule(every=timedelta(hours=1, minutes=30))

    def test_an_every_schedule_stays_aligned_to_utc_whatever_the_zone(self) -> None:
        built = schedules.build(schedule=None, every="1h", time_zone="Asia/Kolkata")
        after = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
        assert built.next_after(after).at == datetime(2026, 1, 1, 1, tzinfo=UTC)


class TestEveryErrorNamesItsOwnField:
    @pytest.mark.parametrize(
        ("schedule", "every", "time_zone", "field", "problem"),
        [
            pytest.param(
                "61 * * * *", None, "UTC", "spec.schedule", "minute field '61'", id="bad-cron-field"
            ),
            pytest.param(None, "10", "UTC", "spec.every", "missing unit", id="bad-interval"),
            pytest.param(None, "0s", "UTC", "spec.every", "must be positive", id="zero-interval"),
            pytest.param(
                "@daily",
                None,
                "Europe/Copenhagn",
                "spec.timeZone",
                "did you mean 'Europe/Copenhagen'?",
                id="misspelt-zone",
            ),
            pytest.param(
                None,
                "5m",
                "Nowhere/Land",
                "spec.timeZone",
                "unknown time zone 'Nowhere/Land'",
                id="bad-zone-next-to-every",
            ),
        ],
    )
    def test_the_error_names_the_field(
        self, schedule: str | None, every: str | None, time_zone: str, field: str, problem: str
    ) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            schedules.build(schedule=schedule, every=every, time_zone=time_zone)
        assert caught.value.field == field
        assert problem in caught.value.problem

    @pytest.mark.parametrize(
        ("schedule", "every", "time_zone", "field"),
        [
            pytest.param("@never", None, "UTC", "schedule", id="schedule"),
            pytest.param(None, "1.5h", "UTC", "every", id="every"),
            pytest.param(None, "5m", "Nowhere/Land", "timeZone", id="time-zone"),
            pytest.param(None, None, "UTC", "schedule", id="exactly-one"),
        ],
    )
    def test_the_field_prefix_is_whatever_the_caller_says(
        self, schedule: str | None, every: str | None, time_zone: str, field: str
    ) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            schedules.build(schedule=schedule, every=every, time_zone=time_zone, field_prefix="")
        assert caught.value.field == field


class TestAnEveryWhoseSlotsCannotBeComputedIsRejected:
    def test_an_interval_past_the_year_9999_is_an_invalid_spec(self) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            schedules.build(schedule=None, every="80000000h")
        assert caught.value.field == "spec.every"
