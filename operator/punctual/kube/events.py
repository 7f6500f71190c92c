"""Kubernetes Events about ScheduledJobs, written as events.k8s.io/v1 (``EventsApi``) for the
aggregated Events of ``punctual.stores.events``: the runs' and the controller's alike. kopf's
own posts (a handler that failed) are signed the same way by its settings.

An Event is from ``REPORTING_CONTROLLER`` (``kubectl describe``'s "From"; core/v1 shows it as
``reportingComponent``), its reporting instance the replica.
"""

import json
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.kube import resources

logger = logging.getLogger(__name__)

REPORTING_CONTROLLER: Final = "punctual"
MAX_NOTE: Final = 1024
"""The API server refuses a longer note (message)."""
_MERGE_PATCH = "application/merge-patch+json"


class EventGoneError(Exception):
    """The Event no longer exists (expired, or deleted): write a new one."""


class NamespaceGoneError(Exception):
    """The Event's namespace is gone, or being deleted: no Event can be written there again
    (the API server answers 404 to a creation in a namespace that does not exist, and 403 with
    the cause ``NamespaceTerminating`` to one in a namespace being deleted; an update there is
    taken, or is a 404 once the Event is gone, and the creation that follows tells)."""


class EventUnavailableError(Exception):
    """The API server did not take the write."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Occurrence:
    """What an Event says, and how often it happened: ``count`` > 1 makes it a series."""

    regarding: dict[str, Any]
    """The object it is about: apiVersion, kind, namespace, name, uid."""
    type: str
    reason: str
    action: str
    note: str
    count: int
    first: datetime
    last: datetime


def regarding(body: resources.Body) -> dict[str, Any]:
    """The reference to ``body`` an Event carries."""
    metadata = body["metadata"]
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "namespace": metadata["namespace"],
        "name": metadata["name"],
        "uid": metadata["uid"],
    }


class EventsApi:
    """Creates events.k8s.io/v1 Events and updates their series: the one module that does."""

    def __init__(self, api: client.ApiClient, *, replica: str) -> None:
        self._events = client.EventsV1Api(api)
        self._replica = replica

    async def create(self, occurrence: Occurrence) -> str:
        """Write a new Event for ``occurrence``; its name."""
        about = occurrence.regarding
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            # Named as client-go names them: generateName is refused (it would end with a dot).
            "metadata": {
                "name": f"{about['name'][:236]}.{uuid.uuid4().hex[:16]}",
                "namespace": about["namespace"],
            },
            "eventTime": _micro_time(occurrence.first),
            "reportingController": REPORTING_CONTROLLER,
            "reportingInstance": self._replica,
            "action": occurrence.action,
            "reason": occurrence.reason,
            "type": occurrence.type,
            "note": _note(occurrence.note),
            "regarding": about,
        }
        if occurrence.count > 1:
            body["series"] = _series(occurrence)
        try:
            created = await self._events.create_namespaced_event(about["namespace"], body)
        except ApiException as error:
            if error.status == 404 or _namespace_terminating(error):
                raise NamespaceGoneError(f"namespace {about['namespace']}") from error
            raise EventUnavailableError(f"HTTP {error.status} {error.reason}") from error
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise EventUnavailableError(str(error) or type(error).__name__) from error
        return str(created.metadata.name)

    async def recount(self, name: str, occurrence: Occurrence) -> None:
        """Update Event ``name`` to ``occurrence``'s count and newest time (its note, as the
        rest of an Event, is immutable)."""
        patch = {"series": _series(occurrence)}
        namespace = occurrence.regarding["namespace"]
        try:
            await self._events.patch_namespaced_event(
                name, namespace, patch, _content_type=_MERGE_PATCH
            )
        except ApiException as error:
            if error.status == 404:
                raise EventGoneError(f"Event {namespace}/{name}") from error
            raise EventUnavailableError(f"HTTP {error.status} {error.reason}") from error
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise EventUnavailableError(str(error) or type(error).__name__) from error


def _namespace_terminating(error: ApiException) -> bool:
    """Whether the API server refused a write because its namespace is being deleted."""
    if error.status != 403 or not error.body:
        return False
    try:
        answer = json.loads(error.body)
        causes = answer.get("details", {}).get("causes", [])
        # A StatusCause carries its type under "reason" on the wire.
        return any(cause.get("reason") == "NamespaceTerminating" for cause in causes)
    except (ValueError, AttributeError, TypeError):
        return False


def _series(occurrence: Occurrence) -> dict[str, Any]:
    return {"count": occurrence.count, "lastObservedTime": _micro_time(occurrence.last)}


def _micro_time(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _note(message: str) -> str:
    if len(message.encode()) <= MAX_NOTE:
        return message
    return message.encode()[: MAX_NOTE - 3].decode(errors="ignore") + "..."
