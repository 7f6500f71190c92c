"""The replica's wiring without a cluster: one Redis client for the slot lock, the run leases
and the queue's stream claims, closed once after all three; settings refused as ``punctual run``
refuses them (exit status 2, a line naming the option); the membership Leases on an API
client of their own."""

import argparse
import contextlib
from typing import Any

import prometheus_client
import pytest

from punctual import metrics
from punctual.cli import run as run_command
from punctual.kube import client as kube_client
from punctual.kube import membership
from punctual.locks import redis as redis_lock
from punctual.locks import redis_leases
from punctual.redis_io import connections
from punctual.replica import parts
from punctual.replica import settings as replica_settings
from punctual.targets import kinds
from punctual.targets.queue import stream as queue_stream

URL = "redis://127.0.0.1:1/0"  # never connected to


class Client:
    """The part of ``redis.asyncio.Redis`` built on before any command: counts its closes."""

    def __init__(self) -> None:
        self.closed = 0

    def register_script(self, text: str) -> Any:
        return object()

    async def aclose(self) -> None:
        self.closed += 1


def meters() -> metrics.Metrics:
    return metrics.Metrics(prometheus_client.CollectorRegistry(), target_kinds=kinds.NAMES)


@pytest.fixture
def client() -> Client:
    return Client()


@pytest.fixture
def connection(client: Client) -> connections.Connection:
    return connections.Connection(client, "redis://test", None)  # type: ignore[arg-type]


async def test_the_lock_and_the_run_leases_share_one_client_closed_once(
    monkeypatch: pytest.MonkeyPatch, client: Client, connection: connections.Connection
) -> None:
    pools: list[int] = []

    def connect(url: str, *, max_connections: int) -> connections.Connection:
        pools.append(max_connections)
        return connection

    monkeypatch.setattr(connections, "connect", connect)
    settings = replica_settings.ReplicaSettings(
        replica_id="r1", lock_backend="redis", redis_url=URL, metrics_port=0
    )
    async with contextlib.AsyncExitStack() as stack:
        shared = parts.connect_redis(settings, stack)
        parts.open_lock(settings, stack, meters=meters(), redis_connection=shared)
        assert parts.open_durable_runs(settings, stack, redis_connection=shared) is not None
        assert shared is connection

    assert pools == [connections.SHARED_MAX_CONNECTIONS]
    assert client.closed == 1


async def test_the_users_of_a_shared_client_leave_it_open(
    client: Client, connection: connections.Connection
) -> None:
    users = [
        redis_lock.RedisLock(connection.client, owns_client=False),
        redis_leases.RedisRunLeases(connection, owns_client=False),
        queue_stream.StreamClaims(connection, owns_client=False),
    ]
    for user in users:
        await user.close()

    assert client.closed == 0


async def test_a_replica_built_in_parts_without_redis_opens_none() -> None:
    settings = replica_settings.ReplicaSettings(
        replica_id="r1", lock_backend="memory", metrics_port=0
    )
    async with contextlib.AsyncExitStack() as stack:
        assert parts.connect_redis(settings, stack) is None
        assert parts.open_durable_runs(settings, stack, redis_connection=None) is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--lock-backend", "redis"], "--redis-url: required with --lock-backend redis"),
        (["--status-writes-per-second", "0"], "--status-writes-per-second: must be at least 1"),
        (["--status-interval", "soon"], "--status-interval"),
    ],
)
def test_the_command_line_refuses_what_no_replica_runs_with(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    message: str,
) -> None:
    monkeypatch.delenv("PUNCTUAL_REDIS_URL", raising=False)
    parser = argparse.ArgumentParser()
    run_command.register(parser.add_subparsers())

    status = run_command.run(parser.parse_args(["run", *options]))

    assert status == 2
    assert capsys.readouterr().out.startswith(f"punctual run: {message}")


class ApiClient:
    """The part of the Kubernetes API client a Membership is built on: counts its closes."""

    def __init__(self) -> None:
        self.closed = False

    def sanitize_for_serialization(self, body: Any) -> Any:
        return body

    async def close(self) -> None:
        self.closed = True


async def test_the_membership_leases_go_through_an_api_client_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened: list[ApiClient] = []

    async def connect() -> ApiClient:
        opened.append(ApiClient())
        return opened[-1]

    async def discover(self: membership.Membership) -> None:
        pass

    monkeypatch.setattr(kube_client, "connect", connect)
    monkeypatch.setattr(membership.Membership, "discover", discover)
    monkeypatch.setattr(membership.Membership, "leave", discover)
    settings = replica_settings.ReplicaSettings(replica_id="r1", sharding=True, metrics_port=0)
    async with contextlib.AsyncExitStack() as stack:
        shared = await parts.connect_kubernetes(stack)
        await parts.discover_members(settings, stack)
        assert len(opened) == 2
        assert opened[1] is not shared

    assert all(api.closed for api in opened)
