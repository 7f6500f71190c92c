"""``spec.startsAt`` and ``spec.endsAt`` from the spec to the plan: the window, the one-off, and
what is refused, naming the field."""

from datetime import UTC, datetime
from typing import Any

import pytest

from punctual.api import spec_bounds
from punctual.controller import validation
from punctual.scheduling import windows
from punctual.scheduling.errors import InvalidSpecError

HTTP = {"http": {"url": "http://report-svc.reports.svc:8080/run"}}
NOW = datetime(2026, 6, 1, tzinfo=UTC)


def check(**fields: Any) -> validation.Checked:
    return validation.check(
        {"target": HTTP, **fields},
        uid="uid-1",
        hash_key="reports/nightly",
        bounds=spec_bounds.DEFAULT_BOUNDS,
        now=NOW,
    )


class TestAWindowBecomesPartOfThePlan:
    def test_a_schedule_within_a_window(self) -> None:
        checked = check(
            every="1h", startsAt="2026-07-01T00:00:00+02:00", endsAt="2026-07-02T00:00:00Z"
        )

        schedule = checked.plan.schedule
        assert isinstance(schedule, windows.Windowed)
        assert schedule.window == windows.Window(
            starts_at=datetime(2026, 6, 30, 22, tzinfo=UTC),
            ends_at=datetime(2026, 7, 2, tzinfo=UTC),
        )

    def test_starts_at_alone_is_a_one_off(self) -> None:
        checked = check(startsAt="2026-12-24T18:00:00+01:00")

        assert checked.plan.schedule == windows.OneOff(datetime(2026, 12, 24, 17, tzinfo=UTC))
        assert checked.spec.model_dump(mode="json")["startsAt"] == "2026-12-24T17:00:00Z"

    @pytest.mark.parametrize(
        "fields",
        [
            pytest.param({"every": "1h", "endsAt": "2026-01-01T00:00:00Z"}, id="a-window-over"),
            pytest.param({"startsAt": "2026-01-01T00:00:00Z"}, id="a-one-off-past"),
        ],
    )
    def test_a_window_already_over_is_valid_and_ends_at_once(self, fields: dict[str, str]) -> None:
        checked = check(**fields)

        assert checked.plan.schedule.next_after(NOW) is None
        assert windows.has_ended(checked.plan.schedule, after=NOW)


class TestWhatIsRefused:
    @pytest.mark.parametrize(
        ("fields", "field", "problem"),
        [
            pytest.param(
                {
                    "every": "1h",
                    "startsAt": "2026-07-02T00:00:00Z",
                    "endsAt": "2026-07-02T00:00:00Z",
                },
                "spec.endsAt",
                "endsAt must be after startsAt",
                id="an-empty-window",
            ),
            pytest.param(
                {
                    "every": "1h",
                    "startsAt": "2026-07-02T00:00:00Z",
                    "endsAt": "2026-07-01T00:00:00Z",
                },
                "spec.endsAt",
                "endsAt must be after startsAt",
                id="a-falling-window",
            ),
            pytest.param(
                {"endsAt": "2026-07-01T00:00:00Z"},
                "spec.schedule",
                "or neither with startsAt for a one-off run",
                id="an-end-alone",
            ),
            pytest.param(
                {"every": "1h", "startsAt": "2026-07-01T00:00:00"},
                "spec.startsAt",
                "timezone",
                id="no-offset",
            ),
            pytest.param(
                {"every": "1h", "startsAt": "1969-12-31T23:59:59Z"},
                "spec.startsAt",
                "outside the years 1970 to 8999",
                id="before-1970",
            ),
            pytest.param(
                {"every": "1h", "endsAt": "9999-12-31T23:59:59Z"},
                "spec.endsAt",
                "outside the years 1970 to 8999",
                id="past-8999",
            ),
            pytest.param(
                {"startsAt": "2026-12-24T18:00:00Z", "timeZone": "Europe/Copenhagn"},
                "spec.timeZone",
                "did you mean 'Europe/Copenhagen'?",
                id="a-one-off-in-an-unknown-zone",
            ),
            pytest.param(
                {"startsAt": "2046-12-24T18:00:00Z"},
                "spec.startsAt",
                "has no slot in the next 10 years",
                id="a-one-off-past-the-horizon",
            ),
        ],
    )
    def test_naming_the_field(self, fields: dict[str, str], field: str, problem: str) -> None:
        with pytest.raises(InvalidSpecError) as refused:
            check(**fields)

        assert refused.value.field == field
        assert problem in refused.value.problem
