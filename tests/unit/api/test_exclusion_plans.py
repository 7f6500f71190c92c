"""``spec.exclude`` from the spec to the plan: the days left out in the job's zone (or the
exclusion's own), the occurrences skipped, and what is refused, naming the field."""

from datetime import UTC, datetime
from typing import Any

import pytest

from punctual.api import exclusion_plans, planning, spec_bounds, spec_parsing
from punctual.controller import validation
from punctual.scheduling import exclusions
from punctual.scheduling.errors import InvalidSpecError

HTTP = {"http": {"url": "http://report-svc.reports.svc:8080/run"}}
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def check(**fields: Any) -> validation.Checked:
    return validation.check(
        {"target": HTTP, **fields},
        uid="uid-1",
        hash_key="reports/nightly",
        bounds=spec_bounds.DEFAULT_BOUNDS,
        now=NOW,
    )


def slots_after(checked: validation.Checked, after: datetime, count: int) -> list[str]:
    found = []
    for _ in range(count):
        occurrence = checked.plan.schedule.next_after(after)
        assert occurrence is not None
        found.append(f"{occurrence.at:%m-%dT%H:%M}")
        after = occurrence.at
    return found


class TestExclusionsBecomePartOfThePlan:
    def test_days_are_local_days_in_the_jobs_zone(self) -> None:
        checked = check(
            schedule="30 0 * * *",
            timeZone="Europe/Copenhagen",
            exclude={"dates": ["2026-12-24/2026-12-26"], "days": ["1 1 *"]},
        )

        assert isinstance(checked.plan.schedule, exclusions.Excluding)
        assert slots_after(checked, datetime(2026, 12, 22, tzinfo=UTC), 3) == [
            "12-22T23:30",
            "12-26T23:30",
            "12-27T23:30",
        ]
        assert slots_after(checked, datetime(2026, 12, 30, tzinfo=UTC), 2) == [
            "12-30T23:30",
            "01-01T23:30",
        ]

    def test_the_exclusions_own_zone(self) -> None:
        checked = check(
            schedule="30 0 * * *",
            timeZone="Europe/Copenhagen",
            exclude={"dates": ["2026-12-25"], "timeZone": "UTC"},
        )

        assert slots_after(checked, datetime(2026, 12, 23, tzinfo=UTC), 3) == [
            "12-23T23:30",
            "12-24T23:30",
            "12-26T23:30",
        ]

    def test_skipped_occurrences_are_left_out(self) -> None:
        spec = spec_parsing.parse_spec({"every": "1h", "target": HTTP})
        plan = planning.plan_for(spec, uid="uid-1", skipped=[datetime(2026, 12, 1, 1, tzinfo=UTC)])

        found = plan.schedule.next_after(NOW)
        assert found is not None
        assert found.at == datetime(2026, 12, 1, 2, tzinfo=UTC)

    def test_no_exclusions_leave_the_schedule_as_it_is(self) -> None:
        assert not isinstance(check(every="1h").plan.schedule, exclusions.Excluding)


class TestMalformedExclusionsAreRefusedNamingTheField:
    @pytest.mark.parametrize(
        ("exclude", "field", "problem"),
        [
            ({"dates": ["2026-02-30"]}, "spec.exclude.dates[0]", "is not a date"),
            ({"dates": ["2026-12-01", "2026-12-31/2026-12-24"]}, "spec.exclude.dates[1]", "ends"),
            ({"days": ["* *"]}, "spec.exclude.days[0]", "has 2 fields"),
            ({"days": ["* * SAT", "* march *"]}, "spec.exclude.days[1]", "march"),
            ({"timeZone": "Europe/Copenhgen"}, "spec.exclude.timeZone", "unknown time zone"),
            ({"days": ["* * *"]}, "spec.exclude", "excludes every slot in the next 10 years"),
            (
                {
                    "days": ["1-28 * *", "29 1,3-12 *", "* 2 MON-SAT", "30 * *", "31 * *"]
                    + [f"{first}-28 * *" for first in range(2, 13)]
                },
                "spec.exclude",
                r"leaves out every slot up to 2028-01-01T00:00:00Z, and the search for one that "
                r"runs stops after 10,000 steps .*: exclude long stretches with date ranges",
            ),
            ({"dates": "2026-12-25"}, "spec.exclude.dates", "should be a valid"),
        ],
    )
    def test_what_is_refused(self, exclude: dict[str, Any], field: str, problem: str) -> None:
        with pytest.raises(InvalidSpecError, match=problem) as raised:
            check(every="1h", exclude=exclude)

        assert raised.value.field == field


HOLIDAYS = {"dates": ["2026-12-25/2026-12-26"], "days": ["1 1 *"]}


class TestCalendarsNamedByAJob:
    """``spec.exclude.calendars``: the days of Calendars of the job's namespace, by name."""

    def plan(self, known: dict[str, Any] | None, **exclude: Any) -> validation.Checked:
        return validation.check(
            {"target": HTTP, "schedule": "0 12 * * *", "exclude": exclude},
            uid="uid-1",
            hash_key="reports/nightly",
            bounds=spec_bounds.DEFAULT_BOUNDS,
            now=NOW,
            calendars=known,
        )

    def test_their_days_are_excluded_beside_the_jobs_own(self) -> None:
        checked = self.plan({"holidays": HOLIDAYS}, calendars=["holidays"], dates=["2026-12-28"])

        assert slots_after(checked, datetime(2026, 12, 24, 13, tzinfo=UTC), 3) == [
            "12-27T12:00",
            "12-29T12:00",
            "12-30T12:00",
        ]
        assert slots_after(checked, datetime(2026, 12, 31, 13, tzinfo=UTC), 1) == ["01-02T12:00"]

    def test_a_missing_calendar_is_calendar_not_found_naming_the_entry(self) -> None:
        with pytest.raises(exclusion_plans.CalendarNotFoundError) as raised:
            self.plan({"holidays": HOLIDAYS}, calendars=["holidays", "freeze"])

        assert raised.value.field == "spec.exclude.calendars[1]"
        assert raised.value.problem == "no Calendar 'freeze' in the job's namespace"
        assert raised.value.reason == "CalendarNotFound"

    @pytest.mark.parametrize(
        ("calendar", "problem"),
        [
            ({"dates": ["2026-12-32"]}, "Calendar 'holidays': spec.dates[0]: '2026-12-32' is not"),
            ({"days": ["* * *", "* march *"]}, "Calendar 'holidays': spec.days[1]:"),
            ({"weeks": []}, "Calendar 'holidays': spec.weeks:"),
        ],
    )
    def test_a_calendar_that_is_invalid_names_the_entry_and_its_field(
        self, calendar: dict[str, Any], problem: str
    ) -> None:
        with pytest.raises(InvalidSpecError) as raised:
            self.plan({"holidays": calendar}, calendars=["holidays"])

        assert raised.value.field == "spec.exclude.calendars[0]"
        assert raised.value.problem.startswith(problem)

    def test_calendars_not_looked_at_are_no_error(self) -> None:
        checked = self.plan(None, calendars=["holidays"])

        assert not isinstance(checked.plan.schedule, exclusions.Excluding)

    def test_recurring_days_are_bounded_calendars_included(self) -> None:
        many = {"days": [f"{day} 1 *" for day in range(1, 17)]}

        with pytest.raises(InvalidSpecError, match="more than 16 recurring days") as raised:
            self.plan({"many": many}, calendars=["many"], days=["* * SUN"])

        assert raised.value.field == "spec.exclude"
