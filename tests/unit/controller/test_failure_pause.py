"""Pause on failure: a job is suspended when the count of failures its watch shows rises to
``spec.suspendAfterFailures`` or above, and only then (not on a version that merely still shows
it: a job resumed with its count at the threshold waits for its next failure)."""

from typing import Any

import pytest

from punctual.controller import failures


def body(*, count: Any, suspend: bool = False) -> dict[str, Any]:
    return {"spec": {"suspend": suspend}, "status": {"consecutiveFailures": count}}


class TestDue:
    @pytest.mark.parametrize(
        ("previous", "count", "threshold", "suspend", "expected"),
        [
            (2, 3, 3, False, True),
            (3, 4, 3, False, True),
            (1, 2, 3, False, False),
            (3, 3, 3, False, False),
            (None, 3, 3, False, False),
            (2, 3, None, False, False),
            (2, 3, 3, True, False),
            (2, "3", 3, False, False),
            (2, True, 1, False, False),
        ],
    )
    def test_it_is_due_on_a_rise_to_the_threshold_of_a_job_not_suspended(
        self, previous: int | None, count: Any, threshold: int | None, suspend: bool, expected: bool
    ) -> None:
        found = failures.due(
            previous=previous, body=body(count=count, suspend=suspend), threshold=threshold
        )
        assert found is expected

    def test_its_message_says_how_many_and_how_to_resume(self) -> None:
        said = failures.message(count=3, threshold=3)
        assert "3 failed runs in a row" in said
        assert "spec.suspend to false" in said
