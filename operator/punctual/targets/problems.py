"""What a target's runs found wrong with a job's destination, for its Ready condition.

Some problems only a run can find, because only a run reaches the destination: a queue job's
broker named by a Secret the operator reads at each run turns out to be a Redis Cluster node
(``BrokerIsCluster``), where no push can ever succeed. Such a run fails like any other (its
record, its Warning Event); besides, its executor tells ``TargetProblems`` what it found, and
the controller shows it as ``Ready: False`` with that reason until a later run of the job finds
the destination usable, or a new generation of the spec is armed. One record per job, kept by
the replica whose runs found it; the executor tells it again at each run, so a replica that
restarted learns it back at the next one.
"""

from collections.abc import Callable
from dataclasses import dataclass

from punctual.scheduling import slots


@dataclass(frozen=True, slots=True)
class Problem:
    """Why the job's runs cannot succeed, as the Ready condition says it."""

    reason: str
    """One CamelCase word (``punctual.targets.errors``)."""
    message: str
    """Names the field or Secret key users can change, never a credential."""


Listener = Callable[[slots.JobRef], None]
"""Called with the job whose problem appeared, changed or went away."""


class TargetProblems:
    """The problems the targets' runs found, per job; tells its listeners of each change."""

    def __init__(self) -> None:
        self._problems: dict[slots.JobRef, Problem] = {}
        self._listeners: list[Listener] = []

    def __repr__(self) -> str:
        return f"TargetProblems({len(self._problems)} jobs)"

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def found(self, job: slots.JobRef, problem: Problem | None) -> None:
        """A run of ``job`` found ``problem`` (None: its destination was usable); the
        listeners hear of it only when that changes what is known."""
        if self._problems.get(job) == problem:
            return
        if problem is None:
            del self._problems[job]
        else:
            self._problems[job] = problem
        for listener in self._listeners:
            listener(job)

    def of(self, job: slots.JobRef) -> Problem | None:
        return self._problems.get(job)

    def forget(self, job: slots.JobRef) -> None:
        """Drop what ``job``'s runs found (a new generation, or the job deleted), silently:
        the caller states the condition itself."""
        self._problems.pop(job, None)
