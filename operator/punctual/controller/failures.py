"""Pause on failure (``spec.suspendAfterFailures``): the operator suspends a job itself once
``status.consecutiveFailures`` reaches the threshold.

Every replica sees every status write of the job as a watch event, and each that sees the count
rise to the threshold or above while the job is not suspended sets ``spec.suspend: true``, on
the version it saw (``resourceVersion`` as a precondition): exactly one write lands, and that
replica alone posts the Warning Event. The others get a conflict, read the object again and find
it suspended. Only a rise counts (a failure recorded since the last version this replica saw):
a job resumed with its count still at the threshold is not suspended again before its next
failure, by which time the resume has set the count to 0.
"""

import logging
from collections.abc import Mapping
from typing import Any

from punctual.api import status_reader
from punctual.contracts import protocols
from punctual.kube import resources, spec_api, status_api

logger = logging.getLogger(__name__)

REASON = "SuspendedAfterFailures"
"""The Suspended condition's reason, and the Warning Event's, when the operator suspended a job."""
_ATTEMPTS = 5


def due(*, previous: int | None, body: resources.Body, threshold: int | None) -> bool:
    """Whether ``body`` is to be suspended, ``previous`` the count of the version this replica
    saw before it in its watch (None: none; then only the next rise tells)."""
    if threshold is None or previous is None or _suspended(body):
        return False
    count = status_reader.consecutive_failures(status_reader.of(body))
    return count >= threshold and count > previous


def message(*, count: int, threshold: int) -> str:
    return (
        f"suspended by the operator after {count} failed runs in a row "
        f"(spec.suspendAfterFailures is {threshold}); set spec.suspend to false to resume"
    )


class FailurePause:
    def __init__(self, *, api: spec_api.SpecApi, warnings: protocols.Warnings) -> None:
        self._api = api
        self._warnings = warnings

    async def suspend(self, body: resources.Body, *, threshold: int) -> bool:
        """Set ``spec.suspend: true`` on ``body``'s version, again on a newer one while it still
        needs it; True when this replica's write landed (and the Event is posted)."""
        job = resources.job_ref(body)
        current = body
        try:
            for _ in range(_ATTEMPTS):
                try:
                    suspended = await self._api.suspend(
                        job, resource_version=current["metadata"]["resourceVersion"]
                    )
                except status_api.ConflictError:
                    current = await self._api.read(job.namespace, job.name)
                    if current["metadata"]["uid"] != job.uid or _suspended(current):
                        return False
                    if status_reader.consecutive_failures(status_reader.of(current)) < threshold:
                        return False
                    continue
                count = status_reader.consecutive_failures(status_reader.of(suspended))
                self._warnings.warn(
                    job, reason=REASON, message=message(count=count, threshold=threshold)
                )
                return True
        except status_api.GoneError:
            return False
        except status_api.UnavailableError as error:
            # The job's next failure raises the count again, and tries again.
            logger.warning("%s/%s not suspended: %s", job.namespace, job.name, error)
            return False
        logger.warning(
            "%s/%s not suspended: %d conflicting writes", job.namespace, job.name, _ATTEMPTS
        )
        return False


def _suspended(body: Mapping[str, Any]) -> bool:
    return (body.get("spec") or {}).get("suspend") is True
