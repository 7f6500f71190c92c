"""The API server's refusals of an Event write, told apart: a namespace that is gone or being
deleted (no Event can ever be written there: the writer drops it), an Event that expired (a new
one is written), anything else (tried again later)."""

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.kube import events

AT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
OCCURRENCE = events.Occurrence(
    regarding={"namespace": "tenant-a", "name": "nightly", "uid": "uid-1"},
    type="Warning",
    reason="RunFailed",
    action="Run",
    note="HTTP 500",
    count=2,
    first=AT,
    last=AT,
)
TERMINATING = {
    "kind": "Status",
    "status": "Failure",
    "message": "events.events.k8s.io is forbidden: unable to create new content in namespace "
    "tenant-a because it is being terminated",
    "reason": "Forbidden",
    "details": {
        "causes": [
            {
                "reason": "NamespaceTerminating",
                "message": "namespace ns is being terminated",
                "field": "metadata.namespace",
            }
        ],
    },
    "code": 403,
}
QUOTA = {"kind": "Status", "reason": "Forbidden", "message": "exceeded quota", "code": 403}


class RefusingEvents:
    """The generated client's two calls, refused as the API server refused them."""

    def __init__(self, status: int, answer: dict[str, Any]) -> None:
        self._error = ApiException(status=status, reason="refused")
        self._error.body = json.dumps(answer).encode()

    async def create_namespaced_event(self, namespace: str, body: Any) -> Any:
        raise self._error

    async def patch_namespaced_event(self, *args: Any, **kwargs: Any) -> Any:
        raise self._error


def refused_with(status: int, answer: dict[str, Any]) -> events.EventsApi:
    api = events.EventsApi.__new__(events.EventsApi)
    api._events = RefusingEvents(status, answer)  # type: ignore[assignment]
    api._replica = "r1"
    return api


@pytest.mark.parametrize(
    ("status", "answer", "error"),
    [
        (
            404,
            {"reason": "NotFound", "message": 'namespaces "tenant-a" not found'},
            events.NamespaceGoneError,
        ),
        (403, TERMINATING, events.NamespaceGoneError),
        (403, QUOTA, events.EventUnavailableError),
        (500, {"reason": "InternalError"}, events.EventUnavailableError),
    ],
)
async def test_a_created_event_refused(
    status: int, answer: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        await refused_with(status, answer).create(OCCURRENCE)


@pytest.mark.parametrize(
    ("status", "answer", "error"),
    [
        (404, {"reason": "NotFound"}, events.EventGoneError),
        (403, QUOTA, events.EventUnavailableError),
        (503, {"reason": "ServiceUnavailable"}, events.EventUnavailableError),
    ],
)
async def test_an_updated_event_refused(
    status: int, answer: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        await refused_with(status, answer).recount("nightly.1", OCCURRENCE)
