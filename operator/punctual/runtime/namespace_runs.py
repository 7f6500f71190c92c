"""What each namespace holds of this replica, summed over its jobs, and the caps on it: its runs
in flight, its runs queued and its backfills going.

The operator is shared by every namespace it watches: per-job bounds alone let a tenant with
many jobs take the replica from the others, one job's share at a time. So each of these is
counted per namespace in one place that every job of a supervisor shares, and a slot's decision
reads its namespace's count in one look, whatever the number of jobs. Per replica: with
sharding, a namespace's jobs are spread over the replicas, each holding up to each cap.
"""

import sys
from dataclasses import dataclass

from punctual.aio import places


class NamespaceCounts:
    """A count per namespace, summed over its jobs, and the cap on it: added to where a run
    starts (or is queued), taken from where it is recorded (or leaves the queue). A namespace
    leaves the count when it is back to none."""

    def __init__(self, *, limit: int) -> None:
        self.limit = limit
        self._counts: dict[str, int] = {}

    def count(self, namespace: str) -> int:
        return self._counts.get(namespace, 0)

    def has_room(self, namespace: str) -> bool:
        return self.count(namespace) < self.limit

    def added(self, namespace: str) -> None:
        self._counts[namespace] = self.count(namespace) + 1

    def removed(self, namespace: str) -> None:
        left = self.count(namespace) - 1
        if left > 0:
            self._counts[namespace] = left
        else:
            self._counts.pop(namespace, None)


@dataclass(frozen=True, slots=True, kw_only=True)
class NamespaceShares:
    """What every namespace holds of this replica, each with its cap (``punctual run``'s
    ``--max-runs-in-flight-per-namespace``, ``--max-queued-runs-per-namespace`` and
    ``--max-backfills-per-namespace``)."""

    runs_in_flight: NamespaceCounts
    """Runs started here and not yet recorded: a slot that would add one more is skipped."""
    queued_runs: NamespaceCounts
    """Runs claimed here and queued (``concurrencyPolicy: Queue``): a slot that would be queued
    as one more is skipped."""
    backfills: places.FairPlaces
    """Backfills going here, a place each, by namespace: one more than ``max_backfills`` waits
    for a place rather than being refused, as a window of past slots loses nothing by starting
    later, and a request refused would have to be made again by hand. A namespace's waiting
    backfills start in the order they were asked for."""
    max_backfills: int


def capped(*, max_runs_in_flight: int, max_queued_runs: int, max_backfills: int) -> NamespaceShares:
    """Shares with these caps per namespace; none on the replica as a whole."""
    return NamespaceShares(
        runs_in_flight=NamespaceCounts(limit=max_runs_in_flight),
        queued_runs=NamespaceCounts(limit=max_queued_runs),
        backfills=places.FairPlaces(limit=sys.maxsize, per_group=max_backfills),
        max_backfills=max_backfills,
    )
