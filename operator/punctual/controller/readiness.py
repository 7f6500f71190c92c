"""The Ready condition of a job being scheduled, as a pure function of what stands in the way of
its runs: its loop stopped by itself, a lock backend that does not answer, or a destination its
runs found unusable (``targets.problems``). The first of these, in that order, is what Ready
says; with none, it is True (``Scheduled``) and says where the runs' work goes.
"""

from dataclasses import dataclass

from punctual.api import condition_models
from punctual.runtime import job_loop
from punctual.targets import problems


@dataclass(frozen=True, slots=True)
class Ready:
    ok: bool
    reason: str
    message: str


def ready(
    *,
    stopped: tuple[str, str] | None,
    lock_unavailable: str | None,
    problem: problems.Problem | None,
    destination: str,
) -> Ready:
    """``stopped``: the reason and message its loop stopped with (``Ended``, its window over,
    is what was asked for: True); ``lock_unavailable``: why the lock backend does not answer
    (then no slot can be claimed); ``problem``: what its runs found of its destination;
    ``destination``: where its work goes when the spec alone does not say (a stream key)."""
    if stopped is not None:
        reason, message = stopped
        return Ready(reason == job_loop.ENDED, reason, message)
    if lock_unavailable is not None:
        return Ready(False, condition_models.LOCK_BACKEND_UNAVAILABLE, lock_unavailable)
    if problem is not None:
        return Ready(False, problem.reason, problem.message)
    shown = "; ".join(filter(None, ["scheduling slots", destination]))
    return Ready(True, condition_models.SCHEDULED, shown)
