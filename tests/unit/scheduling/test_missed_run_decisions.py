"""``missed.decide``: what runs after downtime or a stall, and what is counted as missed;
``missed.tally`` and ``missed.merge``: how the slots given up are counted once.

Slots are written as minutes before now: ``ago(3, 2, 1)`` are three overdue slots, oldest first.
"""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.scheduling import missed

SKIP = missed.MissedRunPolicy.SKIP
RUN_ONCE = missed.MissedRunPolicy.RUN_ONCE
CATCH_UP = missed.MissedRunPolicy.CATCH_UP
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def ago(*minutes: int) -> tuple[datetime, ...]:
    return tuple(NOW - timedelta(minutes=m) for m in minutes)


def skip(deadline: timedelta | None = None) -> missed.MissedRuns:
    return missed.MissedRuns(policy=SKIP, starting_deadline=deadline)


def run_once(deadline: timedelta | None = None) -> missed.MissedRuns:
    return missed.MissedRuns(policy=RUN_ONCE, starting_deadline=deadline)


def catch_up(cap: int, deadline: timedelta | None = None) -> missed.MissedRuns:
    return missed.MissedRuns(policy=CATCH_UP, max_catch_up=cap, starting_deadline=deadline)


FIVE_MINUTES = timedelta(minutes=5)


class TestTheDefaultsRunOnceWithoutADeadline:
    def test_defaults(self) -> None:
        assert missed.MissedRuns() == missed.MissedRuns(
            policy=RUN_ONCE, max_catch_up=10, starting_deadline=None
        )


class TestWhatRunsAfterMissedSlots:
    @pytest.mark.parametrize(
        ("rules", "newest", "total", "run", "missed_count"),
        [
            # Skip: resume at the next future slot, count every overdue one.
            pytest.param(skip(), ago(3, 2, 1), 3, (), 3, id="skip-runs-none-and-counts-all"),
            pytest.param(skip(), ago(1), 1, (), 1, id="skip-a-single-late-slot"),
            # RunOnce: one catch-up run, for the newest slot.
            pytest.param(run_once(), ago(3, 2, 1), 3, ago(1), 2, id="run-once-runs-the-newest"),
            pytest.param(run_once(), ago(1), 1, ago(1), 0, id="run-once-a-single-slot"),
            pytest.param(run_once(), ago(10, 9), 500, ago(9), 499,
                         id="run-once-counts-slots-it-was-not-shown"),
            # CatchUp: each in order, at most maxCatchUp, the oldest beyond the cap missed.
            pytest.param(catch_up(10), ago(3, 2, 1), 3, ago(3, 2, 1), 0,
                         id="catch-up-runs-all-in-order"),
            pytest.param(catch_up(2), ago(3, 2, 1), 3, ago(2, 1), 1,
                         id="catch-up-capped-the-oldest-is-missed"),
            pytest.param(catch_up(2), ago(3, 2, 1), 40, ago(2, 1), 38,
                         id="catch-up-counts-slots-beyond-the-newest"),
            pytest.param(catch_up(1), ago(3, 2, 1), 3, ago(1), 2,
                         id="catch-up-of-one-is-like-run-once"),
            pytest.param(catch_up(0), ago(2, 1), 2, (), 2, id="catch-up-of-zero-runs-none"),
            # Nothing overdue: nothing to run, nothing missed.
            pytest.param(skip(), (), 0, (), 0, id="skip-nothing-overdue"),
            pytest.param(run_once(), (), 0, (), 0, id="run-once-nothing-overdue"),
            pytest.param(catch_up(10), (), 0, (), 0, id="catch-up-nothing-overdue"),
        ],
    )  # fmt: skip
    def test_the_decision(
        self,
        rules: missed.MissedRuns,
        newest: tuple[datetime, ...],
        total: int,
        run: tuple[datetime, ...],
        missed_count: int,
    ) -> None:
        decision = missed.decide(newest, total=total, now=NOW, rules=rules)
        assert (decision.run, decision.missed) == (run, missed_count)


class TestSlotsOlderThanTheStartingDeadlineAreMissed:
    @pytest.mark.parametrize(
        ("rules", "newest", "total", "run", "missed_count"),
        [
            pytest.param(run_once(FIVE_MINUTES), ago(7, 4), 2, ago(4), 1,
                         id="run-once-the-newest-is-in-time"),
            pytest.param(run_once(FIVE_MINUTES), ago(9, 6), 2, (), 2,
                         id="run-once-all-too-old-runs-none"),
            pytest.param(run_once(FIVE_MINUTES), ago(5), 1, ago(5), 0,
                         id="run-once-exactly-at-the-deadline-still-runs"),
            pytest.param(catch_up(10, FIVE_MINUTES), ago(7, 6, 4, 3), 4, ago(4, 3), 2,
                         id="catch-up-only-the-slots-in-time"),
            pytest.param(catch_up(1, FIVE_MINUTES), ago(7, 4, 3), 3, ago(3), 2,
                         id="catch-up-in-time-and-capped"),
            pytest.param(catch_up(10, FIVE_MINUTES), ago(30, 20, 10), 3, (), 3,
                         id="catch-up-all-too-old-runs-none"),
            pytest.param(skip(FIVE_MINUTES), ago(2, 1), 2, (), 2,
                         id="skip-runs-none-even-in-time"),
        ],
    )  # fmt: skip
    def test_the_decision(
        self,
        rules: missed.MissedRuns,
        newest: tuple[datetime, ...],
        total: int,
        run: tuple[datetime, ...],
        missed_count: int,
    ) -> None:
        decision = missed.decide(newest, total=total, now=NOW, rules=rules)
        assert (decision.run, decision.missed) == (run, missed_count)

    @pytest.mark.parametrize(
        ("age", "deadline", "in_time"),
        [
            pytest.param(timedelta(minutes=4), FIVE_MINUTES, True, id="younger"),
            pytest.param(timedelta(minutes=5), FIVE_MINUTES, True, id="exactly-the-deadline"),
            pytest.param(FIVE_MINUTES + timedelta(milliseconds=1), FIVE_MINUTES, False, id="older"),
            pytest.param(timedelta(days=365), None, True, id="no-deadline-never-too-late"),
            pytest.param(timedelta(seconds=-1), timedelta(0), True, id="not-yet-due"),
        ],
    )
    def test_within_deadline(
        self, age: timedelta, deadline: timedelta | None, in_time: bool
    ) -> None:
        rules = missed.MissedRuns(starting_deadline=deadline)
        assert missed.within_deadline(NOW - age, now=NOW, rules=rules) is in_time


class TestASlotWhoseClaimWasAnsweredLate:
    """Its claim to run it was won only now, held through a failover: it runs late, like the
    oldest slot due after a stall, or is missed (counted by the replica that won it)."""

    @pytest.mark.parametrize(
        ("rules", "age", "following", "runs"),
        [
            pytest.param(run_once(), 3, None, True, id="run-once-no-later-slot-due-runs-late"),
            pytest.param(run_once(), 3, 1, False, id="run-once-a-later-slot-due-runs-instead"),
            pytest.param(run_once(), 3, 0, False, id="run-once-a-later-slot-due-exactly-now"),
            pytest.param(run_once(), 3, -1, True, id="run-once-the-next-slot-still-ahead"),
            pytest.param(skip(), 3, None, True, id="skip-no-later-slot-due-runs-late"),
            pytest.param(skip(), 3, 1, False, id="skip-a-later-slot-due-resumes-there"),
            pytest.param(catch_up(10), 3, 1, True, id="catch-up-runs-it-then-the-later-ones"),
            pytest.param(catch_up(0), 3, 1, False, id="catch-up-of-none-is-a-skip"),
            pytest.param(run_once(FIVE_MINUTES), 5, None, True, id="at-its-deadline-runs"),
            pytest.param(run_once(FIVE_MINUTES), 6, None, False, id="past-its-deadline-missed"),
            pytest.param(catch_up(10, FIVE_MINUTES), 6, 1, False, id="catch-up-past-deadline"),
        ],
    )
    def test_runs_only_within_its_deadline_and_while_the_policy_would_run_it(
        self, rules: missed.MissedRuns, age: int, following: int | None, runs: bool
    ) -> None:
        next_slot = None if following is None else ago(following)[0]
        assert (
            missed.runs_when_answered(ago(age)[0], now=NOW, following=next_slot, rules=rules)
            is runs
        )


class TestTheSlotsGivenUpAreNamedSoThatEachIsCountedByOneReplica:
    @pytest.mark.parametrize(
        ("rules", "newest", "total", "given_up"),
        [
            pytest.param(skip(), ago(3, 2, 1), 3, ago(3, 2, 1), id="skip-all-of-them"),
            pytest.param(run_once(), ago(3, 2, 1), 3, ago(3, 2),
                         id="run-once-those-before-the-run"),
            pytest.param(catch_up(2), ago(3, 2, 1), 9, ago(3),
                         id="catch-up-those-beyond-the-cap"),
            pytest.param(run_once(), ago(1), 1, (), id="nothing-given-up"),
            pytest.param(catch_up(10), ago(2, 1), 2, (), id="all-caught-up"),
            pytest.param(run_once(timedelta(seconds=30)), ago(2, 1), 2, ago(2, 1),
                         id="the-newest-is-too-late-too"),
            pytest.param(skip(), ago(*range(40, 0, -1)), 100, ago(*range(16, 0, -1)),
                         id="only-the-newest-sixteen"),
        ],
    )  # fmt: skip
    def test_given_up(
        self,
        rules: missed.MissedRuns,
        newest: tuple[datetime, ...],
        total: int,
        given_up: tuple[datetime, ...],
    ) -> None:
        decision = missed.decide(newest, total=total, now=NOW, rules=rules)
        assert decision.given_up == given_up

    def test_giving_up_everything_names_the_newest(self) -> None:
        decision = missed.give_up(ago(*range(20, 0, -1)), total=50)
        assert (decision.run, decision.missed) == ((), 50)
        assert decision.given_up == ago(*range(16, 0, -1))


class TestTheClaimsToCountAreTalliedSoThatNoSlotIsCountedTwiceOrNever:
    """``missed.tally``: True won here, False won elsewhere (counted there), None no answer."""

    @pytest.mark.parametrize(
        ("total", "listed", "won", "counted", "newest", "unanswered"),
        [
            pytest.param(3, ago(3, 2, 1), [True, True, True], 3, ago(1)[0], None,
                         id="all-won-here"),
            pytest.param(3, ago(3, 2, 1), [False, True, False], 1, ago(2)[0], None,
                         id="the-others-counted-elsewhere"),
            pytest.param(100, ago(2, 1), [True, False], 99, ago(2)[0], None,
                         id="the-older-ones-go-with-the-oldest-listed"),
            pytest.param(100, ago(2, 1), [False, True], 1, ago(1)[0], None,
                         id="older-ones-counted-by-who-won-the-oldest"),
            pytest.param(3, ago(3, 2, 1), [True, None, False], 1, ago(3)[0], (1, ago(2)),
                         id="a-claim-without-an-answer-is-left-to-count"),
            pytest.param(100, ago(2, 1), [None, True], 1, ago(1)[0], (99, ago(2)),
                         id="the-older-ones-stay-with-an-unanswered-oldest"),
            pytest.param(2, ago(2, 1), [None, None], 0, None, (2, ago(2, 1)),
                         id="no-answer-at-all"),
        ],
    )  # fmt: skip
    def test_tally(  # noqa: PLR0917 - a table's columns
        self,
        total: int,
        listed: tuple[datetime, ...],
        won: list[bool | None],
        counted: int,
        newest: datetime | None,
        unanswered: tuple[int, tuple[datetime, ...]] | None,
    ) -> None:
        tally = missed.tally(missed.give_up(listed, total=total), won)

        assert (tally.counted, tally.newest) == (counted, newest)
        left = tally.unanswered
        assert (None if left is None else (left.missed, left.given_up)) == unanswered


class TestSlotsLeftToCountAddUpWithinTheBound:
    @pytest.mark.parametrize(
        ("first", "second", "total", "listed"),
        [
            pytest.param((1, ago(3)), (1, ago(2)), 2, ago(3, 2), id="one-slot-then-another"),
            pytest.param((5, ago(3, 2)), (1, ago(1)), 6, ago(3, 2, 1),
                         id="older-ones-keep-riding-with-the-oldest"),
            pytest.param((1, ago(2)), (2, ago(2, 1)), 2, ago(2, 1),
                         id="a-slot-left-twice-is-one-slot"),
            pytest.param((16, ago(*range(17, 1, -1))), (1, ago(1)), 17,
                         ago(*range(16, 0, -1)), id="the-oldest-listed-drops-into-the-older-ones"),
        ],
    )  # fmt: skip
    def test_merge(
        self,
        first: tuple[int, tuple[datetime, ...]],
        second: tuple[int, tuple[datetime, ...]],
        total: int,
        listed: tuple[datetime, ...],
    ) -> None:
        merged = missed.merge(
            missed.give_up(first[1], total=first[0]), missed.give_up(second[1], total=second[0])
        )

        assert (merged.run, merged.missed, merged.given_up) == ((), total, listed)

    def test_an_outage_of_a_day_of_seconds_stays_sixteen_slots(self) -> None:
        left: missed.Decision | None = None
        for second in range(86_400, 0, -1):
            slot = missed.give_up((NOW - timedelta(seconds=second),), total=1)
            left = slot if left is None else missed.merge(left, slot)

        assert left is not None
        assert left.missed == 86_400
        assert len(left.given_up) == missed.GIVEN_UP_CLAIMS


class TestTheCallerIsToldHowManySlotsToShow:
    @pytest.mark.parametrize(
        ("rules", "keep"),
        [
            pytest.param(catch_up(10), 26, id="catch-up-the-cap-and-sixteen-given-up"),
            pytest.param(catch_up(0), 17, id="at-least-one-and-sixteen-given-up"),
            pytest.param(run_once(), 26, id="run-once-also-follows-the-cap"),
        ],
    )
    def test_keep_for(self, rules: missed.MissedRuns, keep: int) -> None:
        assert missed.keep_for(rules) == keep


class TestEveryDecisionKeepsTheInvariants:
    @settings(max_examples=200, deadline=None)
    @given(
        st.builds(
            missed.MissedRuns,
            policy=st.sampled_from(list(missed.MissedRunPolicy)),
            max_catch_up=st.integers(min_value=0, max_value=12),
            starting_deadline=st.one_of(
                st.none(),
                st.integers(min_value=0, max_value=600).map(lambda s: timedelta(seconds=s)),
            ),
        ),
        st.integers(min_value=0, max_value=60),
        st.integers(min_value=1, max_value=300).map(lambda s: timedelta(seconds=s)),
        st.integers(min_value=0, max_value=600).map(lambda s: timedelta(seconds=s)),
    )
    def test_for_the_slots_the_caller_is_told_to_show(
        self, rules: missed.MissedRuns, total: int, period: timedelta, since_last: timedelta
    ) -> None:
        last = NOW - since_last
        overdue = [last - index * period for index in reversed(range(total))]
        newest = overdue[-missed.keep_for(rules) :] if total else []
        decision = missed.decide(newest, total=total, now=NOW, rules=rules)

        assert list(decision.run) == sorted(decision.run)
        assert set(decision.run) <= set(newest)
        assert all(missed.within_deadline(s, now=NOW, rules=rules) for s in decision.run)
        assert decision.missed == total - len(decision.run)
        limit = {SKIP: 0, RUN_ONCE: 1, CATCH_UP: rules.max_catch_up}[rules.policy]
        in_time = [s for s in overdue if missed.within_deadline(s, now=NOW, rules=rules)]
        assert len(decision.run) == min(limit, len(in_time))
        assert bool(decision.given_up) == (decision.missed > 0)
        assert len(decision.given_up) == min(decision.missed, missed.GIVEN_UP_CLAIMS)
        if decision.given_up and decision.run:
            assert decision.given_up[-1] < decision.run[0]
