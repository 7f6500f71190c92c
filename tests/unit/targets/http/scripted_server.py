"""A raw local HTTP server for the client's tests: it answers each request with the next of its
scripted answers (bytes, written as they are), so that every framing, and every way a server can
misbehave, can be played."""

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from punctual.targets.http import connection
from punctual.targets.http.connections import HttpConnections, Origin

REQUEST = b"POST /run HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
NO_CONTENT = b"HTTP/1.1 204 No Content\r\n\r\n"
TENANT = "tenant-a"
CLOSE = b""
"""A scripted answer of nothing: the server closes the connection instead."""


@dataclass
class Server:
    """Answers the n-th request it reads (on any connection) with ``answers[n]`` (the last one
    again after them), then closes the connection if the answer is ``CLOSE`` or n is in
    ``close_after``; ``later[n]`` bytes follow after ``pause``."""

    answers: list[bytes]
    later: dict[int, bytes] = field(default_factory=dict)
    close_after: set[int] = field(default_factory=set)
    pause: float = 0.05
    connections: int = 0
    requests: int = 0
    port: int = 0
    in_flight: int = 0
    most_in_flight: int = 0
    hold: asyncio.Event | None = None
    arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    """Notified whenever a call arrives (``in_flight`` grows)."""

    handlers: set["asyncio.Task[object]"] = field(default_factory=set)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        self.connections += 1
        try:
            while True:
                try:
                    await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                index = self.requests
                self.requests += 1
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
                async with self.arrived:
                    self.arrived.notify_all()
                if self.hold is not None:
                    await self.hold.wait()
                self.in_flight -= 1
                answer = self.answers[min(index, len(self.answers) - 1)]
                if answer == CLOSE:
                    return
                writer.write(answer)
                if index in self.later:
                    await writer.drain()
                    await asyncio.sleep(self.pause)
                    writer.write(self.later[index])
                await writer.drain()
                if index in self.close_after:
                    return
        finally:
            writer.close()

    @property
    def origin(self) -> Origin:
        return Origin(scheme="http", host="127.0.0.1", port=self.port)


Serve = Callable[[Server], Awaitable[Server]]


async def held_burst(
    connections: HttpConnections,
    server: Server,
    *,
    namespaces: Sequence[str],
    in_flight: int,
    hold_for: float = 0.05,
) -> list[connection.Answer]:
    """One call per entry of ``namespaces``, all at once, held at the server until ``in_flight``
    of them are there and ``hold_for`` seconds more before it answers any: as many as the client
    lets through are in flight together, however slow the machine is to get them there."""
    server.hold = asyncio.Event()
    calling = [
        asyncio.create_task(connections.request(server.origin, REQUEST, namespace=namespace))
        for namespace in namespaces
    ]
    async with asyncio.timeout(10), server.arrived:
        await server.arrived.wait_for(lambda: server.in_flight >= in_flight)
    await asyncio.sleep(hold_for)
    server.hold.set()
    return await asyncio.gather(*calling)
