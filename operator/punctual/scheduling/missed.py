"""What to do with slots that came due while nobody could run them (downtime, a stall)."""

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta


class MissedRunPolicy(enum.StrEnum):
    SKIP = "Skip"
    """Run none of them; resume at the next future slot."""
    RUN_ONCE = "RunOnce"
    """Run the newest one now, once."""
    CATCH_UP = "CatchUp"
    """Run each of them in order, at most ``max_catch_up``; older ones are missed."""


@dataclass(frozen=True, slots=True)
class MissedRuns:
    policy: MissedRunPolicy = MissedRunPolicy.RUN_ONCE
    max_catch_up: int = 10
    starting_deadline: timedelta | None = None
    """A slot that cannot start within this of its fire time is missed, not run late."""


GIVEN_UP_CLAIMS = 16
"""How many of the newest slots given up are claimed one by one, to be counted exactly once."""


@dataclass(frozen=True, slots=True)
class Decision:
    run: tuple[datetime, ...]
    """The slots to run now, oldest first."""
    missed: int
    """How many slots are given up, for the counts."""
    given_up: tuple[datetime, ...]
    """The newest slots given up, oldest first (all of them unless more than
    ``GIVEN_UP_CLAIMS``): each is claimed, so that exactly one replica counts it, whichever
    replicas fell behind and when. Older ones go with the oldest of these."""


def decide(newest: Sequence[datetime], *, total: int, now: datetime, rules: MissedRuns) -> Decision:
    """Decide on ``total`` overdue slots, of which ``newest`` are the newest, oldest first.

    ``now`` is on the job's jittered timeline (wall time minus the jitter offset), so the
    starting deadline counts from each slot's own fire time. The caller passes the
    ``keep_for(rules)`` newest slots: all that can run and ``GIVEN_UP_CLAIMS`` more, so that the
    newest given-up slots are among them (slots given up are always older than slots run).
    """
    in_time = [slot for slot in newest if within_deadline(slot, now=now, rules=rules)]
    match rules.policy:
        case MissedRunPolicy.SKIP:
            run: list[datetime] = []
        case MissedRunPolicy.RUN_ONCE:
            run = in_time[-1:]
        case MissedRunPolicy.CATCH_UP:
            run = in_time[-rules.max_catch_up :] if rules.max_catch_up > 0 else []
    given_up = [slot for slot in newest if slot not in run]
    return Decision(
        run=tuple(run),
        missed=total - len(run),
        given_up=tuple(given_up[-GIVEN_UP_CLAIMS:]),
    )


def give_up(newest: Sequence[datetime], *, total: int) -> Decision:
    """Give up all ``total`` slots, of which ``newest`` are the newest (a suspension, a slot
    past its starting deadline)."""
    return Decision(run=(), missed=total, given_up=tuple(newest[-GIVEN_UP_CLAIMS:]))


def merge(first: Decision, second: Decision) -> Decision:
    """The slots given up in ``first`` and in ``second``, counted together (nothing to run):
    the newest ``GIVEN_UP_CLAIMS`` of both listed, the older ones with the oldest listed."""
    listed = sorted({*first.given_up, *second.given_up})
    repeated = len(first.given_up) + len(second.given_up) - len(listed)
    return Decision(
        run=(),
        missed=first.missed + second.missed - repeated,
        given_up=tuple(listed[-GIVEN_UP_CLAIMS:]),
    )


@dataclass(frozen=True, slots=True)
class Tally:
    """What the claims of a decision's given-up slots, made only to count them, came to."""

    counted: int
    """Slots this replica counts missed: the listed ones it won, and the older ones if it won
    the oldest listed."""
    newest: datetime | None
    """The newest listed slot it won (None: it won none)."""
    unanswered: Decision | None
    """The listed slots whose claim got no answer (the lock unavailable, or no time left), and
    the older ones if the oldest listed is among them: nobody counted them yet."""


def tally(decision: Decision, won: Sequence[bool | None]) -> Tally:
    """Tally the claims of ``decision.given_up``, ``won`` their answers in the same order (None:
    no answer). Each slot is counted by the one replica whose claim won it, so that the count
    never multiplies across replicas; a slot whose claim got no answer is left to count later
    rather than counted twice."""
    older = decision.missed - len(decision.given_up)
    ours = [slot for slot, mine in zip(decision.given_up, won, strict=True) if mine]
    left = tuple(slot for slot, mine in zip(decision.given_up, won, strict=True) if mine is None)
    left_older = older if won and won[0] is None else 0
    return Tally(
        counted=len(ours) + (older if won and won[0] else 0),
        newest=ours[-1] if ours else None,
        unanswered=(
            Decision(run=(), missed=len(left) + left_older, given_up=left) if left else None
        ),
    )


def keep_for(rules: MissedRuns) -> int:
    """How many of the newest overdue slots ``decide`` needs to see."""
    return max(rules.max_catch_up, 1) + GIVEN_UP_CLAIMS


def within_deadline(slot: datetime, *, now: datetime, rules: MissedRuns) -> bool:
    """Whether ``slot`` may still start at ``now`` (both on the job's jittered timeline)."""
    return rules.starting_deadline is None or now - slot <= rules.starting_deadline


def runs_when_answered(
    slot: datetime, *, now: datetime, following: datetime | None, rules: MissedRuns
) -> bool:
    """Whether ``slot``, whose claim to run it was won only at ``now`` (held through a Redis
    failover), still runs, late: as if the replica had stalled until ``now`` with this slot
    the oldest due. It runs within its starting deadline, and, unless the policy catches up,
    only while no later slot is due (``following``, the next slot of the schedule; None when
    there is none or it cannot be due yet): ``RunOnce`` runs the newest slot instead and
    ``Skip`` resumes at the next, so the claim won counts this one missed, once."""
    if not within_deadline(slot, now=now, rules=rules):
        return False
    catches_up = rules.policy is MissedRunPolicy.CATCH_UP and rules.max_catch_up > 0
    return catches_up or following is None or following > now
