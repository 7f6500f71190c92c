"""The batch Jobs of the job target as they are read back: what the operator needs to know of
one (``BatchJobState``, from a body the API server sent) and how it ended (``BatchJobEnd``).

Only that small record is kept of a Job, never its body: the label the watch selects on is
anyone's to set, and so is the size of a Job.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from punctual.api import models
from punctual.contracts import records
from punctual.scheduling import timeline
from punctual.targets.job import manifests, warm

MAX_SLOT_ID_LENGTH = 512
"""Longer than any slot id (``<namespace>/<name>/<uid>/<unix ms>``, a name being at most 253
characters): an annotation past it is no slot id, and is not kept."""


@dataclass(frozen=True, slots=True)
class BatchJobEnd:
    """How a batch Job ended: its Complete or Failed condition, or its deletion before either."""

    succeeded: bool
    reason: str
    message: str = ""

    @property
    def deadline_exceeded(self) -> bool:
        return self.reason == "DeadlineExceeded"

    @property
    def deleted(self) -> bool:
        """Deleted before it finished: ended from outside, no verdict on its workload."""
        return self.reason == DELETED.reason and not self.succeeded


DELETED = BatchJobEnd(succeeded=False, reason="Deleted", message="deleted before it finished")


@dataclass(frozen=True, slots=True)
class BatchJobState:
    """What the operator needs to know about one batch Job."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    owner_uid: str | None
    """The uid of the Job's controller when that is a ScheduledJob (of the Job's namespace, as
    every owner is), else ``None``: no ScheduledJob's Job."""
    slot_id: str | None
    scheduled_time: datetime | None
    end: BatchJobEnd | None
    """``None`` while the Job runs."""
    deleting: bool = False
    """Its deletion has begun (``metadata.deletionTimestamp``)."""
    warm_start: records.StartMode | None = None
    """A warm Job's mode (``punctual.dev/warm-start``: Exec or Init); None for a cold one."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> "BatchJobState":
        metadata = body.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        owner = next(
            (ref for ref in metadata.get("ownerReferences") or [] if ref.get("controller")), None
        )
        if owner is not None and not _is_scheduled_job(owner):
            owner = None
        slot_id = annotations.get(manifests.SLOT_ID_ANNOTATION)
        if not isinstance(slot_id, str) or len(slot_id) > MAX_SLOT_ID_LENGTH:
            slot_id = None
        warm_start = annotations.get(warm.WARM_START_ANNOTATION)
        scheduled = annotations.get(manifests.SCHEDULED_TIME_ANNOTATION)
        try:
            scheduled_time = timeline.parse_rfc3339(scheduled) if scheduled else None
        except ValueError:
            scheduled_time = None
        return cls(
            namespace=metadata.get("namespace", ""),
            name=metadata.get("name", ""),
            uid=metadata.get("uid", ""),
            resource_version=metadata.get("resourceVersion", ""),
            owner_uid=owner.get("uid") if owner else None,
            slot_id=slot_id,
            scheduled_time=scheduled_time,
            end=_end_of(body.get("status") or {}),
            deleting=bool(metadata.get("deletionTimestamp")),
            warm_start=_WARM_MODES.get(warm_start) if isinstance(warm_start, str) else None,
        )


_WARM_MODES = {mode.value: mode for mode in (records.StartMode.EXEC, records.StartMode.INIT)}


def _is_scheduled_job(reference: Mapping[str, Any]) -> bool:
    group = str(reference.get("apiVersion") or "").partition("/")[0]
    return group == models.GROUP and reference.get("kind") == models.KIND


def _end_of(status: Mapping[str, Any]) -> BatchJobEnd | None:
    for condition in status.get("conditions") or []:
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            return BatchJobEnd(
                succeeded=True, reason="Complete", message=condition.get("message", "")
            )
        # FailureTarget (Kubernetes 1.31+) comes first: the Job is failed, its pods are still
        # terminating (Failed follows when they are gone, up to their grace period later).
        if condition.get("type") in ("Failed", "FailureTarget"):
            return BatchJobEnd(
                succeeded=False,
                reason=condition.get("reason") or "Failed",
                message=condition.get("message") or "",
            )
    return None


def sorted_by_slot(states: Iterable[BatchJobState]) -> list[BatchJobState]:
    """Newest slot first (by scheduled time, then name)."""
    return sorted(
        states,
        key=lambda state: (state.scheduled_time or timeline.EPOCH, state.name),
        reverse=True,
    )
