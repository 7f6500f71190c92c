"""The HTTP target's connections: one call at a time per connection, kept alive and reused when
the answer's framing allows it, closed when it does not; a call ends at its status line.

Their server is ``scripted_server``'s.
"""

import asyncio

import pytest
from scripted_server import CLOSE, NO_CONTENT, REQUEST, TENANT, Serve, Server, held_burst

from punctual.targets.http import connection as http_connection
from punctual.targets.http.connection import Answer
from punctual.targets.http.connections import HttpConnections


async def calls(connections: HttpConnections, server: Server, count: int) -> list[Answer]:
    return [
        await connections.request(server.origin, REQUEST, namespace=TENANT) for _ in range(count)
    ]


class TestAConnectionIsKeptAlive:
    async def test_successive_calls_share_one_connection(
        self, serve: Serve, connections: HttpConnections
    ) -> None:
        server = await serve(Server([NO_CONTENT]))

        answers = await calls(connections, server, 3)

        assert answers == [Answer(204, "No Content")] * 3
        assert server.connections == 1

    @pytest.mark.parametrize(
        "answer",
        [
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX: 1\r\n\r\n",
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
        ],
        ids=["content-length", "chunked", "chunked-with-trailers", "http-1.0-keep-alive"],
    )
    async def test_after_a_body_it_drained(
        self, serve: Serve, connections: HttpConnections, answer: bytes
    ) -> None:
        server = await serve(Server([answer]))

        answers = await calls(connections, server, 2)

        assert [a.status for a in answers] == [200, 200]
        assert server.connections == 1

    async def test_a_call_ends_at_the_status_line_while_its_body_is_still_coming(
        self, serve: Serve, connections: HttpConnections
    ) -> None:
        server = await serve(
            Server(
                [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello"],
                later={0: b"world"},
                pause=0.2,
            )
        )
        loop = asyncio.get_running_loop()
        started = loop.time()

        answer = await connections.request(server.origin, REQUEST, namespace=TENANT)

        assert answer.status == 200
        assert loop.time() - started < 0.15
        await asyncio.sleep(0.3)  # the rest of the body came and was drained
        await connections.request(server.origin, REQUEST, namespace=TENANT)
        assert server.connections == 1

    async def test_an_interim_100_continue_is_skipped(
        self, serve: Serve, connections: HttpConnections
    ) -> None:
        server = await serve(Server([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n\r\n"]))

        assert await connections.request(server.origin, REQUEST, namespace=TENANT) == Answer(
            201, "Created"
        )

    async def test_a_head_answer_has_no_body_whatever_its_length_says(
        self, serve: Serve, connections: HttpConnections
    ) -> None:
        server = await serve(Server([b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"]))

        for _ in range(2):
            answer = await connections.request(
                server.origin, REQUEST, namespace=TENANT, head_request=True
            )
            assert answer.status == 200
        assert server.connections == 1


class TestAConnectionIsClosed:
    @pytest.mark.parametrize(
        "answer",
        [
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n\r\nthe body ends when the connection does",
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (http_connection.DRAIN_LIMIT + 1),
        ],
        ids=["connection-close", "http-1.0", "body-until-close", "body-too-large"],
    )
    async def test_when_the_answer_leaves_nothing_reusable(
        self, serve: Serve, connections: HttpConnections, answer: bytes
    ) -> None:
        server = await serve(Server([answer]))

        answers = await calls(connections, server, 2)

        assert [a.status for a in answers] == [200, 200]
        assert server.connections == 2

    async def test_when_a_chunked_body_runs_past_the_drain_limit(
        self, serve: Serve, connections: HttpConnections
    ) -> None:
        size = http_connection.DRAIN_LIMIT // 2 + 1
        chunk = b"%x\r\n%s\r\n" % (size, b"x" * size)
        server = await serve(
            Server(
                [
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + chunk * 3
                    + b"0\r\n\r\n"
                ]
            )
        )

        answers = await calls(connections, server, 2)

        assert [a.status for a in answers] == [200, 200]
        assert server.connections == 2

    async def test_when_its_call_is_cancelled(
        self, serve: Serve, connections: HttpConnections
    ) -> None:
        server = await serve(Server([NO_CONTENT]))
        server.hold = asyncio.Event()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await connections.request(server.origin, REQUEST, namespace=TENANT)
        server.hold.set()

        await connections.request(server.origin, REQUEST, namespace=TENANT)

        assert server.connections == 2

    async def test_not_when_its_call_is_cancelled_after_the_connection_took_another(
        self, serve: Serve
    ) -> None:
        # A run's timeout can cancel a call whose answer is in, before the call resumes. By then
        # its connection is idle again and a waiting call may have sent its request on it:
        # closing it there would abort that call, which is then sent again on a new connection,
        # and the target sees it twice.
        server = await serve(Server([NO_CONTENT]))
        server.hold = asyncio.Event()
        loop = asyncio.get_running_loop()
        async with HttpConnections(limit_per_origin=2) as connections:
            answered = [
                asyncio.create_task(connections.request(server.origin, REQUEST, namespace=TENANT))
                for _ in range(2)
            ]
            async with asyncio.timeout(10), server.arrived:
                await server.arrived.wait_for(lambda: server.in_flight == 2)
            waiting = asyncio.create_task(
                connections.request(server.origin, REQUEST, namespace=TENANT)
            )
            await asyncio.sleep(0)  # it waits for a place
            server.hold.set()
            await asyncio.sleep(0)  # the server writes both answers
            # A timer due now runs after the loop's next reads: both answers are in, both
            # connections idle, and neither call has resumed yet.
            loop.call_later(0, lambda: [call.cancel() for call in answered])
            answer = await waiting
            await asyncio.gather(*answered, return_exceptions=True)

        assert answer == Answer(204, "No Content")
        assert server.requests == 3
        assert server.connections == 2


class TestAConnectionTheServerClosed:
    async def test_while_idle_is_not_reused(
        self, serve: Serve, connections: HttpConnections
    ) -> None:
        server = await serve(Server([NO_CONTENT, CLOSE, NO_CONTENT]))

        answers = await calls(connections, server, 2)

        # The second request met the close: sent once more, on a new connection.
        assert answers == [Answer(204, "No Content")] * 2
        assert server.requests == 3
        assert server.connections == 2

    async def test_before_a_first_call_raises(
        self, serve: Serve, connections: HttpConnections
    ) -> None:
        server = await serve(Server([CLOSE]))

        with pytest.raises(http_connection.ConnectionClosedError):
            await connections.request(server.origin, REQUEST, namespace=TENANT)
        assert server.requests == 1

    async def test_in_the_middle_of_an_answer_is_not_sent_again(
        self, serve: Serve, connections: HttpConnections
    ) -> None:
        server = await serve(
            Server([NO_CONTENT, b"HTTP/1.1 200 OK\r\nContent-Le"], close_after={1})
        )
        await connections.request(server.origin, REQUEST, namespace=TENANT)

        with pytest.raises(http_connection.ConnectionClosedError):
            await connections.request(server.origin, REQUEST, namespace=TENANT)
        assert server.requests == 2


class TestAnAnswerThatIsNotHttpRaises:
    @pytest.mark.parametrize(
        "answer",
        [
            b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ],
        ids=["not-http", "status-of-four-digits", "conflicting-lengths", "bad-header", "bad-chunk"],
    )
    async def test_a_protocol_error_and_the_connection_is_closed(
        self, serve: Serve, connections: HttpConnections, answer: bytes
    ) -> None:
        server = await serve(Server([answer, NO_CONTENT]))

        try:
            await connections.request(server.origin, REQUEST, namespace=TENANT)
        except http_connection.ProtocolError:
            pass
        else:  # the bad chunk comes after the status line: the call had its answer
            assert answer.endswith(b"zz\r\n")
        await asyncio.sleep(0.01)

        assert await connections.request(server.origin, REQUEST, namespace=TENANT) == Answer(
            204, "No Content"
        )
        assert server.connections == 2


class TestCallsInFlightAreBounded:
    async def test_to_the_limit_per_origin(self, serve: Serve) -> None:
        server = await serve(Server([NO_CONTENT]))
        async with HttpConnections(limit_per_origin=3) as connections:
            answers = await held_burst(connections, server, namespaces=[TENANT] * 10, in_flight=3)

        assert len(answers) == 10
        assert server.most_in_flight == 3
        assert server.connections == 3

    async def test_a_call_cancelled_while_waiting_for_its_turn_takes_no_place(
        self, serve: Serve
    ) -> None:
        server = await serve(Server([NO_CONTENT]))
        server.hold = asyncio.Event()
        async with HttpConnections(limit_per_origin=1) as connections:
            first = asyncio.create_task(
                connections.request(server.origin, REQUEST, namespace=TENANT)
            )
            waiting = [
                asyncio.create_task(connections.request(server.origin, REQUEST, namespace=TENANT))
                for _ in range(3)
            ]
            await asyncio.sleep(0.05)
            waiting[1].cancel()
            server.hold.set()
            answers = await asyncio.gather(first, waiting[0], waiting[2])
            later = await connections.request(server.origin, REQUEST, namespace=TENANT)

        assert [answer.status for answer in [*answers, later]] == [204] * 4
        assert waiting[1].cancelled()
        assert server.most_in_flight == 1
