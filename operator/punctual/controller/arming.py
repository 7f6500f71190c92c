"""What a replica does with a new, valid generation of a ScheduledJob: suspend it, or arm it
from a given slot on.

A pure decision of what this replica saw of the job before, the spec, the job's own status,
its plan and the time: the reconciler (``punctual.controller.reconciler``) applies it. Kept
apart so that the arithmetic of where scheduling starts again (the high-water mark, the slots
a suspension passed) is tested as a table, without a scheduler or an API server.
"""

from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime

from punctual.api import models, status_reader
from punctual.controller import failures
from punctual.scheduling import plans


@dataclass(frozen=True, slots=True)
class Seen:
    """What this replica made of the last generation of a job it acted on."""

    generation: int
    suspended: bool
    suspend_after_failures: int | None = None
    suspended_after: datetime | None = None
    """The newest slot this replica dealt with before the suspension (when it was scheduling
    the job): the missed slots on resume are the ones after it."""
    inputs: Hashable | None = None
    """What besides the spec the plan was made from (the reconciler's: the slots skipped, the
    Calendars named, at the versions seen); a change plans the job again. Not read here."""


@dataclass(frozen=True, slots=True)
class Suspend:
    """No new slots; the Suspended condition says why (``reason``, ``message``)."""

    newly: bool
    """Not suspended before this generation: the slot the suspension comes after is the newest
    one the scheduler dealt with, which it says as it stops. Otherwise ``suspended_after``,
    from the suspension already seen, stays."""
    suspended_after: datetime | None
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Arm:
    """Schedule the slots after ``resume_after``."""

    resume_after: datetime
    suspended_through: datetime | None = None
    """On a resume: the slots up to this instant were passed by the suspension (counted as
    such, never run)."""
    reset_failures: bool = False
    """``status.consecutiveFailures`` starts again from 0 (the job was resumed)."""


Decision = Suspend | Arm


def decide(
    *,
    seen: Seen | None,
    spec: models.ScheduledJobSpec,
    status: status_reader.Status,
    plan: plans.JobPlan,
    now: datetime,
) -> Decision:
    """What to do with a new generation whose spec is ``spec``, ``seen`` what this replica made
    of the previous one (None: none, the job is new to this replica), ``status`` the job's own
    status and ``now`` the wall clock's time."""
    threshold = spec.suspend_after_failures
    count = status_reader.consecutive_failures(status)
    was_suspended = seen is not None and seen.suspended
    if spec.suspend:
        paused = threshold is not None and count >= threshold
        return Suspend(
            newly=not was_suspended,
            suspended_after=seen.suspended_after if seen is not None and seen.suspended else None,
            reason=failures.REASON if paused else "Suspended",
            message=failures.message(count=count, threshold=threshold)
            if paused and threshold is not None
            else "spec.suspend is true: no new slots",
        )
    # Resumed (here, or while this replica was away): the count starts again.
    reset = bool(count) and (was_suspended or (threshold is not None and count >= threshold))
    nominal_now = plan.nominal(now)
    high_water = status_reader.high_water(status)
    if seen is None:
        # First sight on this replica (creation, or an operator restart): slots since the
        # high-water mark follow the missed-run policy; a new object starts from now.
        return Arm(resume_after=high_water or nominal_now, reset_failures=reset)
    if seen.suspended:
        # Resumed: slots while suspended are counted so (not missed), never replayed (a
        # CronJob runs the newest of them on resume, within its deadline). Counted from the
        # last slot this replica dealt with, not from the Suspended condition's time (a later
        # status write, in whole seconds): a slot due in between would be lost.
        since = (
            seen.suspended_after
            or status_reader.suspended_since(status)
            or high_water
            or nominal_now
        )
        return Arm(
            resume_after=max(since, high_water) if high_water else since,
            suspended_through=nominal_now,
            reset_failures=reset,
        )
    # A spec change takes effect from the first slot after it; never a past slot.
    return Arm(
        resume_after=max(nominal_now, high_water) if high_water else nominal_now,
        reset_failures=reset,
    )
