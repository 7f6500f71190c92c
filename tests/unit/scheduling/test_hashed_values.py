"""``H`` in a cron field: a value fixed per job, derived from its namespace and name.

The values are pinned: a change of the derivation moves every user's jobs, so it must fail here
(and come with a new ``HASH_VERSION`` and a note in docs/time.md).
"""

import itertools
from collections import Counter
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from punctual.api import planning, spec_bounds, spec_parsing
from punctual.controller import validation
from punctual.scheduling import cron, hashed
from punctual.scheduling.errors import InvalidSpecError

UTC_ZONE = ZoneInfo("UTC")
FIELD = "spec.schedule"
HTTP = {"http": {"url": "http://report-svc.reports.svc:8080/run"}}
CHECKED_AT = datetime(2026, 6, 1, tzinfo=UTC)


def _resolved(expression: str, key: str) -> str:
    return cron.parse(expression, zone=UTC_ZONE, hash_key=key).expression


class TestTheHashIsPinned:
    def test_the_number_is_sha256_of_version_job_and_field(self) -> None:
        # sha256(b"punctual-h-v1:tenant-a/report:minute"), first 8 bytes: d4447681782ddc99
        assert hashed.hash_number(key="tenant-a/report", field_name="minute") == (
            0xD4447681782DDC99
        )

    def test_the_key_is_the_namespace_and_the_name(self) -> None:
        assert hashed.job_key(namespace="tenant-a", name="report") == "tenant-a/report"

    @pytest.mark.parametrize(
        ("key", "expression", "resolved"),
        [
            pytest.param("tenant-a/report", "H * * * *", "45 * * * *", id="report-minute"),
            pytest.param("tenant-a/report", "H H * * *", "45 18 * * *", id="report-daily"),
            pytest.param("tenant-a/backup", "H H * * *", "26 9 * * *", id="backup-daily"),
            pytest.param("billing/invoices", "H H * * *", "15 21 * * *", id="invoices-daily"),
            pytest.param("default/nightly", "H H * * *", "30 13 * * *", id="nightly-daily"),
            pytest.param("tenant-a/report", "0 0 H * H", "0 0 1 * 2", id="report-day-fields"),
            pytest.param("default/nightly", "0 0 H * *", "0 0 17 * *", id="nightly-monthly"),
            pytest.param(
                "tenant-a/backup", "H H H H H H", "21 26 9 5 9 4", id="backup-every-field"
            ),
        ],
    )
    def test_a_job_resolves_to_the_same_values_in_every_version(
        self, key: str, expression: str, resolved: str
    ) -> None:
        assert _resolved(expression, key) == resolved


class TestTheForms:
    @pytest.mark.parametrize(
        ("key", "expression", "resolved"),
        [
            pytest.param("tenant-a/report", "H(0-29) * * * *", "15 * * * *", id="range"),
            pytest.param("default/nightly", "H(0-29) * * * *", "0 * * * *", id="range-low-end"),
            pytest.param("tenant-a/backup", "H/15 * * * *", "11,26,41,56 * * * *", id="step"),
            pytest.param("tenant-a/report", "H/15 * * * *", "0,15,30,45 * * * *", id="step-at-0"),
            pytest.param(
                "tenant-a/backup", "H(0-29)/10 * * * *", "6,16,26 * * * *", id="range-and-step"
            ),
            pytest.param("tenant-a/report", "H,30 * * * *", "45,30 * * * *", id="in-a-list"),
            pytest.param("tenant-a/report", "h * * * *", "45 * * * *", id="lowercase"),
            pytest.param("tenant-a/report", "H(7-7) * * * *", "7 * * * *", id="one-value"),
            pytest.param("tenant-a/report", "0 0 * * THU", "0 0 * * THU", id="thu-is-no-h"),
        ],
    )
    def test_each_form_becomes_plain_numbers(
        self, key: str, expression: str, resolved: str
    ) -> None:
        assert _resolved(expression, key) == resolved

    def test_a_step_starts_within_its_first_step_and_keeps_to_its_range(self) -> None:
        for index in range(200):
            minutes = _resolved("H(10-49)/7 * * * *", f"ns/job-{index}").split()[0]
            values = [int(value) for value in minutes.split(",")]

            assert 10 <= values[0] < 17
            assert all(later - earlier == 7 for earlier, later in itertools.pairwise(values))
            assert values[-1] <= 49 < values[-1] + 7

    def test_a_plain_day_of_month_fires_every_month(self) -> None:
        days = {int(_resolved("0 0 H * *", f"ns/job-{index}").split()[2]) for index in range(200)}

        assert days == set(range(1, 29))

    def test_a_thousand_hourly_jobs_spread_over_the_hour(self) -> None:
        minutes = Counter(
            int(_resolved("H * * * *", f"team-{index % 20}/report-{index}").split()[0])
            for index in range(1000)
        )

        assert set(minutes) == set(range(60))
        assert max(minutes.values()) <= 2 * 1000 / 60


class TestTheValuesFollowTheNameNotTheUid:
    def test_a_job_created_again_with_a_new_uid_keeps_its_values(self) -> None:
        spec = spec_parsing.parse_spec({"schedule": "H H * * *", "target": HTTP})
        first = planning.plan_for(spec, uid="uid-1", hash_key="tenant-a/report")
        again = planning.plan_for(spec, uid="uid-2", hash_key="tenant-a/report")

        assert first.schedule == again.schedule

    def test_the_plan_carries_the_resolved_expression(self) -> None:
        spec = spec_parsing.parse_spec({"schedule": "H H * * *", "target": HTTP})
        plan = planning.plan_for(spec, uid="uid-1", hash_key="tenant-a/report")

        assert isinstance(plan.schedule, cron.CronSchedule)
        assert plan.schedule.expression == "45 18 * * *"


class TestAMalformedHIsRefusedNamingTheField:
    @pytest.mark.parametrize(
        ("expression", "problem"),
        [
            pytest.param(
                "H(30-10) * * * *",
                "minute field 'H(30-10)': H(30-10) must name a rising range within 0-59",
                id="a-falling-range",
            ),
            pytest.param(
                "0 H(0-24) * * *",
                "hour field 'H(0-24)': H(0-24) must name a rising range within 0-23",
                id="past-the-field",
            ),
            pytest.param(
                "H/0 * * * *",
                "minute field 'H/0': the step of H must be 1 to 60",
                id="a-zero-step",
            ),
            pytest.param(
                "H(0-29)/31 * * * *",
                "minute field 'H(0-29)/31': the step of H must be 1 to 30",
                id="a-step-past-the-range",
            ),
            pytest.param(
                "0 0 1 H(JAN-MAR) *",
                "month field 'H(JAN-MAR)': H takes the forms H, H(a-b), H/n or H(a-b)/n",
                id="names-in-a-range",
            ),
            pytest.param(
                "H-5 * * * *",
                "minute field 'H-5': H takes the forms",
                id="a-range-from-h",
            ),
            pytest.param("HH * * * *", "minute field 'HH': H takes the forms", id="twice"),
            pytest.param(
                "0 0 * * H#2", "day-of-week field 'H#2': H takes the forms", id="an-nth-weekday"
            ),
            pytest.param(
                "R * * * *", "minute field 'R': random (R) values are not supported", id="random"
            ),
        ],
    )
    def test_by_planning_and_by_the_webhooks_check(self, expression: str, problem: str) -> None:
        raw = {"schedule": expression, "target": HTTP}
        with pytest.raises(InvalidSpecError) as planned:
            planning.plan_for(spec_parsing.parse_spec(raw), uid="uid-1", hash_key="tenant-a/report")
        with pytest.raises(InvalidSpecError) as checked:
            validation.check(
                raw,
                uid="uid-1",
                hash_key="tenant-a/report",
                bounds=spec_bounds.DEFAULT_BOUNDS,
                now=CHECKED_AT,
            )

        for error in (planned.value, checked.value):
            assert error.field == FIELD
            assert problem in error.problem

    def test_without_a_job_an_h_is_refused_saying_what_it_needs(self) -> None:
        with pytest.raises(InvalidSpecError) as refused:
            cron.parse("H * * * *", zone=UTC_ZONE)

        assert refused.value.field == FIELD
        assert "no job is named (punctual next --job NAMESPACE/NAME)" in refused.value.problem
