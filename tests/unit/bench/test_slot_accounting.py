"""The chaos benchmark accounts for every expected slot exactly once, in the documented order."""

from datetime import UTC, datetime, timedelta

from slot_accounting import Record, account, expected_slots, table, total

SECOND = timedelta(seconds=1)
T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def at(seconds: int) -> datetime:
    return T0 + seconds * SECOND


class TestExpectedSlots:
    def test_are_the_multiples_of_the_period_after_the_start_up_to_the_end(self) -> None:
        slots = expected_slots(T0 + timedelta(milliseconds=300), at(3), SECOND)

        assert slots == [at(1), at(2), at(3)]


class TestEverySlotGoesToExactlyOneColumn:
    def test_a_received_slot_ran_and_a_second_call_for_it_is_a_duplicate(self) -> None:
        tally = account(
            "job",
            expected=[at(1), at(2)],
            keys_received=[at(1), at(1), at(2)],
            records=[],
            claimed=[],
            every=SECOND,
        )

        assert (tally.ran, tally.duplicates, tally.unexplained) == (2, 1, 0)

    def test_a_failed_record_explains_a_slot_that_never_arrived(self) -> None:
        tally = account(
            "job",
            expected=[at(1)],
            keys_received=[],
            records=[Record(at(1), "Failed", "HttpTargetError")],
            claimed=[at(1)],
            every=SECOND,
        )

        assert (tally.failed, tally.lost, tally.unexplained) == (1, 0, 0)

    def test_a_missed_record_covers_as_many_slots_as_its_message_counts(self) -> None:
        tally = account(
            "job",
            expected=[at(1), at(2), at(3), at(4)],
            keys_received=[],
            records=[Record(at(3), "Missed", "3 slot(s) missed, the newest 12:00:03Z")],
            claimed=[at(3)],
            every=SECOND,
        )

        assert (tally.policy, tally.unexplained) == (3, 1)
        assert tally.unexplained_slots == [at(4)]

    def test_a_claimed_slot_without_a_call_or_a_record_was_lost(self) -> None:
        tally = account(
            "job",
            expected=[at(1), at(2)],
            keys_received=[at(2)],
            records=[],
            claimed=[at(1), at(2)],
            every=SECOND,
        )

        assert (tally.ran, tally.lost, tally.lost_slots) == (1, 1, [at(1)])

    def test_a_slot_nobody_claimed_ran_or_counted_is_unexplained(self) -> None:
        tally = account(
            "job", expected=[at(1)], keys_received=[], records=[], claimed=[], every=SECOND
        )

        assert tally.unexplained_slots == [at(1)]


def test_the_table_ends_with_the_totals_of_all_jobs() -> None:
    tallies = [
        account("a", expected=[at(1)], keys_received=[at(1)], records=[], claimed=[], every=SECOND),
        account("b", expected=[at(1)], keys_received=[], records=[], claimed=[at(1)], every=SECOND),
    ]

    lines = table(tallies)

    assert lines[-1].split() == ["total", "2", "1", "0", "0", "1", "0", "0"]
    assert total(tallies).lost == 1


def test_a_lost_record_counts_the_slot_lost_and_recorded() -> None:
    tally = account(
        "job",
        expected=[at(1)],
        keys_received=[],
        records=[Record(at(1), "Lost", "replica r2 stopped renewing the run's lease")],
        claimed=[at(1)],
        every=SECOND,
    )

    assert (tally.lost, tally.lost_recorded, tally.unexplained) == (1, 1, 0)
