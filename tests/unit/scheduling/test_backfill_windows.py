"""A backfill window: the slots in ``[start, end]``, both ends included, oldest first, at most
the limit, and whether there are more."""

from datetime import UTC, datetime, timedelta

import pytest

from punctual.scheduling import backfill, schedules

T0 = datetime(2026, 11, 30, 0, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


@pytest.mark.parametrize(
    "case",
    [
        (None, "1m", T0, T0 + 3 * MINUTE, 10, [0, 1, 2, 3], False),
        (None, "1m", T0 + timedelta(seconds=1), T0 + 3 * MINUTE, 10, [1, 2, 3], False),
        (None, "1m", T0, T0 + 3 * MINUTE, 2, [0, 1], True),
        (None, "1m", T0, T0 + 2 * MINUTE, 3, [0, 1, 2], False),
        ("*/30 * * * *", None, T0, T0 + 60 * MINUTE, 10, [0, 30, 60], False),
        (None, "1h", T0 + MINUTE, T0 + 2 * MINUTE, 10, [], False),
    ],
)
def test_it_lists_the_slots_of_the_window_oldest_first(
    case: tuple[str | None, str | None, datetime, datetime, int, list[int], bool],
) -> None:
    schedule, every, start, end, limit, expected, more = case
    found = backfill.window(
        schedules.build(schedule=schedule, every=every), start=start, end=end, limit=limit
    )

    assert found.slots == tuple(T0 + minutes * MINUTE for minutes in expected)
    assert found.more is more
