"""What a replica keeps of Calendars: their specs by namespace and name, and the jobs naming
them (kept to plan them again when one changes); a job only ever sees its own namespace's."""

from typing import Any

import pytest

from punctual.controller import calendars
from punctual.kube import resources


def job(namespace: str, name: str, *, named: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"every": "1h"}
    if named is not None:
        spec["exclude"] = {"calendars": named}
    return {"metadata": {"namespace": namespace, "name": name, "uid": f"uid-{name}"}, "spec": spec}


def calendar(namespace: str, name: str, version: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "name": name, "resourceVersion": version},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("named", "expected"),
    [
        (["holidays", "freeze"], ("holidays", "freeze")),
        (None, ()),
        ("holidays", ()),
        (["holidays", 7], ("holidays",)),
        ([f"c{index}" for index in range(100)], tuple(f"c{index}" for index in range(9))),
    ],
)
def test_the_names_a_job_gives_as_written_and_bounded(named: Any, expected: tuple[str]) -> None:
    assert calendars.named(job("a", "report", named=named)) == expected


class TestCalendarsAndTheirUsers:
    def test_a_job_sees_the_versions_and_specs_of_its_own_namespaces_calendars(self) -> None:
        known = calendars.Calendars()
        known.remember(calendar("a", "holidays", "7", dates=["2026-12-25"]))
        known.remember(calendar("b", "freeze", "9", dates=["2026-12-01"]))

        found = known.named_by(job("a", "report", named=["holidays", "freeze"]))

        assert found == calendars.Named((("holidays", "7"), ("freeze", None)))
        assert known.specs("a", found.names) == {"holidays": {"dates": ["2026-12-25"]}}

    def test_an_edit_finds_the_jobs_of_its_namespace_that_name_it(self) -> None:
        known = calendars.Calendars()
        for body in (
            job("a", "report", named=["holidays"]),
            job("a", "plain"),
            job("b", "other", named=["holidays"]),
        ):
            known.named_by(body)

        assert [user["metadata"]["name"] for user in known.users("a", "holidays")] == ["report"]

    def test_a_job_that_no_longer_names_one_or_is_gone_is_dropped(self) -> None:
        known = calendars.Calendars()
        known.named_by(job("a", "report", named=["holidays"]))
        known.named_by(job("a", "weekly", named=["holidays"]))

        known.named_by(job("a", "report"))
        known.drop(resources.job_ref(job("a", "weekly")))

        assert known.users("a", "holidays") == []

    def test_a_deleted_calendar_is_no_longer_seen(self) -> None:
        known = calendars.Calendars()
        known.remember(calendar("a", "holidays", "7"))
        known.forget(calendar("a", "holidays", "8"))

        assert known.named_by(job("a", "report", named=["holidays"])).versions == (
            ("holidays", None),
        )
