"""The newest body of each ScheduledJob this replica has seen, trimmed to what its users read.

Fed by watch events and by the responses to this replica's own writes, so optimistic writes
(status patches, claims) usually start from a current ``resourceVersion`` without a read.

Only what the status writer, the kubernetes lock, Events and metrics read is kept: the object's
identity, its ``resourceVersion`` and ``generation``, its ``status``, and the kind of its target
(the one key under ``spec.target``: ``target_kind``). Not the spec, labels,
annotations (a ``kubectl apply`` leaves a copy of the whole object there) or ``managedFields``
(an entry per field manager, rewritten by every status write): kept whole, the bodies were
about a quarter of a replica's memory per job.
"""

import sys
from typing import Any

from punctual.kube import resources
from punctual.scheduling import slots

_METADATA = ("name", "namespace", "uid", "resourceVersion", "generation")


class ObjectCache:
    def __init__(self) -> None:
        self._bodies: dict[slots.JobRef, resources.Body] = {}
        self._target_kinds: dict[slots.JobRef, str] = {}

    def remember(self, body: resources.Body) -> None:
        """Keep ``body`` unless a newer version of the same object is already known."""
        ref = resources.job_ref(body)
        known = self._bodies.get(ref)
        if known is None or not _is_older(body, than=known):
            self._bodies[ref] = _trimmed(body)
            target = (body.get("spec") or {}).get("target")
            if isinstance(target, dict) and len(target) == 1:
                self._target_kinds[ref] = sys.intern(str(next(iter(target))))

    def get(self, ref: slots.JobRef) -> resources.Body | None:
        return self._bodies.get(ref)

    def target_kind(self, ref: slots.JobRef) -> str | None:
        """The key under the newest known ``spec.target`` (``http``, ``job``, ``queue``).
        Status write answers carry the spec too, so it stays current."""
        return self._target_kinds.get(ref)

    def forget(self, ref: slots.JobRef) -> None:
        self._bodies.pop(ref, None)
        self._target_kinds.pop(ref, None)


def _trimmed(body: resources.Body) -> resources.Body:
    """A plain dict of what the cache's users read; ``status`` is shared, not copied (bodies
    are never changed in place: every write answers a new one)."""
    metadata = body["metadata"]
    trimmed: dict[str, Any] = {
        "metadata": {key: metadata[key] for key in _METADATA if key in metadata},
    }
    for key in ("apiVersion", "kind", "status"):
        if key in body:
            trimmed[key] = body[key]
    return trimmed


def _is_older(body: resources.Body, *, than: resources.Body) -> bool:
    # resourceVersions are opaque by contract, but they are etcd revisions in practice; a
    # watch event and a write response can arrive out of order, and an older body must not
    # replace a newer one. Anything not numeric is taken as newer.
    mine = body["metadata"].get("resourceVersion", "")
    theirs = than["metadata"].get("resourceVersion", "")
    return mine.isdigit() and theirs.isdigit() and int(mine) < int(theirs)
