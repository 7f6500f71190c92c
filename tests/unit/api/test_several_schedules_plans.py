"""``spec.schedules`` from the spec to the plan: the entries merged into one timeline, each in
its own zone or the job's, within the job's window; and what is refused, naming the entry's
field as users wrote it."""

from datetime import UTC, datetime
from typing import Any

import pytest

from punctual.api import planning, spec_bounds
from punctual.controller import validation
from punctual.scheduling import merged, windows
from punctual.scheduling.errors import InvalidSpecError

HTTP = {"http": {"url": "http://report-svc.reports.svc:8080/run"}}
JOB = {"job": {"template": {"spec": {"template": {"spec": {"containers": []}}}}}}
NOW = datetime(2026, 6, 1, tzinfo=UTC)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def check(target: dict[str, Any] = HTTP, **fields: Any) -> validation.Checked:
    return validation.check(
        {"target": target, **fields},
        uid="uid-1",
        hash_key="reports/nightly",
        bounds=spec_bounds.DEFAULT_BOUNDS,
        now=NOW,
    )


class TestSeveralSchedulesBecomeOneTimeline:
    def test_the_plan_merges_the_entries_and_names_them(self) -> None:
        checked = check(
            schedules=[
                {"name": "hourly", "schedule": "0 * * * *"},
                {"name": "noon", "schedule": "0 12 * * *", "timeZone": "Europe/Copenhagen"},
            ]
        )

        plan = checked.plan
        assert isinstance(plan.schedule, merged.Merged)
        assert plan.fired_by(utc(2026, 6, 2, 10)) == ("hourly", "noon")
        assert plan.fired_by(utc(2026, 6, 2, 11)) == ("hourly",)
        assert plan.fired_by(utc(2026, 6, 2, 11, 30)) == ()

    def test_an_entry_without_a_zone_takes_the_jobs(self) -> None:
        checked = check(
            timeZone="America/New_York",
            schedules=[
                {"name": "local", "schedule": "0 9 * * *"},
                {"name": "utc", "schedule": "0 9 * * *", "timeZone": "UTC"},
            ],
        )

        assert checked.plan.fired_by(utc(2026, 6, 2, 13)) == ("local",)
        assert checked.plan.fired_by(utc(2026, 6, 2, 9)) == ("utc",)

    def test_an_entry_with_h_takes_the_jobs_hashed_values(self) -> None:
        single = check(schedule="H 9 * * *")
        several = check(schedules=[{"name": "hashed", "schedule": "H 9 * * *"}])

        assert several.plan.schedule.next_after(NOW) == single.plan.schedule.next_after(NOW)

    def test_the_jobs_window_bounds_every_entry(self) -> None:
        checked = check(
            startsAt="2026-07-01T00:00:00Z",
            endsAt="2026-07-01T02:00:00Z",
            schedules=[
                {"name": "hourly", "schedule": "0 * * * *"},
                {"name": "halves", "every": "30m"},
            ],
        )

        assert isinstance(checked.plan.schedule, windows.Windowed)
        due = checked.plan.schedule.due_between(after=NOW, until=utc(2026, 8, 1), keep=4)
        assert due.total == 4
        assert due.newest == (
            utc(2026, 7, 1, 0),
            utc(2026, 7, 1, 0, 30),
            utc(2026, 7, 1, 1),
            utc(2026, 7, 1, 1, 30),
        )
        assert checked.plan.fired_by(utc(2026, 7, 1, 1)) == ("hourly", "halves")

    def test_the_single_form_has_no_entries(self) -> None:
        assert check(schedule="0 * * * *").plan.entries is None
        assert check(schedule="0 * * * *").plan.fired_by(utc(2026, 6, 2, 10)) == ()

    def test_the_jitter_is_capped_by_the_gap_between_two_entries(self) -> None:
        entries = [
            {"name": "top", "schedule": "0 * * * *"},
            {"name": "past", "schedule": "5 * * * *"},
        ]

        assert check(schedules=entries, jitter="4m").plan.offset < planning.durations.parse(
            "4m", field="jitter"
        )
        with pytest.raises(InvalidSpecError) as refused:
            check(schedules=entries, jitter="5m")
        assert refused.value.field == "spec.jitter"
        assert "(5m)" in refused.value.problem


ENTRY = {"name": "hourly", "schedule": "0 * * * *"}


class TestWhatIsRefused:
    @pytest.mark.parametrize(
        ("fields", "field", "problem"),
        [
            pytest.param(
                {"schedule": "0 * * * *", "schedules": [ENTRY]},
                "spec.schedule",
                "(got schedule and schedules)",
                id="schedule-beside-schedules",
            ),
            pytest.param(
                {"every": "1h", "schedules": [ENTRY]},
                "spec.every",
                "(got every and schedules)",
                id="every-beside-schedules",
            ),
            pytest.param(
                {"schedules": []},
                "spec.schedules",
                "at least 1 item",
                id="no-entry",
            ),
            pytest.param(
                {
                    "schedules": [
                        {"name": f"e{index}", "every": f"{index + 1}h"} for index in range(17)
                    ]
                },
                "spec.schedules",
                "at most 16 items",
                id="more-than-16-entries",
            ),
            pytest.param(
                {"schedules": [ENTRY, {"name": "hourly", "every": "30m"}]},
                "spec.schedules[1].name",
                "'hourly' names an earlier entry too",
                id="a-name-twice",
            ),
            pytest.param(
                {"schedules": [{"name": "Hourly", "schedule": "0 * * * *"}]},
                "spec.schedules[0].name",
                "should match pattern",
                id="a-name-that-is-no-dns-label",
            ),
            pytest.param(
                {"schedules": [{"schedule": "0 * * * *"}]},
                "spec.schedules[0].name",
                "required",
                id="an-entry-without-a-name",
            ),
            pytest.param(
                {"schedules": [{"name": "both", "schedule": "0 * * * *", "every": "1h"}]},
                "spec.schedules[0].schedule",
                "set exactly one of schedule (a cron expression) or every (an interval)",
                id="an-entry-with-both",
            ),
            pytest.param(
                {"schedules": [{"name": "neither"}]},
                "spec.schedules[0].schedule",
                "set exactly one of schedule (a cron expression) or every (an interval)",
                id="an-entry-with-neither",
            ),
            pytest.param(
                {"schedules": [ENTRY, {"name": "bad", "schedule": "0 25 * * *"}]},
                "spec.schedules[1].schedule",
                "hour",
                id="a-bad-cron-expression",
            ),
            pytest.param(
                {"schedules": [ENTRY, {"name": "bad", "every": "1h", "timeZone": "Mars/Base"}]},
                "spec.schedules[1].timeZone",
                "Mars/Base",
                id="an-unknown-zone",
            ),
            pytest.param(
                {"schedules": [{"name": "bad", "every": "1d"}]},
                "spec.schedules[0].every",
                "duration",
                id="a-bad-interval",
            ),
            pytest.param(
                {"schedules": [ENTRY, {"name": "fast", "every": "500ms"}]},
                "spec.schedules",
                "this operator allows no less than 1s between two slots",
                id="an-entry-faster-than-the-operator-allows",
            ),
            pytest.param(
                {"schedules": [{"name": "a", "every": "2400ms"}, {"name": "b", "every": "3s"}]},
                "spec.schedules",
                "slots 600ms apart",
                id="entries-closer-together-than-either",
            ),
            pytest.param(
                {"schedules": [ENTRY, {"name": "never", "schedule": "0 0 30 2 *"}]},
                "spec.schedules[1].schedule",
                "never fires",
                id="an-entry-that-never-fires",
            ),
        ],
    )
    def test_naming_the_field(self, fields: dict[str, Any], field: str, problem: str) -> None:
        with pytest.raises(InvalidSpecError) as refused:
            check(**fields)

        assert refused.value.field == field
        assert problem in refused.value.problem

    def test_the_job_target_needs_every_entry_on_whole_seconds(self) -> None:
        with pytest.raises(InvalidSpecError) as refused:
            check(JOB, schedules=[ENTRY, {"name": "odd", "every": "1500ms"}])

        assert refused.value.field == "spec.schedules[1].every"
        assert "whole number of seconds" in refused.value.problem
        assert check(JOB, schedules=[ENTRY, {"name": "even", "every": "90s"}]).plan.entries
