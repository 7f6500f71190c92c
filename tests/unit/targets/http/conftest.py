"""The HTTP target's tests run on both event loops: the operator runs on uvloop (the default),
whose transports are not the standard library's classes, and on asyncio (``--event-loop``)."""

import asyncio
from collections.abc import AsyncIterator, Mapping

import pytest
import uvloop
from pytest_asyncio.plugin import LoopFactory
from scripted_server import Serve, Server

from punctual.targets.http.connections import HttpConnections


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, LoopFactory]:
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    servers: list[tuple[Server, asyncio.Server]] = []

    async def start(server: Server) -> Server:
        listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        servers.append((server, listening))
        server.port = listening.sockets[0].getsockname()[1]
        return server

    yield start
    for server, listening in servers:
        listening.close()
        for handler in server.handlers:
            handler.cancel()
        await asyncio.gather(*server.handlers, return_exceptions=True)


@pytest.fixture
async def connections() -> AsyncIterator[HttpConnections]:
    async with HttpConnections() as opened:
        yield opened
