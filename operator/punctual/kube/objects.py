"""The newest body of each ScheduledJob this replica has seen.

Fed by watch events and by the responses to this replica's own writes, so optimistic writes
(status patches, claims) usually start from a current ``resourceVersion`` without a read.
"""

from punctual.kube import resources
from punctual.scheduling import slots


class ObjectCache:
    def __init__(self) -> None:
        self._bodies: dict[slots.JobRef, resources.Body] = {}

    def remember(self, body: resources.Body) -> None:
        """Keep ``body`` unless a newer version of the same object is already known."""
        ref = resources.job_ref(body)
        known = self._bodies.get(ref)
        if known is None or not _is_older(body, than=known):
            self._bodies[ref] = body

    def get(self, ref: slots.JobRef) -> resources.Body | None:
        return self._bodies.get(ref)

    def forget(self, ref: slots.JobRef) -> None:
        self._bodies.pop(ref, None)


def _is_older(body: resources.Body, *, than: resources.Body) -> bool:
    # resourceVersions are opaque by contract, but they are etcd revisions in practice; a
    # watch event and a write response can arrive out of order, and an older body must not
    # replace a newer one. Anything not numeric is taken as newer.
    mine = body["metadata"].get("resourceVersion", "")
    theirs = than["metadata"].get("resourceVersion", "")
    return mine.isdigit() and theirs.isdigit() and int(mine) < int(theirs)
