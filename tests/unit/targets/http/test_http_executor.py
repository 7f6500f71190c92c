"""The HTTP executor against a real HTTP server on 127.0.0.1: what it sends, what it reports,
and that secrets never show."""

import asyncio
import logging
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import aiohttp
import aiohttp.test_utils
import aiohttp.web
import pytest

from punctual.aio import prepared
from punctual.contracts import protocols, records
from punctual.scheduling import slots, timeline
from punctual.targets.http import connection as http_connection
from punctual.targets.http import connections as http_connections
from punctual.targets.http import executor as http_executor

JOB = slots.JobRef(namespace="reports", name="nightly-report", uid="0f6c2a9e-uid")
SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
SLOT_ID = slots.slot_id(JOB, SLOT)
SECRET = "s3cr3t-token-value"
PASSWORD = "hunter2-password"


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Target:
    """A local HTTP server answering with ``status`` (and ``reason``) and recording requests."""

    server: aiohttp.test_utils.TestServer
    status: int = 204
    reason: str | None = None
    body: bytes = b""
    set_cookie: str | None = None
    hold: bool = False
    """Keep requests waiting until ``released`` is set (the fixture sets it at the end)."""
    released: asyncio.Event = field(default_factory=asyncio.Event)
    requests: list[Received] = field(default_factory=list)

    def url(self, path: str = "/run") -> str:
        return str(self.server.make_url(path))

    async def handle(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        self.requests.append(
            Received(
                method=request.method,
                path=request.path,
                headers=dict(request.headers),
                body=await request.read(),
            )
        )
        if self.hold:
            await self.released.wait()
        headers = {"Set-Cookie": self.set_cookie} if self.set_cookie else None
        return aiohttp.web.Response(
            status=self.status, reason=self.reason, body=self.body, headers=headers
        )


@pytest.fixture
async def target() -> AsyncIterator[Target]:
    app = aiohttp.web.Application()
    server = aiohttp.test_utils.TestServer(app, host="127.0.0.1")
    served = Target(server=server)
    app.router.add_route("*", "/{tail:.*}", served.handle)
    await server.start_server()
    yield served
    served.released.set()
    await server.close()


@pytest.fixture
async def connections() -> AsyncIterator[http_connections.HttpConnections]:
    async with http_connections.HttpConnections() as opened:
        yield opened


def context(
    *,
    slot: datetime = SLOT,
    scheduled_time: datetime | None = None,
    timeout: timedelta = timedelta(seconds=5),
) -> records.RunContext:
    return records.RunContext(
        job=JOB,
        slot=slot,
        slot_id=slots.slot_id(JOB, slot),
        scheduled_time=scheduled_time or slot,
        timeout=timeout,
    )


def closed_port_url() -> str:
    # A port nobody listens on: bound, never listening, closed again before the call.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://user:{PASSWORD}@127.0.0.1:{port}/run"


class TestTheTargetLearnsWhichSlotItServes:
    async def test_the_slot_id_is_the_idempotency_key(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )

        await executor(context())

        assert target.requests[0].headers["Idempotency-Key"] == SLOT_ID

    async def test_the_scheduled_time_is_sent_in_rfc_3339_utc(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )

        await executor(context(scheduled_time=SLOT + timedelta(milliseconds=12_345)))

        assert target.requests[0].headers["X-Punctual-Scheduled-Time"] == (
            "2026-11-30T01:30:12.345Z"
        )

    async def test_a_whole_second_has_no_fraction(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )

        await executor(context())

        assert target.requests[0].headers["X-Punctual-Scheduled-Time"] == "2026-11-30T01:30:00Z"

    def test_a_time_in_another_zone_is_converted_to_utc(self) -> None:
        copenhagen = datetime.fromisoformat("2026-11-30T02:30:00.250+01:00")

        assert timeline.rfc3339(copenhagen) == "2026-11-30T01:30:00.250Z"


class TestNothingCarriesOverFromOneRunToTheNext:
    async def test_a_cookie_a_target_sets_is_never_sent_again(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        target.set_cookie = "session=abc"
        url = target.url().replace("127.0.0.1", "localhost")
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=url), connections=connections
        )
        await executor(context())
        await executor(context(slot=SLOT + timedelta(minutes=1)))

        assert [request.headers.get("Cookie") for request in target.requests] == [None, None]


class TestHeadersAreBuiltBeforeTheSlot:
    def test_the_executor_prepares_runs(
        self, connections: http_connections.HttpConnections
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url="http://target/run"), connections=connections
        )

        assert isinstance(executor, protocols.PreparesRuns)

    async def test_a_prepared_slot_sends_the_headers_built_ahead(
        self,
        target: Target,
        connections: http_connections.HttpConnections,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )
        executor.prepare(context())

        def not_at_the_slot(instant: datetime) -> str:
            raise AssertionError("the headers were built again at the slot")

        monkeypatch.setattr(timeline, "rfc3339", not_at_the_slot)
        await executor(context())

        assert target.requests[0].headers["Idempotency-Key"] == SLOT_ID
        assert target.requests[0].headers["X-Punctual-Scheduled-Time"] == "2026-11-30T01:30:00Z"

    async def test_only_the_newest_prepared_slots_are_kept(
        self,
        target: Target,
        connections: http_connections.HttpConnections,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )
        slots_ = [SLOT + timedelta(minutes=minutes) for minutes in range(prepared.KEPT + 1)]
        for slot in slots_:
            executor.prepare(context(slot=slot))
        built: list[datetime] = []
        rfc3339 = timeline.rfc3339

        def counted(instant: datetime) -> str:
            built.append(instant)
            return rfc3339(instant)

        monkeypatch.setattr(timeline, "rfc3339", counted)
        for slot in slots_:
            await executor(context(slot=slot))

        assert built == [SLOT]  # the oldest was let go: built at its slot; the others ahead
        assert [request.headers["Idempotency-Key"] for request in target.requests] == [
            slots.slot_id(JOB, slot) for slot in slots_
        ]


class TestTheRequestIsTheOneConfigured:
    async def test_method_body_and_custom_headers_are_sent(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        request = http_executor.HttpRequest(
            url=target.url("/reports/run"),
            method="put",
            headers={"X-Env": "prod", "Content-Type": "application/json"},
            body='{"kind": "nightly"}',
        )
        executor = http_executor.HttpExecutor(request, connections=connections)

        await executor(context())

        [received] = target.requests
        assert received.method == "PUT"
        assert received.path == "/reports/run"
        assert received.headers["X-Env"] == "prod"
        assert received.headers["Content-Type"] == "application/json"
        assert received.body == b'{"kind": "nightly"}'

    async def test_secret_headers_are_sent(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()),
            connections=connections,
            secret_headers={"Authorization": f"Bearer {SECRET}"},
        )

        await executor(context())

        assert target.requests[0].headers["Authorization"] == f"Bearer {SECRET}"

    async def test_a_secret_header_replaces_a_plain_one_of_the_same_name(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url(), headers={"x-token": "placeholder"}),
            connections=connections,
            secret_headers={"X-Token": SECRET},
        )

        await executor(context())

        assert target.requests[0].headers["X-Token"] == SECRET
        assert "placeholder" not in target.requests[0].headers.values()

    async def test_the_default_method_is_post(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        await http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )(context())

        assert target.requests[0].method == "POST"


class TestTheStatusDecidesTheOutcome:
    @pytest.mark.parametrize("status", [200, 201, 204, 299])
    async def test_any_2xx_succeeds_by_default(
        self, target: Target, connections: http_connections.HttpConnections, status: int
    ) -> None:
        target.status = status
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )

        outcome = await executor(context())

        assert outcome.succeeded

    async def test_the_message_is_the_status_line(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )

        outcome = await executor(context())

        assert outcome.message == "HTTP 204 No Content"

    async def test_a_server_error_fails_the_run(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        target.status = 503
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )

        outcome = await executor(context())

        assert outcome == records.Outcome(succeeded=False, message="HTTP 503 Service Unavailable")

    async def test_success_codes_narrow_what_succeeds(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        request = http_executor.HttpRequest(url=target.url(), success_codes=frozenset({202}))
        executor = http_executor.HttpExecutor(request, connections=connections)

        target.status = 200
        assert not (await executor(context())).succeeded
        target.status = 202
        assert (await executor(context())).succeeded

    async def test_success_codes_can_include_a_non_2xx_status(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        target.status = 409  # e.g. "this slot was already handled"
        request = http_executor.HttpRequest(url=target.url(), success_codes=frozenset({200, 409}))

        outcome = await http_executor.HttpExecutor(request, connections=connections)(context())

        assert outcome.succeeded

    async def test_a_redirect_is_not_followed(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        target.status = 307
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )

        outcome = await executor(context())

        assert not outcome.succeeded
        assert outcome.message.startswith("HTTP 307")
        assert len(target.requests) == 1

    async def test_a_large_body_is_drained_without_trouble(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        target.status = 200
        target.body = b"x" * (3 * http_connection.DRAIN_LIMIT)
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )

        assert (await executor(context())).succeeded
        assert (await executor(context())).succeeded


class TestAnUnreachableTargetRaises:
    async def test_a_refused_connection_raises_a_described_error(
        self, connections: http_connections.HttpConnections
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=closed_port_url()), connections=connections
        )

        with pytest.raises(
            http_executor.HttpTargetError, match=r"POST http://\*\*\*@127\.0\.0\.1:\d+/run"
        ):
            await executor(context())

    async def test_the_error_does_not_chain_the_driver_exception(
        self, connections: http_connections.HttpConnections
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=closed_port_url()), connections=connections
        )

        with pytest.raises(http_executor.HttpTargetError) as raised:
            await executor(context())

        assert raised.value.__cause__ is None
        assert raised.value.__suppress_context__


class TestASlowTargetIsCutOff:
    async def test_the_loops_timeout_cancels_the_call(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        target.hold = True
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()), connections=connections
        )

        # What the job loop does: its own timeout around the executor, which must see the
        # cancellation through (the loop then records TimedOut).
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await executor(context(timeout=timedelta(seconds=0.2)))


class TestSecretsNeverShow:
    async def test_a_secret_echoed_in_the_reason_is_redacted(
        self,
        target: Target,
        connections: http_connections.HttpConnections,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        caplog.set_level(logging.DEBUG)
        target.status = 401
        target.reason = f"token Bearer {SECRET} rejected"
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()),
            connections=connections,
            secret_headers={"Authorization": f"Bearer {SECRET}"},
        )

        outcome = await executor(context())

        assert not outcome.succeeded
        assert outcome.message == "HTTP 401 token *** rejected"
        assert SECRET not in caplog.text

    async def test_any_secret_header_is_redacted_not_only_authorization(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        target.status = 401
        target.reason = f"bad token {SECRET}"
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()),
            connections=connections,
            secret_headers={"X-Api-Key": SECRET},
        )

        outcome = await executor(context())

        assert SECRET not in outcome.message

    async def test_url_credentials_are_not_in_errors_or_logs(
        self, connections: http_connections.HttpConnections, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.DEBUG)
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=closed_port_url()),
            connections=connections,
            secret_headers={"Authorization": f"Bearer {SECRET}"},
        )

        with pytest.raises(http_executor.HttpTargetError) as raised:
            await executor(context())

        for text in (str(raised.value), caplog.text, repr(executor)):
            assert PASSWORD not in text
            assert SECRET not in text
            assert "user:" not in text

    async def test_url_credentials_are_redacted_in_successful_calls_logs(
        self,
        target: Target,
        connections: http_connections.HttpConnections,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        caplog.set_level(logging.DEBUG)
        url = target.url().replace("http://", f"http://user:{PASSWORD}@")
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=url), connections=connections
        )

        outcome = await executor(context())

        assert outcome.succeeded
        assert target.requests[0].headers["Authorization"].startswith("Basic ")
        assert caplog.text  # the call was logged...
        assert PASSWORD not in caplog.text  # ...without the password

    def test_the_request_repr_hides_url_credentials(self) -> None:
        request = http_executor.HttpRequest(url=f"https://user:{PASSWORD}@example.com/run")

        assert PASSWORD not in repr(request)
        assert "https://***@example.com/run" in repr(request)

    def test_a_bad_secret_header_value_is_named_but_not_shown(self) -> None:
        with pytest.raises(ValueError, match="X-Api-Key") as raised:
            http_executor.HttpExecutor(
                http_executor.HttpRequest(url="http://example.com/"),
                connections=None,  # type: ignore[arg-type]  # never used: construction fails first
                secret_headers={"X-Api-Key": f"{SECRET}\r\nX-Injected: 1"},
            )

        assert SECRET not in str(raised.value)


class TestOnlyValidRequestsAreAccepted:
    @pytest.mark.parametrize(
        "url",
        [
            "ftp://example.com/run",
            "file:///etc/passwd",
            "redis://example.com:6379",
            "example.com/run",
            "http:///no-host",
        ],
    )
    def test_only_absolute_http_and_https_urls(self, url: str) -> None:
        with pytest.raises(ValueError, match="http:// or https://"):
            http_executor.HttpRequest(url=url)

    def test_a_rejected_url_is_shown_redacted(self) -> None:
        with pytest.raises(ValueError, match="http:// or https://") as raised:
            http_executor.HttpRequest(url=f"ftp://user:{PASSWORD}@example.com/")

        assert PASSWORD not in str(raised.value)

    def test_a_malformed_port_is_refused_without_the_password(self) -> None:
        with pytest.raises(ValueError, match="invalid port") as raised:
            http_executor.HttpRequest(url=f"http://user:{PASSWORD}@example.com:http/run")

        assert PASSWORD not in str(raised.value)

    @pytest.mark.parametrize(
        "url",
        [
            "http://example.com/a\r\nX-Injected: 1",
            "http://exam\nple.com/",
            "http://example.com/a b",
        ],
        ids=["crlf-in-path", "lf-in-host", "space"],
    )
    def test_a_url_with_line_breaks_or_spaces_is_refused_not_repaired(self, url: str) -> None:
        with pytest.raises(ValueError, match="spaces or control characters"):
            http_executor.HttpRequest(url=url)

    @pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\x00b"])
    def test_a_header_value_with_a_line_break_or_nul_is_refused(self, value: str) -> None:
        with pytest.raises(ValueError, match="line break or NUL"):
            http_executor.HttpRequest(url="http://example.com/", headers={"X-Env": value})

    @pytest.mark.parametrize("value", ["token\r\nX-Injected: 1", "token\x00"])
    async def test_so_is_a_secret_header_value_and_the_secret_is_not_shown(
        self, value: str
    ) -> None:
        async with http_connections.HttpConnections() as connections:
            with pytest.raises(ValueError, match="line break or NUL") as raised:
                http_executor.HttpExecutor(
                    http_executor.HttpRequest(url="http://example.com/"),
                    connections=connections,
                    secret_headers={"Authorization": value},
                )

        assert "token" not in str(raised.value)

    def test_https_is_accepted(self) -> None:
        assert (
            http_executor.HttpRequest(url="https://example.com/run").url
            == "https://example.com/run"
        )

    @pytest.mark.parametrize("name", ["Idempotency-Key", "x-punctual-scheduled-time"])
    def test_the_slot_headers_cannot_be_overridden(self, name: str) -> None:
        with pytest.raises(ValueError, match="set by Punctual"):
            http_executor.HttpRequest(url="http://example.com/", headers={name: "mine"})

    def test_a_header_name_must_be_a_token(self) -> None:
        with pytest.raises(ValueError, match="not a valid HTTP header name"):
            http_executor.HttpRequest(url="http://example.com/", headers={"Bad Name": "x"})

    def test_a_method_must_be_a_token(self) -> None:
        with pytest.raises(ValueError, match="not a valid method name"):
            http_executor.HttpRequest(url="http://example.com/", method="GET /evil")

    @pytest.mark.parametrize("codes", [frozenset(), frozenset({200, 600})])
    def test_success_codes_must_be_statuses(self, codes: frozenset[int]) -> None:
        with pytest.raises(ValueError, match="success codes"):
            http_executor.HttpRequest(url="http://example.com/", success_codes=codes)

    def test_the_headers_are_a_private_copy(self) -> None:
        headers = {"X-Env": "prod"}
        request = http_executor.HttpRequest(url="http://example.com/", headers=headers)

        headers["X-Env"] = "changed"

        assert request.headers == {"X-Env": "prod"}


class TestPerRunWorkIsRememberedNotStale:
    """The executor keeps the message of each answer: a new answer is never served from what
    it kept."""

    async def test_each_answer_gets_its_own_redacted_message(
        self, target: Target, connections: http_connections.HttpConnections
    ) -> None:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=target.url()),
            connections=connections,
            secret_headers={"X-Api-Key": SECRET},
        )
        messages = []
        for status, reason in ((204, "No Content"), (204, "No Content"), (503, f"down {SECRET}")):
            target.status, target.reason = status, reason
            messages.append((await executor(context())).message)

        assert messages == ["HTTP 204 No Content", "HTTP 204 No Content", "HTTP 503 down ***"]
