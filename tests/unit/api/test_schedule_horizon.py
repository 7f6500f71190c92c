"""A schedule must fire within the horizon (``--schedule-horizon-years``, ten years by default)
to be accepted; one that never fires is refused naming ``spec.schedule``."""

from datetime import UTC, datetime
from typing import Any

import pytest

from punctual.api import spec_bounds
from punctual.controller import validation
from punctual.scheduling.errors import InvalidSpecError

UID = "0b6f2c1e-8d2a-4c7e-9a51-3f1d2e4b5a69"
HTTP = {"http": {"url": "http://report-svc.reports.svc:8080/run"}}
NOW = datetime(2026, 6, 1, tzinfo=UTC)
SKIP = {"dst": {"nonexistent": "Skip"}}


def check(
    now: datetime = NOW, years: int = spec_bounds.SCHEDULE_HORIZON_YEARS, **fields: Any
) -> None:
    bounds = spec_bounds.Bounds(schedule_horizon_years=years)
    validation.check({"target": HTTP, **fields}, uid=UID, hash_key="ns/job", bounds=bounds, now=now)


class TestSchedulesThatFireAreAccepted:
    @pytest.mark.parametrize(
        ("fields", "now", "years"),
        [
            pytest.param({"schedule": "0 0 29 2 *"}, NOW, 10, id="leap-day"),
            pytest.param(
                {"schedule": "0 0 29 2 *"},
                datetime(2096, 3, 1, tzinfo=UTC),
                10,
                id="leap-day-across-2100",
            ),
            pytest.param({"schedule": "@yearly"}, NOW, 1, id="yearly-with-a-one-year-horizon"),
            pytest.param(
                {"schedule": "0 0 31 12 *", "timeZone": "Pacific/Kiritimati"},
                NOW,
                1,
                id="yearly-far-east",
            ),
            pytest.param(
                {"schedule": "30 2 * * *", "timeZone": "Europe/Berlin", **SKIP},
                NOW,
                1,
                id="skipped-one-night-a-year",
            ),
            pytest.param(
                {"schedule": "30 2 * 3 0L", "timeZone": "UTC", **SKIP},
                NOW,
                1,
                id="last-sunday-of-march-without-dst",
            ),
            pytest.param(
                {"schedule": "30 2 * 3 0L", "timeZone": "Europe/Berlin"},
                NOW,
                1,
                id="in-the-gap-shifted-forward",
            ),
            pytest.param({"every": "87600h"}, NOW, 10, id="every-ten-years"),
        ],
    )
    def test_accepted(self, fields: dict[str, Any], now: datetime, years: int) -> None:
        check(now=now, years=years, **fields)


class TestSchedulesThatDoNotFireInTimeAreRefused:
    @pytest.mark.parametrize(
        ("fields", "years", "field"),
        [
            pytest.param(
                {"schedule": "30 2 * 3 0L", "timeZone": "Europe/Berlin", **SKIP},
                10,
                "spec.schedule",
                id="last-sunday-of-march-in-the-gap",
            ),
            pytest.param(
                {"schedule": "* * 2 * 3 0L", "timeZone": "Europe/Berlin", **SKIP},
                10,
                "spec.schedule",
                id="every-second-of-the-gap",
            ),
            pytest.param(
                {"schedule": "0 0 * 2 1#5"},
                10,
                "spec.schedule",
                id="fifth-monday-of-february-in-2044",
            ),
            pytest.param(
                {"schedule": "0 0 29 2 *"},
                1,
                "spec.schedule",
                id="leap-day-with-a-one-year-horizon",
            ),
            pytest.param(
                {"every": "17544h"}, 1, "spec.every", id="every-two-years-with-a-one-year-horizon"
            ),
        ],
    )
    def test_refused_naming_the_field(self, fields: dict[str, Any], years: int, field: str) -> None:
        with pytest.raises(InvalidSpecError) as refused:
            check(years=years, **fields)

        assert refused.value.field == field
        assert f"no slot in the next {years} years" in refused.value.problem

    def test_the_refusal_names_the_dst_rule_that_skips_the_gap(self) -> None:
        with pytest.raises(InvalidSpecError, match=r"dst\.nonexistent: Skip") as refused:
            check(schedule="30 2 * 3 0L", timeZone="Europe/Berlin", **SKIP)

        assert str(refused.value).startswith("spec.schedule: '30 2 * 3 0L' in Europe/Berlin")


def test_the_default_horizon_reaches_as_far_as_the_search_for_a_slot() -> None:
    assert spec_bounds.SCHEDULE_HORIZON_YEARS == spec_bounds.LONGEST_SCHEDULE_HORIZON_YEARS == 10
