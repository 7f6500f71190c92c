"""An origin's connections are shared fairly by namespace (``punctual.aio.places``): one
tenant's burst or hung target never makes another tenant's call wait."""

import asyncio

from scripted_server import NO_CONTENT, REQUEST, Serve, Server

from punctual.targets.http.connections import HttpConnections

A, B = "tenant-a", "tenant-b"


async def test_b_is_answered_while_as_calls_hold_every_connection_they_may(serve: Serve) -> None:
    server = await serve(Server([NO_CONTENT]))
    server.hold = asyncio.Event()
    async with HttpConnections(limit_per_origin=4, limit_per_namespace=2) as connections:
        a_calls = [
            asyncio.create_task(connections.request(server.origin, REQUEST, namespace=A))
            for _ in range(10)
        ]
        async with asyncio.timeout(10), server.arrived:
            await server.arrived.wait_for(lambda: server.in_flight >= 2)
        b_call = asyncio.create_task(connections.request(server.origin, REQUEST, namespace=B))
        async with asyncio.timeout(10), server.arrived:
            await server.arrived.wait_for(lambda: server.in_flight >= 3)

        in_flight_with_b = server.in_flight
        server.hold.set()
        answers = await asyncio.gather(b_call, *a_calls)

    assert in_flight_with_b == 3  # A's two, and B's, though eight more of A's wait
    assert [answer.status for answer in answers] == [204] * 11
    assert server.most_in_flight == 3
