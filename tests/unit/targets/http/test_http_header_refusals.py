"""Headers only the operator's HTTP client sets (where the request goes, its framing, the
connection) are refused: in a spec at admission and in status (``InvalidSpec``, naming the
header's field), in a Secret at the run (the run fails naming the Secret and its key, and
nothing is sent). A value is never shown: it may be a secret."""

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pytest

from punctual.api import models, spec_bounds, spec_parsing
from punctual.contracts import protocols, records
from punctual.controller import validation
from punctual.scheduling import slots
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets.http import connection as http_connection
from punctual.targets.http import connections as http_connections
from punctual.targets.http import executor as http_executor
from punctual.targets.http import wiring as http_wiring

JOB = slots.JobRef(namespace="tenant-a", name="report", uid="uid-1")
SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
SECRET = "s3cr3t-value"
URL = "http://report-svc.tenant-a.svc:8080/run"
CHECKED_AT = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("Host", "admin.internal", "HTTP client"),
        ("host", "admin.internal", "HTTP client"),
        ("HOST", "admin.internal", "HTTP client"),
        ("X-Forwarded-Host", "admin.internal", "HTTP client"),
        ("Forwarded", "host=admin.internal", "HTTP client"),
        ("Connection", "close", "HTTP client"),
        ("Keep-Alive", "timeout=5", "HTTP client"),
        ("Proxy-Connection", "keep-alive", "HTTP client"),
        ("Transfer-Encoding", "chunked", "HTTP client"),
        ("te", "trailers", "HTTP client"),
        ("Trailer", "X-Sum", "HTTP client"),
        ("Upgrade", "websocket", "HTTP client"),
        ("Content-Length", "0", "HTTP client"),
        ("Expect", "100-continue", "HTTP client"),
        ("Idempotency-Key", "mine", "set by Punctual"),
        ("X-Punctual-Scheduled-Time", "now", "set by Punctual"),
        ("Bad Name", "x", "not a valid HTTP header name"),
        ("X-Env:", "x", "not a valid HTTP header name"),
        ("X-Env\r\nHost", "x", "not a valid HTTP header name"),
        ("", "x", "not a valid HTTP header name"),
        ("X-Env", "a\r\nHost: admin.internal", "line break or NUL"),
        ("X-Env", "a\nb", "line break or NUL"),
        ("X-Env", "a\x00b", "line break or NUL"),
        ("X-Env", "a\x01b", "control character"),
        ("X-Env", "a\x1bb", "control character"),
        ("X-Env", "a\x7fb", "control character"),
    ],
)
def test_a_header_the_client_owns_or_cannot_send_is_refused(
    name: str, value: str, problem: str
) -> None:
    assert problem in (http_executor.header_problem(name, value) or "")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("X-Env", "prod"),
        ("Authorization", "Bearer token"),
        ("User-Agent", "reports/1.0"),
        ("Accept", "application/json"),
        ("Content-Type", "application/json"),
        ("X-Hosted-By", "reports"),
        ("X-Env", "tab\tinside"),
        ("X-Env", "naïve"),
        ("X-Env", ""),
    ],
)
def test_any_other_header_is_sent(name: str, value: str) -> None:
    assert http_executor.header_problem(name, value) is None


def spec(headers: Mapping[str, str]) -> dict[str, object]:
    return {"every": "1m", "target": {"http": {"url": URL, "headers": dict(headers)}}}


class TestASpecHeader:
    @pytest.mark.parametrize(
        ("headers", "field"),
        [
            ({"Host": "admin.internal"}, "spec.target.http.headers[Host]"),
            ({"X-Env": "prod", "connection": "close"}, "spec.target.http.headers[connection]"),
            ({"Transfer-Encoding": "chunked"}, "spec.target.http.headers[Transfer-Encoding]"),
            ({"Bad Name": "x"}, "spec.target.http.headers['Bad Name']"),
            ({"X-Env": "a\rb"}, "spec.target.http.headers[X-Env]"),
        ],
    )
    def test_is_refused_naming_its_field(self, headers: dict[str, str], field: str) -> None:
        with pytest.raises(InvalidSpecError) as refused:
            validation.check(
                spec(headers),
                uid="uid-1",
                hash_key="tenant-a/report",
                bounds=spec_bounds.DEFAULT_BOUNDS,
                now=CHECKED_AT,
            )

        assert refused.value.field == field

    def test_is_refused_without_showing_its_value(self) -> None:
        with pytest.raises(InvalidSpecError) as refused:
            validation.check(
                spec({"X-Env": f"{SECRET}\x01"}),
                uid="uid-1",
                hash_key="tenant-a/report",
                bounds=spec_bounds.DEFAULT_BOUNDS,
                now=CHECKED_AT,
            )

        assert SECRET not in str(refused.value)


class RecordedConnections:
    """Stands for ``HttpConnections``: records what would be sent, answers 204."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    async def request(
        self, origin: http_connections.Origin, payload: bytes, **_: object
    ) -> http_connection.Answer:
        self.sent.append(payload)
        return http_connection.Answer(204, "No Content")


class SecretsOf:
    """Stands for ``SecretReader``: the data of each Secret by name."""

    def __init__(self, data: Mapping[str, Mapping[str, str]]) -> None:
        self.data = dict(data)

    async def read(self, *, namespace: str, name: str) -> Mapping[str, str]:
        assert namespace == JOB.namespace
        return self.data[name]


def targets_with(secrets: SecretsOf, connections: RecordedConnections) -> http_wiring.HttpTargets:
    return http_wiring.HttpTargets(
        connections=connections,  # type: ignore[arg-type]
        secrets=secrets,  # type: ignore[arg-type]
    )


def wired(
    secrets: SecretsOf, connections: RecordedConnections, spec: models.ScheduledJobSpec
) -> protocols.Executor:
    return targets_with(secrets, connections).wire(JOB, spec).executor


def run_context() -> records.RunContext:
    return records.RunContext(
        job=JOB,
        slot=SLOT,
        slot_id=slots.slot_id(JOB, SLOT),
        scheduled_time=SLOT,
        timeout=timedelta(seconds=5),
    )


def target(*secret_names: str) -> models.ScheduledJobSpec:
    return spec_parsing.parse_spec(
        {
            "every": "1m",
            "target": {
                "http": {
                    "url": URL,
                    "headersFrom": [{"secretRef": {"name": name}} for name in secret_names],
                }
            },
        }
    )


class TestASecretHeader:
    @pytest.mark.parametrize(
        "key", ["Host", "host", "Connection", "Content-Length", "Upgrade", "X-Forwarded-Host"]
    )
    async def test_the_client_owns_fails_the_run_naming_the_secret_and_key_and_sends_nothing(
        self, key: str
    ) -> None:
        connections = RecordedConnections()
        secrets = SecretsOf({"api-token": {"Authorization": "Bearer x"}, "routing": {key: SECRET}})
        executor = wired(secrets, connections, target("api-token", "routing"))

        with pytest.raises(http_wiring.SecretHeaderRefusedError) as refused:
            await executor(run_context())

        assert f"Secret tenant-a/routing, key {key!r}" in str(refused.value)
        assert "nothing was sent" in str(refused.value)
        assert SECRET not in str(refused.value)
        assert connections.sent == []

    async def test_with_a_line_break_fails_the_run_without_showing_its_value(self) -> None:
        connections = RecordedConnections()
        secrets = SecretsOf({"api-token": {"Authorization": f"{SECRET}\r\nHost: admin"}})
        executor = wired(secrets, connections, target("api-token"))

        with pytest.raises(http_wiring.SecretHeaderRefusedError, match="line break") as refused:
            await executor(run_context())

        assert SECRET not in str(refused.value)
        assert connections.sent == []

    async def test_fixed_in_the_secret_is_sent_at_the_next_run(self) -> None:
        connections = RecordedConnections()
        secrets = SecretsOf({"routing": {"Host": "admin.internal"}})
        executor = wired(secrets, connections, target("routing"))
        with pytest.raises(http_wiring.SecretHeaderRefusedError):
            await executor(run_context())

        secrets.data["routing"] = {"X-Route": "reports"}
        outcome = await executor(run_context())

        assert outcome.succeeded
        assert len(connections.sent) == 1
        head = connections.sent[0].decode()
        assert "X-Route: reports\r\n" in head
        assert "Host: report-svc.tenant-a.svc:8080\r\n" in head
