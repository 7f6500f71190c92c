"""``punctual backfill`` checks the window against the job's own schedule before it asks for
anything: past slots only, at most 1,000, at least one; and prints the progress in one line."""

from datetime import UTC, datetime, timedelta

import pytest

from punctual.cli import backfill

NOW = datetime(2026, 12, 1, 13, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
SPEC = {"every": "1m", "target": {"http": {"url": "http://example.test/run"}}}


@pytest.mark.parametrize(
    ("start", "end", "spec", "problem"),
    [
        (NOW - HOUR, NOW, SPEC, None),
        (NOW - HOUR, NOW + HOUR, SPEC, "in the future"),
        (NOW, NOW - HOUR, SPEC, "--from is after --to"),
        (NOW - 24 * HOUR, NOW, SPEC, "more than 1000 slots"),
        (NOW - timedelta(seconds=30), NOW - timedelta(seconds=31), SPEC, "after"),
        (NOW - HOUR, NOW, {**SPEC, "every": "1y"}, "spec is invalid"),
        (NOW - timedelta(seconds=59), NOW - timedelta(seconds=1), SPEC, "no slot"),
    ],
)
def test_it_checks_the_window_against_the_job_s_schedule(
    start: datetime, end: datetime, spec: dict[str, object], problem: str | None
) -> None:
    found = backfill.check_window(
        spec, uid="uid-1", hash_key="ns/job", start=start, end=end, now=NOW
    )

    assert found is None if problem is None else problem in (found or "")


def test_its_progress_line_says_how_far_and_how_each_went() -> None:
    line = backfill.progress_line({"done": 3, "total": 5, "succeeded": 2, "skipped": 1})

    assert line == "3/5 slots: 2 succeeded, 0 did not, 1 skipped (ran already or elsewhere)"


def test_its_progress_line_says_why_a_backfill_waits_until_it_starts() -> None:
    waiting = "2 backfill(s) of namespace reports going on replica r1, ..."

    line = backfill.progress_line({"done": 0, "total": 5, "waiting": waiting})

    assert line == f"waiting: {waiting}"
