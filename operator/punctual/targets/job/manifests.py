"""The batch Jobs of the job target as they are written: their names, labels, annotations and
manifests, serialised ahead of their slot.

- Names: one batch Job per slot, ``<name>-<unix seconds of the slot>``, so that creating it
  twice (two replicas, a retry, an operator restarted mid-slot) fails with ``AlreadyExists``
  instead of running the slot twice. The ``<name>`` part is at most 52 characters, CronJob's own
  limit for the same reason: the Job controller copies the Job's name into the ``job-name`` and
  ``batch.kubernetes.io/job-name`` labels of its pods, and label values stop at 63 characters;
  52 + ``-`` + 10 digits of unix seconds is 63. (Pod names are ``<job name>-<5 random>``, which
  the API server's name generator keeps within 63 by trimming the base, so they fit too.) A
  longer ScheduledJob name is cut to 43 characters plus ``-`` and 8 hex digits of its SHA-256:
  stable across replicas and restarts, distinct for names sharing a long prefix. A run asked
  for by hand (``punctual.dev/run-now``) is ``<name>-n<9 hex digits of its token's SHA-256>``
  (the token may be 63 characters long; the slot-id annotation carries it whole).
- ``BatchJobRequest``: a slot's batch Job, built and serialised ahead of its slot (off the
  firing path).
- ``BatchJobTemplate``: a ScheduledJob's Job serialised once, when it is armed; a slot's request
  adds only what is the slot's (its name and annotations) and shares the rest. A template may
  weigh what the API server lets an object weigh, and each job keeps its next slots' requests.
"""

import hashlib
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from punctual.api import models
from punctual.scheduling import slots, timeline

SCHEDULED_JOB_LABEL = "punctual.dev/scheduled-job"
"""On every Job of the job target: the ScheduledJob's name (shortened past 63 characters)."""
SCHEDULED_TIME_ANNOTATION = "punctual.dev/scheduled-time"
"""RFC 3339 (UTC): when the run was due, the slot plus the ScheduledJob's jitter."""
CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
"""RFC 3339: the slot, as CronJob writes it on its Jobs, so that tooling written for CronJob's
Jobs reads it unchanged (on the Job only, as CronJob; no jitter, which CronJob has not). In UTC,
where CronJob writes its own zone's offset: the same instant, and a ScheduledJob's slots may come
from entries in several zones."""
SLOT_ID_ANNOTATION = "punctual.dev/slot-id"
"""The slot id, ``<namespace>/<name>/<uid>/<unix-ms>``: also what tells our Jobs apart."""

MAX_BASE_LENGTH = 52
"""CronJob's name limit: 52 + ``-`` + 10 digits = 63, the limit of a label value."""
MAX_LABEL_VALUE = 63
_HASH_LENGTH = 8


def base_name(name: str) -> str:
    """``name`` if it has at most 52 characters, else a stable 52-character abbreviation."""
    if len(name) <= MAX_BASE_LENGTH:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_LENGTH]
    # A DNS subdomain may have "-" or "." where the cut falls; a name must not end in either.
    prefix = name[: MAX_BASE_LENGTH - _HASH_LENGTH - 1].rstrip("-.")
    return f"{prefix}-{digest}"


def batch_job_name(scheduled_job: str, slot: datetime, *, token: str | None = None) -> str:
    """``<name>-<unix seconds of the slot>``, the name being ``base_name(scheduled_job)``; for
    a run asked for by hand, ``<name>-n<9 hex digits of the token's SHA-256>``."""
    if token is not None:
        return f"{base_name(scheduled_job)}-n{hashlib.sha256(token.encode()).hexdigest()[:9]}"
    return f"{base_name(scheduled_job)}-{timeline.unix_millis(slot) // 1000}"


def label_value(scheduled_job: str) -> str:
    """The ``punctual.dev/scheduled-job`` label: the name, or its abbreviation past 63 chars."""
    return scheduled_job if len(scheduled_job) <= MAX_LABEL_VALUE else base_name(scheduled_job)


def batch_job_manifest(
    template: Mapping[str, Any],
    *,
    owner: slots.JobRef,
    slot: datetime,
    slot_id: str,
    scheduled_time: datetime,
    active_deadline: timedelta,
    lead: timedelta = timedelta(),
    token: str | None = None,
) -> dict[str, Any]:
    """The batch Job for one slot, from a CronJob-style ``jobTemplate`` ({metadata, spec}).

    The template's labels and annotations are kept, ours added on top (the slot's annotations on
    the pod template's metadata too); its ``spec`` is used as is otherwise, with
    ``activeDeadlineSeconds`` set to ``active_deadline`` (rounded up to whole seconds), or the
    template's own when it is shorter. A warm Job, created ``lead`` before its slot, has that
    deadline lengthened by the lead, the template's own too: the Job controller counts it from
    the Job's start, and the workload, released a lead later, keeps the whole of it. The
    template is not changed; the parts of it the Job takes unchanged are shared with it, not
    copied (a manifest is serialised, never changed).
    """
    return _manifest(
        template,
        owner=owner,
        active_deadline=active_deadline,
        lead=lead,
        name=batch_job_name(owner.name, slot, token=token),
        slot=timeline.rfc3339(slot),
        scheduled_time=timeline.rfc3339(scheduled_time),
        slot_id=slot_id,
    )


def _manifest(
    template: Mapping[str, Any],
    *,
    owner: slots.JobRef,
    active_deadline: timedelta,
    name: "str | _Slot",
    slot: "str | _Slot",
    scheduled_time: "str | _Slot",
    slot_id: "str | _Slot",
    lead: timedelta = timedelta(),
) -> dict[str, Any]:
    metadata = template.get("metadata") or {}
    spec = dict(template.get("spec") or {})
    given = spec.get("activeDeadlineSeconds")
    if (
        isinstance(given, int)
        and not isinstance(given, bool)
        and 0 < given < active_deadline.total_seconds()
    ):
        active_deadline = timedelta(seconds=given)
    spec["activeDeadlineSeconds"] = max(1, math.ceil((active_deadline + lead).total_seconds()))
    slot_annotations = {SCHEDULED_TIME_ANNOTATION: scheduled_time, SLOT_ID_ANNOTATION: slot_id}
    # On the pods too, where a container reads them through the downward API
    # (fieldRef metadata.annotations['punctual.dev/scheduled-time']).
    pod_template = dict(spec.get("template") or {})
    pod_metadata = dict(pod_template.get("metadata") or {})
    pod_metadata["annotations"] = {
        **dict(pod_metadata.get("annotations") or {}),
        **slot_annotations,
    }
    spec["template"] = {**pod_template, "metadata": pod_metadata}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": owner.namespace,
            "labels": {
                **dict(metadata.get("labels") or {}),
                SCHEDULED_JOB_LABEL: label_value(owner.name),
            },
            "annotations": {
                **dict(metadata.get("annotations") or {}),
                **slot_annotations,
                CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION: slot,
            },
            "ownerReferences": [
                {
                    "apiVersion": f"{models.GROUP}/{models.VERSION}",
                    "kind": models.KIND,
                    "name": owner.name,
                    "uid": owner.uid,
                    # The garbage collector deletes the Jobs with the ScheduledJob; deleting
                    # the ScheduledJob does not wait for them (nor need the right to).
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": spec,
    }


@dataclass(frozen=True, slots=True)
class BatchJobRequest:
    """The creation of one slot's batch Job, ready to send: its manifest, serialised."""

    namespace: str
    name: str
    parts: tuple[bytes, ...]
    """The manifest as compact JSON, in parts: those of a ``BatchJobTemplate`` are shared by
    every slot's request."""

    @property
    def body(self) -> bytes:
        """The manifest as compact JSON."""
        return b"".join(self.parts)

    @classmethod
    def of(cls, manifest: Mapping[str, Any]) -> "BatchJobRequest":
        metadata = manifest["metadata"]
        return cls(namespace=metadata["namespace"], name=metadata["name"], parts=(_json(manifest),))


@dataclass(frozen=True, slots=True)
class _Slot:
    """Where a ``BatchJobTemplate`` leaves a slot's own value."""

    field: str


_NAME, _SLOT, _SCHEDULED_TIME, _SLOT_ID = (
    _Slot("name"),
    _Slot("slot"),
    _Slot("scheduled time"),
    _Slot("slot id"),
)


class BatchJobTemplate:
    """One ScheduledJob's batch Job, serialised once but for what each slot has of its own: the
    same bytes as ``BatchJobRequest.of(batch_job_manifest(...))``, for the price of the slot's
    name and annotations."""

    def __init__(
        self, template: Mapping[str, Any], *, owner: slots.JobRef, active_deadline: timedelta
    ) -> None:
        self._owner = owner
        manifest = _manifest(
            template,
            owner=owner,
            active_deadline=active_deadline,
            name=_NAME,
            slot=_SLOT,
            scheduled_time=_SCHEDULED_TIME,
            slot_id=_SLOT_ID,
        )
        self._parts = tuple(_joined(_serialised(manifest)))

    def request(
        self,
        *,
        slot: datetime,
        slot_id: str,
        scheduled_time: datetime,
        token: str | None = None,
    ) -> BatchJobRequest:
        name = batch_job_name(self._owner.name, slot, token=token)
        values = {
            _NAME: _json(name),
            _SLOT: _json(timeline.rfc3339(slot)),
            _SCHEDULED_TIME: _json(timeline.rfc3339(scheduled_time)),
            _SLOT_ID: _json(slot_id),
        }
        parts = tuple(part if isinstance(part, bytes) else values[part] for part in self._parts)
        return BatchJobRequest(namespace=self._owner.namespace, name=name, parts=parts)


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _serialised(value: Any) -> Iterator[bytes | _Slot]:
    """``_json(value)``, but for the ``_Slot`` places left in it (only ever in objects)."""
    if isinstance(value, _Slot):
        yield value
    elif isinstance(value, Mapping) and _has_slot(value):
        yield b"{"
        for index, (key, item) in enumerate(value.items()):
            yield (b"," if index else b"") + _json(key) + b":"
            yield from _serialised(item)
        yield b"}"
    else:
        yield _json(value)


def _has_slot(value: Mapping[str, Any]) -> bool:
    return any(
        isinstance(item, _Slot) or (isinstance(item, Mapping) and _has_slot(item))
        for item in value.values()
    )


def _joined(parts: Iterator[bytes | _Slot]) -> Iterator[bytes | _Slot]:
    """Adjacent bytes as one part."""
    pending: list[bytes] = []
    for part in parts:
        if isinstance(part, bytes):
            pending.append(part)
            continue
        if pending:
            yield b"".join(pending)
            pending.clear()
        yield part
    if pending:
        yield b"".join(pending)
