"""A tenant's broker is outside input: its URL is checked like an HTTP target's before anything
is sent, and a broker that never answers fails the push within its timeouts, never stalling the
loop."""

import asyncio
from collections.abc import AsyncIterator

import pytest

from punctual.targets import addresses
from punctual.targets.queue import brokers, pushes

PUSH = pushes.Push(
    message_id="id-1",
    commands=(pushes.Command("list", "LPUSH", "celery", ("message",)),),
    description="a message",
)


async def push(url: str, guard: addresses.AddressGuard | None = None) -> bool:
    clients = brokers.Brokers(guard=guard or addresses.AddressGuard())
    try:
        return await clients.push(namespace="ns", url=url, slot_id="ns/job/uid/1", push=PUSH)
    finally:
        await clients.close()


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://10.0.0.1/", "must start with redis://, rediss://, redis\\+sentinel://"),
        ("redis://169.254.169.254:6379/0", "link-local"),
        ("redis://[::ffff:169.254.169.254]/0", "link-local"),
        ("redis://:secret@[fd00:ec2::254]:6379", "a cloud metadata endpoint"),
        ("redis://10.0.0.1/0?ssl_keyfile=/etc/key", "no query options"),
        ("redis:///0", "names no host"),
        ("redis+sentinel://:secret@10.0.0.1,169.254.169.254/mymaster", "the Sentinel 169.254"),
        ("redis+sentinel://[fd00:ec2::254]:26379/mymaster", "a cloud metadata endpoint"),
        ("redis+sentinel://:secret@10.0.0.1:26379/", "ends with the service's name"),
        ("redis+sentinel://10.0.0.1/m?db=1&ssl_keyfile=/etc/key", "no query options but"),
        ("rediss+sentinel://10.0.0.1:99999/m", "not a Sentinel address"),
    ],
    ids=[
        "http",
        "link-local",
        "link-local in IPv6",
        "metadata endpoint",
        "query options",
        "no host",
        "a Sentinel link-local",
        "a Sentinel at a metadata endpoint",
        "a Sentinel URL without its service",
        "a Sentinel URL with options besides db",
        "a Sentinel at no port",
    ],
)
async def test_a_broker_url_that_must_not_be_reached_is_refused(url: str, problem: str) -> None:
    with pytest.raises(brokers.BrokerRefusedError, match=problem) as refused:
        await push(url)
    assert "secret" not in str(refused.value)


async def test_a_broker_outside_the_allowlist_is_refused() -> None:
    guard = addresses.AddressGuard(allowed=addresses.HostAllowlist.parse(["*.svc"]))
    with pytest.raises(brokers.BrokerRefusedError, match="--http-allowed-hosts"):
        await push("redis://10.0.0.1:6379/0", guard)


async def test_a_sentinel_outside_the_allowlist_is_refused() -> None:
    guard = addresses.AddressGuard(allowed=addresses.HostAllowlist.parse(["10.0.0.1"]))
    with pytest.raises(
        brokers.BrokerRefusedError,
        match=r"the Sentinel 10\.0\.0\.2:26379 is not a host this operator may reach",
    ):
        await push("redis+sentinel://10.0.0.1,10.0.0.2/mymaster?db=2", guard)


async def test_the_api_server_is_refused_as_a_broker() -> None:
    guard = addresses.AddressGuard.default(api_server=[("127.0.0.1", 6443)], allowed=None)
    with pytest.raises(brokers.BrokerRefusedError, match="the Kubernetes API server"):
        await push("redis://127.0.0.1:6443/0", guard)


@pytest.fixture
async def silent_server() -> AsyncIterator[int]:
    """Accepts connections, reads, and never answers."""

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            pass
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_a_broker_that_never_answers_fails_the_push_and_the_loop_goes_on(
    silent_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(brokers, "REPLY_TIMEOUT", 0.2)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        with pytest.raises(brokers.BrokerUnavailableError, match=r"no answer within 0\.2s"):
            await push(f"redis://127.0.0.1:{silent_server}/0")
    finally:
        ticker.cancel()
    assert ticks >= 5
