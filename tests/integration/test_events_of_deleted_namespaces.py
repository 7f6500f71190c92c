"""An Event in a namespace that is being deleted, or is gone, is refused by the real API server
in a way the Event writer tells apart (``kube.events.NamespaceGoneError``), so it drops such
Events instead of trying them again once a minute for the life of the replica."""

import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

import pytest
from kubernetes_asyncio import config

from localcluster import LocalCluster
from punctual.kube import events

HOLD = "punctual.dev/test-hold"
DEADLINE = 60.0


def occurrence_in(namespace: str) -> events.Occurrence:
    now = datetime.now(UTC)
    return events.Occurrence(
        regarding={
            "apiVersion": "punctual.dev/v1",
            "kind": "ScheduledJob",
            "namespace": namespace,
            "name": "nightly",
            "uid": "00000000-0000-0000-0000-000000000001",
        },
        type="Warning",
        reason="RunFailed",
        action="Run",
        note="HTTP 500",
        count=1,
        first=now,
        last=now,
    )


@pytest.fixture
async def events_api(cluster: LocalCluster) -> AsyncIterator[events.EventsApi]:
    api = await config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        yield events.EventsApi(api, replica="test")
    finally:
        await api.close()


def wait_for(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {DEADLINE:.0f}s"
        time.sleep(0.1)


async def test_a_namespace_being_deleted_then_gone_refuses_events_as_gone(
    cluster: LocalCluster, namespace: str, events_api: events.EventsApi
) -> None:
    assert await events_api.create(occurrence_in(namespace))  # written while it lives
    # A ConfigMap with a finalizer of the test's holds the namespace in Terminating.
    cluster.api.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "hold", "finalizers": [HOLD]},
        },
    )
    cluster.kubectl("delete", "namespace", namespace, "--wait=false")
    wait_for(
        "the namespace terminating",
        lambda: (
            cluster.api.get(f"/api/v1/namespaces/{namespace}")["status"]["phase"] == "Terminating"
        ),
    )

    with pytest.raises(events.NamespaceGoneError):
        await events_api.create(occurrence_in(namespace))

    cluster.kubectl(
        "patch",
        "configmap",
        "hold",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
    )
    wait_for(
        "the namespace gone", lambda: not cluster.api.exists(f"/api/v1/namespaces/{namespace}")
    )

    with pytest.raises(events.NamespaceGoneError):
        await events_api.create(occurrence_in(namespace))


async def test_any_other_refusal_is_not_taken_for_a_gone_namespace(
    namespace: str, events_api: events.EventsApi
) -> None:
    living = occurrence_in(namespace)
    invalid = dataclasses.replace(living, regarding={**living.regarding, "name": "Not_A_Name"})

    with pytest.raises(events.EventUnavailableError, match="422"):
        await events_api.create(invalid)  # its Event's name is refused as invalid
