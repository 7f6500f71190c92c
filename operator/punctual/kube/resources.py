"""The ScheduledJob resource: its coordinates, and the identity of one object."""

from collections.abc import Mapping
from typing import Any

from punctual.scheduling import slots

GROUP = "punctual.dev"
VERSION = "v1alpha1"
PLURAL = "scheduledjobs"
KIND = "ScheduledJob"

Body = Mapping[str, Any]
"""A ScheduledJob object as the API server returns it (JSON)."""


def job_ref(body: Body) -> slots.JobRef:
    metadata = body["metadata"]
    return slots.JobRef(namespace=metadata["namespace"], name=metadata["name"], uid=metadata["uid"])
