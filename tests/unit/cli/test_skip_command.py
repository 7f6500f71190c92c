"""``punctual skip`` and ``punctual unskip`` edit the ``punctual.dev/skip`` annotation after
checking the slot against the job's own schedule: a slot ahead, of its schedule (its scheduled
time, or that time with its jitter), not skipped twice; past slots are dropped on each edit."""

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pytest

from punctual.api import planning, spec_parsing
from punctual.cli import main, skip
from punctual.scheduling import timeline
from punctual.scheduling.errors import InvalidSpecError

NOW = datetime(2026, 12, 1, 13, 20, tzinfo=UTC)
SPEC = {"every": "1h", "target": {"http": {"url": "http://example.test/run"}}}
AT_14 = "2026-12-01T14:00:00Z"
AT_15 = "2026-12-01T15:00:00Z"


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def skipping(
    *,
    at: str | None,
    current: str | None = None,
    spec: dict[str, object] = SPEC,
    calendars: Mapping[str, Mapping[str, object]] | None = None,
) -> tuple[datetime, str]:
    return skip.skipping(
        spec,
        uid="uid-1",
        hash_key="ns/job",
        current=current,
        at=None if at is None else instant(at),
        now=NOW,
        calendars=calendars or {},
    )


class TestSkippingOneSlot:
    @pytest.mark.parametrize(
        ("at", "current", "expected"),
        [
            pytest.param(None, None, (AT_14, AT_14), id="next"),
            pytest.param(None, AT_14, (AT_15, f"{AT_14},{AT_15}"), id="next-after-one-skipped"),
            pytest.param(AT_15, None, (AT_15, AT_15), id="at-a-slot"),
            pytest.param(
                "2026-12-01T15:00:00+01:00", AT_15, (AT_14, f"{AT_14},{AT_15}"), id="any-offset"
            ),
            pytest.param(
                AT_15, "2026-12-01T12:00:00Z", (AT_15, AT_15), id="past-slots-are-dropped"
            ),
        ],
    )
    def test_the_slot_and_the_annotations_new_value(
        self, at: str | None, current: str | None, expected: tuple[str, str]
    ) -> None:
        slot, value = skipping(at=at, current=current)

        assert (slot, value) == (instant(expected[0]), expected[1].replace("+00:00", "Z"))

    def test_a_slot_with_the_jobs_jitter_names_its_scheduled_time(self) -> None:
        jittered = {**SPEC, "jitter": "10m"}
        slot, _ = skipping(at=None, spec=jittered)

        offset = planning.plan_for(spec_parsing.parse_spec(jittered), uid="uid-1").offset
        assert offset > timedelta()
        assert skipping(at=timeline.rfc3339(slot + offset), spec=jittered)[0] == slot

    @pytest.mark.parametrize(
        ("at", "current", "problem"),
        [
            ("2026-12-01T14:30:00Z", None, "is no slot of the job's schedule"),
            ("2026-12-01T13:00:00Z", None, "is past"),
            (AT_14, AT_14, "is skipped already"),
        ],
    )
    def test_what_it_refuses(self, at: str, current: str | None, problem: str) -> None:
        with pytest.raises(skip.NothingToDoError, match=problem):
            skipping(at=at, current=current)

    def test_a_malformed_annotation_is_named(self) -> None:
        with pytest.raises(InvalidSpecError, match="is no RFC 3339 instant") as raised:
            skipping(at=None, current="tomorrow")

        assert raised.value.field == "metadata.annotations[punctual.dev/skip]"

    def test_at_most_32_slots_ahead(self) -> None:
        current = ",".join(
            f"{NOW.replace(minute=0) + timedelta(hours=hour):%Y-%m-%dT%H:%M:%SZ}"
            for hour in range(1, 33)
        )

        with pytest.raises(skip.NothingToDoError, match="32 slots ahead are skipped already"):
            skipping(at=None, current=current)


DAILY_BUT_HOLIDAYS = {
    "schedule": "0 14 * * *",
    "exclude": {"calendars": ["holidays"]},
    "target": {"http": {"url": "http://example.test/run"}},
}
HOLIDAYS = {"holidays": {"dates": ["2026-12-01/2026-12-02"]}}


class TestSkippingWithTheCalendarsTheJobNames:
    """The Calendars of the job's namespace it names leave days out: ``--next`` is the next
    slot that would run, and a slot a Calendar leaves out is no slot to skip."""

    def test_next_is_the_first_slot_no_calendar_leaves_out(self) -> None:
        slot, value = skipping(at=None, spec=DAILY_BUT_HOLIDAYS, calendars=HOLIDAYS)

        assert (slot, value) == (instant("2026-12-03T14:00:00Z"), "2026-12-03T14:00:00Z")

    def test_a_slot_a_calendar_leaves_out_is_refused(self) -> None:
        with pytest.raises(skip.NothingToDoError, match="or one it leaves out already"):
            skipping(at="2026-12-02T14:00:00Z", spec=DAILY_BUT_HOLIDAYS, calendars=HOLIDAYS)

    def test_a_calendar_named_and_missing_is_named(self) -> None:
        with pytest.raises(InvalidSpecError, match="no Calendar 'holidays'") as raised:
            skipping(at=None, spec=DAILY_BUT_HOLIDAYS, calendars={})

        assert raised.value.field == "spec.exclude.calendars[0]"


class TestUnskipping:
    @pytest.mark.parametrize(
        ("at", "current", "expected"),
        [
            pytest.param(AT_14, f"{AT_14},{AT_15}", AT_15, id="one-of-two"),
            pytest.param(AT_14, AT_14, None, id="the-last-removes-the-annotation"),
            pytest.param(None, f"{AT_14},{AT_15}", None, id="all"),
        ],
    )
    def test_the_annotations_new_value(
        self, at: str | None, current: str, expected: str | None
    ) -> None:
        found = skip.unskipping(current, at=None if at is None else instant(at), now=NOW)

        assert found == expected

    @pytest.mark.parametrize(
        ("at", "current"), [(AT_15, AT_14), (None, None), (None, "2026-12-01T12:00:00Z")]
    )
    def test_a_slot_not_skipped_is_nothing_to_do(self, at: str | None, current: str | None) -> None:
        with pytest.raises(skip.NothingToDoError):
            skip.unskipping(current, at=None if at is None else instant(at), now=NOW)


class TestTheCommandLine:
    def test_skip_needs_at_or_next(self, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit) as raised:
            main.main(["skip", "nightly"])

        assert raised.value.code == 2
        assert "one of the arguments --at --next is required" in capsys.readouterr().err

    def test_a_bad_instant_is_refused_before_the_cluster_is_asked(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main.main(["unskip", "nightly", "-n", "reports", "--at", "tomorrow"]) == 2
        assert capsys.readouterr().err == (
            "punctual unskip: --at: 'tomorrow' is no RFC 3339 instant\n"
        )
