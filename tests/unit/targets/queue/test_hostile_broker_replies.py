"""A tenant's broker may answer anything: a reply larger than the operator reads, a reply of
the wrong type, or a Redis Cluster's redirections. Each fails the push with a message saying
what the broker did; a huge reply is refused from its header, its connection dropped, so it
never costs the operator more than a bounded read."""

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest

from punctual.targets import addresses
from punctual.targets.queue import brokers, pushes

PUSH = pushes.Push(
    message_id="id-1",
    commands=(pushes.Command("list", "LPUSH", "celery", ("message",)),),
    description="a message",
)
GIB = 1 << 30


@dataclass
class FakeBroker:
    """A server on 127.0.0.1 speaking just enough RESP: ``OK`` to the driver's handshake,
    ``answer`` to the script (``EVALSHA``), then ``stream`` (if any) until the client hangs
    up; ``sent`` counts what it wrote."""

    answer: bytes
    stream: bytes = b""
    port: int = 0
    sent: int = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while command := await read_command(reader):
                if command[0].upper() != b"EVALSHA":
                    writer.write(b"+OK\r\n")
                    continue
                writer.write(self.answer)
                self.sent += len(self.answer)
                while self.stream:
                    writer.write(self.stream)
                    await writer.drain()
                    self.sent += len(self.stream)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


async def read_command(reader: asyncio.StreamReader) -> list[bytes]:
    header = await reader.readline()
    if not header:
        return []
    command = []
    for _ in range(int(header[1:])):
        length = int((await reader.readline())[1:])
        command.append((await reader.readexactly(length + 2))[:-2])
    return command


@pytest.fixture
async def broker() -> AsyncIterator[Callable[..., FakeBroker]]:
    servers: list[asyncio.Server] = []

    async def start(answer: bytes, stream: bytes = b"") -> FakeBroker:
        fake = FakeBroker(answer, stream)
        server = await asyncio.start_server(fake.serve, "127.0.0.1", 0)
        servers.append(server)
        fake.port = server.sockets[0].getsockname()[1]
        return fake

    yield start  # type: ignore[misc]
    for server in servers:
        server.close()


async def push_to(fake: FakeBroker) -> bool:
    return await push_to_url(f"redis://127.0.0.1:{fake.port}/0")


async def push_to_url(url: str, guard: addresses.AddressGuard | None = None) -> bool:
    clients = brokers.Brokers(guard=guard or addresses.AddressGuard())
    try:
        return await clients.push(namespace="ns", url=url, slot_id="ns/job/uid/1", push=PUSH)
    finally:
        await clients.close()


class TestAHugeReply:
    async def test_of_a_bulk_string_fails_the_push_from_its_header(
        self, broker: Callable[..., "asyncio.Future[FakeBroker]"]
    ) -> None:
        fake = await broker(f"${GIB}\r\n".encode(), stream=b"x" * 65536)
        with pytest.raises(brokers.BrokerUnavailableError, match="a reply larger than 65536 bytes"):
            await push_to(fake)
        assert fake.sent < 16 << 20  # what the sockets' buffers took, not the gigabyte

    async def test_of_an_array_of_many_elements_fails_the_push(
        self, broker: Callable[..., "asyncio.Future[FakeBroker]"]
    ) -> None:
        fake = await broker(b"*100000000\r\n", stream=b":1\r\n" * 16384)
        with pytest.raises(brokers.BrokerUnavailableError, match="a reply larger than"):
            await push_to(fake)

    async def test_of_one_endless_line_fails_the_push(
        self, broker: Callable[..., "asyncio.Future[FakeBroker]"]
    ) -> None:
        fake = await broker(b"+", stream=b"y" * 65536)
        with pytest.raises(brokers.BrokerUnavailableError, match="longer than the reader's limit"):
            await push_to(fake)

    async def test_that_fits_in_many_small_parts_still_counts_in_all(
        self, broker: Callable[..., "asyncio.Future[FakeBroker]"]
    ) -> None:
        fake = await broker(b"*900\r\n", stream=b"$40\r\n" + b"z" * 40 + b"\r\n")
        with pytest.raises(brokers.BrokerUnavailableError, match="a reply larger than"):
            await push_to(fake)


class TestAReplyOfTheWrongType:
    @pytest.mark.parametrize(
        "answer", [b"+OK\r\n", b"$5\r\nhello\r\n", b"*1\r\n:1\r\n", b":7\r\n"], ids=repr
    )
    async def test_fails_the_push_as_not_a_redis_that_ran_the_script(
        self, broker: Callable[..., "asyncio.Future[FakeBroker]"], answer: bytes
    ) -> None:
        fake = await broker(answer)
        with pytest.raises(brokers.BrokerUnavailableError, match="an unexpected reply to the push"):
            await push_to(fake)

    @pytest.mark.parametrize(
        ("answer", "problem"),
        [
            (b"$many\r\n", "a malformed reply header"),
            (b":" + b"9" * 5000 + b"\r\n", "a malformed reply"),
            (b":seven\r\n", "a malformed reply"),
        ],
        ids=["bulk length", "huge integer", "not an integer"],
    )
    async def test_a_malformed_reply_fails_the_push(
        self, broker: Callable[..., "asyncio.Future[FakeBroker]"], answer: bytes, problem: str
    ) -> None:
        fake = await broker(answer)
        with pytest.raises(brokers.BrokerUnavailableError, match=problem):
            await push_to(fake)


class TestARedisCluster:
    @pytest.mark.parametrize(
        "answer",
        [
            b"-CROSSSLOT Keys in request don't hash to the same slot\r\n",
            b"-MOVED 3999 10.0.0.2:6379\r\n",
            b"-ASK 3999 10.0.0.2:6379\r\n",
            b"-CLUSTERDOWN The cluster is down\r\n",
        ],
        ids=lambda answer: answer.split()[0][1:].decode(),
    )
    async def test_fails_the_push_saying_the_broker_is_a_cluster(
        self, broker: Callable[..., "asyncio.Future[FakeBroker]"], answer: bytes
    ) -> None:
        fake = await broker(answer)
        with pytest.raises(brokers.BrokerIsClusterError, match="is a Redis Cluster node"):
            await push_to(fake)


def bulk(text: str) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(text), text.encode())


def masters_reply(ip: str, port: int) -> bytes:
    """``SENTINEL MASTERS`` naming ``mymaster`` at ``ip``:``port``, up and a primary: a RESP3
    map, as a Sentinel answers the driver (which says ``HELLO 3``)."""
    fields = {"name": "mymaster", "ip": ip, "port": str(port), "flags": "master"}
    fields["num-other-sentinels"] = "2"
    pairs = b"".join(bulk(key) + bulk(value) for key, value in fields.items())
    return b"*1\r\n%%%d\r\n" % len(fields) + pairs


async def serve_sentinel(
    answer: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Just enough of a Sentinel: ``answer`` to ``SENTINEL ...``, OK to the rest."""
    try:
        while command := await read_command(reader):
            writer.write(answer if command[0].upper() == b"SENTINEL" else b"+OK\r\n")
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def push_through_sentinel(answer: bytes, guard: addresses.AddressGuard) -> bool:
    """A push to ``mymaster`` behind one Sentinel that answers ``SENTINEL MASTERS`` so."""
    server = await asyncio.start_server(
        lambda reader, writer: serve_sentinel(answer, reader, writer), "127.0.0.1", 0
    )
    port = server.sockets[0].getsockname()[1]
    try:
        return await push_to_url(f"redis+sentinel://127.0.0.1:{port}/mymaster", guard)
    finally:
        server.close()


class TestASentinel:
    @pytest.mark.parametrize(
        ("primary", "problem"),
        [
            ("169.254.169.254", "169.254.169.254 is link-local"),
            ("127.0.0.1", "127.0.0.1 is the Kubernetes API server"),
        ],
        ids=["a link-local primary", "the API server as the primary"],
    )
    async def test_naming_a_primary_that_must_not_be_reached_fails_the_push(
        self, primary: str, problem: str
    ) -> None:
        guard = addresses.AddressGuard.default(api_server=[("127.0.0.1", 6443)], allowed=None)
        with pytest.raises(
            brokers.BrokerRefusedError, match=f"the primary its Sentinels name, {problem}"
        ):
            await push_through_sentinel(masters_reply(primary, 6443), guard)

    async def test_a_huge_reply_of_a_sentinel_fails_the_push(self) -> None:
        answer = b"$%d\r\n" % GIB + b"x" * 65536
        with pytest.raises(brokers.BrokerUnavailableError, match="a reply larger than"):
            await push_through_sentinel(answer, addresses.AddressGuard())
