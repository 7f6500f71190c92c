"""A hostile HTTP target gets nothing from the client but a clear error: every answer is parsed by
llhttp, every read after the head is bounded in bytes and time, and no connection ever carries
two namespaces' requests.

The table below is the differential: each answer, as a server writes it in one piece, what the
client does with it, and (proven by the last test) that the client is never more lenient than
llhttp itself fed the same bytes.
"""

import asyncio
import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

import httptools
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from scripted_server import NO_CONTENT, REQUEST, TENANT, Serve, Server, held_burst

from punctual.targets.http import connection as http_connection
from punctual.targets.http import connections as http_connections
from punctual.targets.http.connections import HttpConnections

OK = b"HTTP/1.1 200 OK\r\n"
CHUNKED = OK + b"Transfer-Encoding: chunked\r\n\r\n"


@dataclass(frozen=True)
class Refused:
    """The call fails with a protocol error saying this."""

    reason: str


@dataclass(frozen=True)
class Answered:
    """The call gets this status; the connection is reused for the next call, or not."""

    status: int
    reused: bool


@dataclass(frozen=True)
class Unanswered:
    """No answer before the run's timeout, which cancels the call and closes the connection."""


Outcome = Refused | Answered | Unanswered

HOSTILE: dict[str, tuple[bytes, Outcome]] = {
    # Chunk sizes llhttp refuses (int(size, 16) accepted them: the negative one froze the loop).
    "negative-chunk-size": (CHUNKED + b"-FFFFFFFFFFFFFFFF\r\n", Refused("chunk size")),
    "signed-chunk-size": (CHUNKED + b"+5\r\nhello\r\n0\r\n\r\n", Refused("chunk size")),
    "0x-chunk-size": (CHUNKED + b"0x5\r\nhello\r\n0\r\n\r\n", Refused("chunk size")),
    "underscore-chunk-size": (CHUNKED + b"0_5\r\nhello\r\n0\r\n\r\n", Refused("chunk size")),
    "spaced-chunk-size": (CHUNKED + b" 5 \r\nhello\r\n0\r\n\r\n", Refused("chunk size")),
    "no-crlf-after-chunk": (CHUNKED + b"5\r\nhelloXX0\r\n\r\n", Refused("after chunk data")),
    # Framing headers, smuggling's raw material.
    "space-before-colon-length": (OK + b"Content-Length : 5\r\n\r\nhello", Refused("header")),
    "space-before-colon-encoding": (
        OK + b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
        Refused("header"),
    ),
    "length-and-chunked": (
        OK + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        Refused("Content-Length"),
    ),
    "gzip-and-length": (
        OK + b"Transfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello",
        Refused("Content-Length"),
    ),
    "chunked-gzip-and-length": (
        OK + b"Transfer-Encoding: chunked, gzip\r\nContent-Length: 5\r\n\r\nhello",
        Refused("Content-Length"),
    ),
    "gzip-last": (  # not chunked last: the body ends when the connection does (RFC 9112 6.3)
        OK + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\nhello",
        Answered(200, reused=False),
    ),
    "duplicate-equal-lengths": (
        OK + b"Content-Length: 0\r\nContent-Length: 0\r\n\r\n",
        Refused("Duplicate Content-Length"),
    ),
    "conflicting-lengths": (
        OK + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\n",
        Refused("Duplicate Content-Length"),
    ),
    "negative-length": (OK + b"Content-Length: -1\r\n\r\n", Refused("Content-Length")),
    "signed-length": (OK + b"Content-Length: +5\r\n\r\nhello", Refused("Content-Length")),
    "5000-digit-length": (
        OK + b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n",
        Refused("Content-Length overflow"),
    ),
    # Lines and characters.
    "obs-fold": (OK + b"X-A: a\r\n b\r\nContent-Length: 0\r\n\r\n", Refused("whitespace")),
    "nul-in-header": (OK + b"X-A: a\x00b\r\nContent-Length: 0\r\n\r\n", Refused("header value")),
    "bare-lf": (b"HTTP/1.1 200 OK\nContent-Length: 0\n\n", Refused("CR")),
    "lf-in-reason": (b"HTTP/1.1 200 O\nK\r\nContent-Length: 0\r\n\r\n", Refused("CR")),
    "space-before-header-name": (OK + b" X: 1\r\nContent-Length: 0\r\n\r\n", Refused("space")),
    # Not HTTP/1.x.
    "http-2": (b"HTTP/2 200\r\n\r\n", Refused("Expected dot")),
    "http-2.0": (b"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n", Refused("HTTP/2.0")),
    "tls-record": (b"\x16\x03\x01\x02\x00hello\r\n\r\n", Refused("Expected HTTP/")),
    "ssh-banner": (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", Refused("Expected HTTP/")),
    "status-of-four-digits": (b"HTTP/1.1 2000 OK\r\n\r\n", Refused("status")),
    "unsolicited-101": (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        Refused("no upgrade was asked for"),
    ),
    # Heads too large, or never ending.
    "1-mb-head": (OK + b"X-A: " + b"a" * (1 << 20) + b"\r\n\r\n", Refused("head longer")),
    "100000-headers": (OK + b"X: 1\r\n" * 100_000 + b"\r\n", Refused("head longer")),
    "endless-interim-answers": (b"HTTP/1.1 100 Continue\r\n\r\n" * 5000, Refused("head longer")),
    "100-continue-then-silence": (b"HTTP/1.1 100 Continue\r\n\r\n", Unanswered()),
    "half-a-head-then-silence": (OK + b"Content-Le", Unanswered()),
    # Answers out of turn.
    "stray-second-answer": (
        OK + b"Content-Length: 0\r\n\r\n" + OK + b"Content-Length: 0\r\n\r\n",
        Answered(200, reused=False),
    ),
    "data-after-the-body": (OK + b"Content-Length: 0\r\n\r\nsurprise", Answered(200, reused=False)),
    # What is well-formed is answered, and reused when its framing allows.
    "100-continue-then-answer": (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        Answered(204, reused=True),
    ),
    "repeated-chunked": (
        OK + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        Answered(200, reused=True),
    ),
    "chunk-extensions-and-trailers": (
        CHUNKED + b"5;a=b\r\nhello\r\n0\r\nX: 1\r\n\r\n",
        Answered(200, reused=True),
    ),
    "no-reason-phrase": (b"HTTP/1.1 204\r\n\r\n", Answered(204, reused=True)),
    "body-until-close": (OK + b"\r\nhello", Answered(200, reused=False)),
}

CALL_TIMEOUT = 0.3
"""The run's timeout in these tests: long enough for a local answer, short for a test."""


async def call(connections: HttpConnections, server: Server) -> Outcome:
    try:
        async with asyncio.timeout(CALL_TIMEOUT):
            answer = await connections.request(server.origin, REQUEST, namespace=TENANT)
    except http_connection.ProtocolError as error:
        return Refused(str(error))
    except TimeoutError:
        return Unanswered()
    await asyncio.sleep(0.01)  # what follows the answer, if anything, arrives
    before = server.connections
    await connections.request(server.origin, REQUEST, namespace=TENANT)
    return Answered(answer.status, reused=server.connections == before)


def llhttp_refuses(answer: bytes) -> bool:
    """Whether llhttp, strict as it comes, refuses ``answer`` or finds no final answer in it."""

    class Finals:
        def __init__(self) -> None:
            self.parser = httptools.HttpResponseParser(self)
            self.count = 0

        def on_message_complete(self) -> None:
            self.count += self.parser.get_status_code() >= 200

    finals = Finals()
    try:
        finals.parser.feed_data(answer)
    except (httptools.HttpParserError, httptools.HttpParserUpgrade):
        return True
    return finals.count == 0


class TestAHostileAnswer:
    @pytest.mark.parametrize(("answer", "expected"), HOSTILE.values(), ids=HOSTILE.keys())
    async def test_gets_what_the_table_says(
        self, serve: Serve, connections: HttpConnections, answer: bytes, expected: Outcome
    ) -> None:
        server = await serve(Server([answer, NO_CONTENT]))

        outcome = await call(connections, server)

        if isinstance(expected, Refused):
            assert isinstance(outcome, Refused)
            assert outcome.reason.startswith(http_connection.INVALID)
            assert expected.reason in outcome.reason
        else:
            assert outcome == expected
        assert await connections.request(server.origin, REQUEST, namespace=TENANT)

    @pytest.mark.parametrize(("answer", "expected"), HOSTILE.values(), ids=HOSTILE.keys())
    def test_is_never_taken_where_llhttp_refuses_it(self, answer: bytes, expected: Outcome) -> None:
        taken = isinstance(expected, Answered) and expected.reused
        if llhttp_refuses(answer):
            assert not taken
        else:  # and what llhttp takes, the client takes too (but HTTP/2.0, which is not 1.x)
            assert isinstance(expected, Answered) or expected == Refused("HTTP/2.0")


class TestWhatFollowsTheHeadIsBounded:
    async def test_a_body_that_never_ends_is_cut_at_the_runs_deadline(self, serve: Serve) -> None:
        server = await serve(Server([CHUNKED + b"200000\r\n" + b"x" * 1000, NO_CONTENT]))
        loop = asyncio.get_running_loop()
        async with HttpConnections() as connections:
            answer = await connections.request(
                server.origin, REQUEST, namespace=TENANT, deadline=loop.time() + 0.1
            )
            assert answer.status == 200
            assert connections.open_connections == 1  # draining

            await asyncio.sleep(0.2)

            assert connections.open_connections == 0

    @pytest.mark.parametrize(
        "flood",
        [
            b"1\r\nx\r\n" * 300_000,
            b"0\r\n" + b"X-Trailer: 1\r\n" * 100_000,
            b"1;" + b"e" * (2 << 20),
        ],
        ids=["tiny-chunks", "trailers", "a-chunk-extension"],
    )
    async def test_so_is_a_flood_past_the_drain_limit(self, serve: Serve, flood: bytes) -> None:
        server = await serve(Server([CHUNKED + flood, NO_CONTENT]))
        async with HttpConnections() as connections:
            answer = await connections.request(server.origin, REQUEST, namespace=TENANT)
            assert answer.status == 200

            await asyncio.sleep(0.3)

            assert connections.open_connections == 0

    async def test_a_draining_connection_keeps_its_place_until_it_is_done(
        self, serve: Serve
    ) -> None:
        server = await serve(Server([CHUNKED + b"5\r\nhello\r\n", NO_CONTENT], pause=0.2))
        server.later = {0: b"0\r\n\r\n"}
        async with HttpConnections(limit_per_origin=1) as connections:
            await connections.request(server.origin, REQUEST, namespace=TENANT)
            loop = asyncio.get_running_loop()
            started = loop.time()

            await connections.request(server.origin, REQUEST, namespace=TENANT)

            assert loop.time() - started >= 0.1  # waited for the drain, then reused it
            assert server.connections == 1

    async def test_closing_the_client_ends_draining_connections_too(self, serve: Serve) -> None:
        server = await serve(Server([CHUNKED + b"200000\r\n"]))
        connections = HttpConnections()
        await connections.request(server.origin, REQUEST, namespace=TENANT)
        assert connections.open_connections == 1

        connections.close()
        await asyncio.sleep(0.01)

        assert connections.open_connections == 0


class TestIdleConnections:
    async def test_are_swept_from_the_oldest_and_their_pool_dropped(self, serve: Serve) -> None:
        server = await serve(Server([NO_CONTENT]))
        async with HttpConnections(idle_timeout=0.1) as connections:
            await held_burst(
                connections, server, namespaces=[TENANT] * 30, in_flight=30, hold_for=0.02
            )
            assert connections.open_connections == 30

            await asyncio.sleep(0.2)  # and no call since

            assert connections.open_connections == 0
            assert not connections._pools  # nothing left behind per origin


class TestNamespaces:
    async def test_never_share_a_connection(
        self, serve: Serve, connections: HttpConnections
    ) -> None:
        server = await serve(Server([NO_CONTENT]))

        for namespace in ("tenant-a", "tenant-b", "tenant-a", "tenant-b"):
            await connections.request(server.origin, REQUEST, namespace=namespace)

        assert server.connections == 2

    async def test_share_the_limit_of_calls_to_one_origin(self, serve: Serve) -> None:
        server = await serve(Server([NO_CONTENT]))
        async with HttpConnections(limit_per_origin=2) as connections:
            await held_burst(
                connections, server, namespaces=[f"tenant-{n}" for n in range(6)], in_flight=2
            )

        assert server.most_in_flight == 2

    async def test_a_stray_answer_on_one_never_answers_the_other(
        self, serve: Serve, connections: HttpConnections
    ) -> None:
        stray = OK + b"Content-Length: 0\r\n\r\n"
        server = await serve(Server([NO_CONTENT + stray, NO_CONTENT, NO_CONTENT]))

        first = await connections.request(server.origin, REQUEST, namespace="tenant-a")
        other = await connections.request(server.origin, REQUEST, namespace="tenant-b")
        again = await connections.request(server.origin, REQUEST, namespace="tenant-a")

        assert [first.status, other.status, again.status] == [204, 204, 204]
        assert server.connections == 3  # tenant-a's first connection was not trusted again


class TestAddresses:
    async def test_a_name_resolving_to_a_refused_address_is_never_connected_to(
        self, serve: Serve
    ) -> None:
        server = await serve(Server([NO_CONTENT]))
        origin = http_connections.Origin(scheme="http", host="localhost", port=server.port)

        def refuse(address: str, port: int) -> str | None:
            return "refused here" if ipaddress.ip_address(address).is_loopback else None

        async with HttpConnections(refuse=refuse) as connections:
            with pytest.raises(http_connections.AddressRefusedError, match="refused here"):
                await connections.request(origin, REQUEST, namespace=TENANT)

        assert server.connections == 0


def self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A certificate for ``name`` only, signed by its own key: (certificate, key) files."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / f"{name}.crt", directory / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


class TestTls:
    @pytest.mark.parametrize(
        ("trusted", "expected"),
        [(False, "certificate verify failed"), (True, "mismatch")],
        ids=["self-signed", "wrong-name"],
    )
    async def test_a_certificate_that_does_not_verify_is_a_connection_error(
        self, tmp_path: Path, trusted: bool, expected: str
    ) -> None:
        cert, key = self_signed(tmp_path, "other.example")
        serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        serving.load_cert_chain(cert, key)

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.close()

        listening = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=serving)
        port = listening.sockets[0].getsockname()[1]
        client = ssl.create_default_context(cafile=cert if trusted else None)
        origin = http_connections.Origin(scheme="https", host="127.0.0.1", port=port)
        try:
            async with HttpConnections(tls=client) as connections:
                with pytest.raises(ssl.SSLCertVerificationError, match=expected):
                    await connections.request(origin, REQUEST, namespace=TENANT)
        finally:
            listening.close()
            await listening.wait_closed()
