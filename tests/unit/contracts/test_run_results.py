"""The run results' vocabulary, said in one place (``RunResult``): whether the run started at
its target (``ran``), whether its end is a verdict on it (``final``: it becomes ``lastRun``
and ``LastRunSucceeded``, and counts for ``suspendAfterFailures``), and whether that verdict
is a failure (``failed``: a Warning Event, one more failure in a row). A run the operator ended
itself (``Cancelled``) ran, and has no verdict. Whether it is said at Warning level (``warns``),
whether a run record carries it (``recorded``: missed slots are counts) and whether it has a
target's duration (``has_duration``: not a lost run, recorded by another replica)."""

import pytest

from punctual.contracts.records import MissedReason
from punctual.contracts.records import RunResult as R


@pytest.mark.parametrize(
    ("result", "ran", "final", "failed"),
    [
        (R.SUCCEEDED, True, True, False),
        (R.FAILED, True, True, True),
        (R.TIMED_OUT, True, True, True),
        (R.LOST, True, True, True),
        (R.CANCELLED, True, False, False),
        (R.SKIPPED_OVERLAP, False, False, False),
        (R.SKIPPED_IN_FLIGHT_LIMIT, False, False, False),
        (R.SKIPPED_QUEUE_LIMIT, False, False, False),
        (R.MISSED, False, False, False),
    ],
)
def test_each_result_says_whether_it_ran_whether_it_is_a_verdict_and_whether_it_failed(
    result: R, ran: bool, final: bool, failed: bool
) -> None:
    assert (result.ran, result.final, result.failed) == (ran, final, failed)


def test_every_result_is_in_the_table() -> None:
    assert len(R) == 9


def test_the_api_value_of_a_run_the_operator_ended_is_cancelled() -> None:
    assert R.CANCELLED == "Cancelled"


@pytest.mark.parametrize(
    ("reason", "missed"),
    [
        (MissedReason.SLOTS_MISSED, True),
        (MissedReason.LOCK_FORGOT, True),
        (MissedReason.LOCK_UNAVAILABLE, True),
        (MissedReason.DISARMED, True),
        (MissedReason.SUSPENDED, False),
        (MissedReason.EXCLUDED, False),
    ],
)
def test_slots_given_up_are_missed_unless_a_suspension_passed_them_or_they_were_excluded(
    reason: MissedReason, missed: bool
) -> None:
    assert reason.missed is missed
    assert len(MissedReason) == 6


@pytest.mark.parametrize(
    ("result", "warns", "recorded", "has_duration"),
    [
        (R.SUCCEEDED, False, True, True),
        (R.FAILED, True, True, True),
        (R.TIMED_OUT, True, True, True),
        (R.LOST, True, True, False),
        (R.CANCELLED, False, True, False),
        (R.SKIPPED_OVERLAP, False, True, False),
        (R.SKIPPED_IN_FLIGHT_LIMIT, False, True, False),
        (R.SKIPPED_QUEUE_LIMIT, False, True, False),
        (R.MISSED, True, False, False),
    ],
)
def test_each_result_says_whether_it_warns_is_carried_by_a_record_and_has_a_duration(
    result: R, warns: bool, recorded: bool, has_duration: bool
) -> None:
    assert (result.warns, result.recorded, result.has_duration) == (warns, recorded, has_duration)
