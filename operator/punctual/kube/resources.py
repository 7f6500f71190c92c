"""One ScheduledJob object as the API server returns it, and its identity.

The resource's coordinates (group, version, plural, kind) are the API's: ``punctual.api.models``.
"""

from collections.abc import Mapping
from typing import Any

from punctual.scheduling import slots

Body = Mapping[str, Any]
"""A ScheduledJob object as the API server returns it (JSON)."""


def job_ref(body: Body) -> slots.JobRef:
    metadata = body["metadata"]
    return slots.JobRef(namespace=metadata["namespace"], name=metadata["name"], uid=metadata["uid"])
