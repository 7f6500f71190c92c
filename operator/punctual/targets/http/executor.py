"""The HTTP target's executor: the operator itself calls the target, once per slot.

The target learns which slot it serves from two headers, ``Idempotency-Key: <slot id>`` and
``X-Punctual-Scheduled-Time: <RFC 3339 UTC>``, so a call that arrives twice (a replica that
claimed a slot whose lock expired, a retry by a proxy) can be recognised.

Secrets travel in headers resolved from Kubernetes Secrets by another layer. Their values, and
any password in the URL, never appear in an outcome message, an exception or a log line: the
message of a run ends up in the object's status, readable by anyone who can read the object.
"""

import asyncio
import base64
import importlib.metadata
import logging
import operator
import re
import types
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import yarl

from punctual.aio import prepared
from punctual.contracts import records
from punctual.scheduling import timeline
from punctual.targets.http import connection as http_connection
from punctual.targets.http import connections as http_connections

logger = logging.getLogger(__name__)

IDEMPOTENCY_KEY = "Idempotency-Key"
SCHEDULED_TIME = "X-Punctual-Scheduled-Time"
RESERVED_HEADERS = frozenset(name.lower() for name in (IDEMPOTENCY_KEY, SCHEDULED_TIME))
CLIENT_HEADERS = frozenset(
    name.lower()
    for name in (
        # Where the request goes: the URL's host, the one --http-allowed-hosts checked. A gateway
        # shared by tenants routes by these, so another value would reach another backend.
        "Host",
        "Forwarded",
        "X-Forwarded-Host",
        # The message's framing and the connection: this client's, or the request is not the
        # one it parses answers for (a smuggled second request, an upgrade it never speaks).
        "Content-Length",
        "Transfer-Encoding",
        "TE",
        "Trailer",
        "Expect",
        "Connection",
        "Keep-Alive",
        "Proxy-Connection",
        "Upgrade",
    )
)
"""Headers only this client sets (or never sends), refused in a spec's or a Secret's headers."""
SCHEMES = frozenset({"http", "https"})

USER_AGENT = f"punctual/{importlib.metadata.version('punctual-operator')}"
REASON_LIMIT = 200
"""Characters of the server's reason phrase kept in the message (it lands in the status)."""
REDACTED = "***"
MESSAGE_CACHE = 32
"""Distinct (status, reason) answers whose message one executor remembers."""

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_LINE_BREAK = re.compile(r"[\r\n\x00]")
_CONTROL = re.compile(r"[\x01-\x08\x0a-\x1f\x7f]")
"""Control characters but horizontal tab: not in a header value (RFC 9110, field-value)."""
_URL_UNSAFE = re.compile(r"[\x00-\x20\x7f]")
# Any scheme (a rejected ftp:// URL is shown too); greedy up to the authority's last "@", so a
# stray unencoded "@" in a password cannot leave half of it behind.
_USERINFO = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^/?#\s]*@")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f]+")


class InvalidHeaderError(ValueError):
    """A header this client never sends. ``name`` is the header's, its value is never shown:
    it may be a secret."""

    def __init__(self, name: str, problem: str, *, what: str) -> None:
        super().__init__(f"{what} {name!r}: {problem}")
        self.name = name
        self.problem = problem

    @property
    def key(self) -> str:
        """The name as a field path's key: as written when it is a valid name, quoted if not."""
        return self.name if _TOKEN.fullmatch(self.name) else repr(self.name)


class HttpTargetError(Exception):
    """The call did not get an HTTP answer (connection refused, reset, TLS, ...).

    Its message is already redacted; the driver's exception is deliberately not chained, so
    tracebacks cannot carry secrets either.
    """


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class HttpRequest:
    """What ``spec.target.http`` asks for, minus the secret headers."""

    url: str
    method: str = "POST"
    headers: Mapping[str, str] = field(default_factory=dict)
    body: str | None = None
    success_codes: frozenset[int] | None = None
    """Statuses that count as success; ``None`` means any 2xx."""

    def __post_init__(self) -> None:
        if _URL_UNSAFE.search(self.url):
            # Parsers drop or encode them differently (yarl drops CR and LF): refused, not guessed.
            raise ValueError(
                f"target URL must not contain spaces or control characters, "
                f"got {redact_url(self.url)!r}"
            )
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme.lower() not in SCHEMES or not parts.hostname:
            raise ValueError(
                f"target URL must be an absolute http:// or https:// URL, "
                f"got {redact_url(self.url)!r}"
            )
        try:
            parts.port  # noqa: B018 (parsing the port is the check)
        except ValueError:
            raise ValueError(f"target URL has an invalid port: {redact_url(self.url)!r}") from None
        if not _TOKEN.fullmatch(self.method):
            raise ValueError(f"HTTP method {self.method!r} is not a valid method name")
        check_headers(self.headers, what="header")
        if self.success_codes is not None:
            if not self.success_codes:
                raise ValueError("success codes must name at least one status (or be omitted)")
            invalid = sorted(code for code in self.success_codes if not 100 <= code <= 599)
            if invalid:
                raise ValueError(f"success codes must be HTTP statuses (100-599), got {invalid}")
        # A private, read-only copy: the caller's dict may change after this.
        object.__setattr__(self, "method", self.method.upper())
        object.__setattr__(self, "headers", types.MappingProxyType(dict(self.headers)))

    def __repr__(self) -> str:
        return (
            f"HttpRequest(method={self.method!r}, url={redact_url(self.url)!r}, "
            f"headers={sorted(self.headers)!r}, success_codes={self.success_codes!r})"
        )

    def is_success(self, status: int) -> bool:
        if self.success_codes is None:
            return 200 <= status <= 299
        return status in self.success_codes


class HttpExecutor:
    """``protocols.Executor`` that makes one HTTP call per run, on the operator's shared
    ``HttpConnections`` (the caller's: this executor never closes them).

    The request is bytes built once (request line, headers, body); each slot adds its two
    headers, ahead of the slot when the loop prepares it.
    """

    def __init__(
        self,
        request: HttpRequest,
        *,
        connections: http_connections.HttpConnections,
        secret_headers: Mapping[str, str] | None = None,
    ) -> None:
        secret_headers = dict(secret_headers or {})
        check_headers(secret_headers, what="secret header")
        self._request = request
        self._connections = connections
        url = yarl.URL(request.url)
        self._origin = http_connections.Origin(
            scheme=url.scheme.lower(), host=url.raw_host or "", port=url.port or 0
        )
        self._display_url = redact_url(request.url)
        body = b"" if request.body is None else request.body.encode()
        self._head, self._body = _request_head(request, url, secret_headers, body=body), body
        self._secrets = _secret_texts(secret_headers.values(), request.url)
        # The (redacted) message of each status line the target answers, computed once.
        self._messages: dict[tuple[int, str], str] = {}
        self._prepared = prepared.Prepared(self._payload, key=operator.attrgetter("slot_id"))

    def __repr__(self) -> str:
        return f"HttpExecutor({self._request.method} {self._display_url})"

    def prepare(self, context: records.RunContext) -> None:
        """Build the request of an upcoming slot now, while the loop waits for it: at the slot,
        the run only sends it (``protocols.PreparesRuns``)."""
        self._prepared.prepare(context)

    def _payload(self, context: records.RunContext) -> bytes:
        slot_headers = (
            f"{IDEMPOTENCY_KEY}: {context.slot_id}\r\n"
            f"{SCHEDULED_TIME}: {timeline.rfc3339(context.scheduled_time)}\r\n\r\n"
        )
        return b"".join((self._head, slot_headers.encode(), self._body))

    async def __call__(self, context: records.RunContext) -> records.Outcome:
        payload = self._prepared.take(context)
        try:
            # A redirect is not followed (it could carry the secret headers to another host): a
            # 3xx is an answer like any other (add it to successCodes if it means success).
            # No timeout of its own: the loop's, around every run, cancels the call (the
            # CancelledError passes through untouched) and the connection is closed.
            answer = await self._connections.request(
                self._origin,
                payload,
                namespace=context.job.namespace,
                # The answer's body is drained at most until the run's own deadline.
                deadline=asyncio.get_running_loop().time() + context.timeout.total_seconds(),
                head_request=self._request.method == "HEAD",
            )
        except (OSError, http_connection.ProtocolError) as error:
            message = f"{self._request.method} {self._display_url}: {self._describe(error)}"
            logger.debug("slot %s: %s", context.slot_id, message)
            raise HttpTargetError(message) from None
        status, reason = answer.status, answer.reason
        message = self._message(status, reason)
        logger.debug(
            "slot %s: %s %s answered %s",
            context.slot_id,
            self._request.method,
            self._display_url,
            message,
        )
        return records.Outcome(succeeded=self._request.is_success(status), message=message)

    def _message(self, status: int, reason: str) -> str:
        key = (status, reason)
        message = self._messages.get(key)
        if message is None:
            message = _status_line(status, self._redact(reason))
            if len(self._messages) < MESSAGE_CACHE:  # a target could vary its reason phrase
                self._messages[key] = message
        return message

    def _describe(self, error: BaseException) -> str:
        text = self._redact(str(error))
        return f"{type(error).__name__}: {text}" if text else type(error).__name__

    def _redact(self, text: str) -> str:
        text = _USERINFO.sub(rf"\g<1>{REDACTED}@", text)
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text


def redact_url(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@``, safe to log and to show."""
    return _USERINFO.sub(rf"\g<1>{REDACTED}@", url)


def header_problem(name: str, value: str) -> str | None:
    """Why a header named ``name`` with ``value`` must not be sent, or ``None``; never quotes
    the value."""
    if not _TOKEN.fullmatch(name):
        return "not a valid HTTP header name"
    lowered = name.lower()
    if lowered in RESERVED_HEADERS:
        return "set by Punctual for every run and cannot be set"
    if lowered in CLIENT_HEADERS:
        return "set by the operator's HTTP client (from the URL, or for the connection) only"
    if _LINE_BREAK.search(value):
        return "has a line break or NUL in its value"
    if _CONTROL.search(value):
        return "has a control character in its value"
    return None


def check_headers(headers: Mapping[str, str], *, what: str) -> None:
    """Raises ``InvalidHeaderError`` for the first header ``header_problem`` refuses."""
    for name, value in headers.items():
        problem = header_problem(name, value)
        if problem is not None:
            raise InvalidHeaderError(name, problem, what=what)


def _request_head(
    request: HttpRequest, url: yarl.URL, secret_headers: Mapping[str, str], *, body: bytes
) -> bytes:
    """The request line and every header but the slot's two, as sent on every run.

    URL credentials become Basic authorization (unless an Authorization header is given);
    Content-Length is always this client's own.
    """
    defaults = {"Host": url.host_port_subcomponent or "", "User-Agent": USER_AGENT, "Accept": "*/*"}
    if url.user is not None:
        credentials = f"{url.user}:{url.password or ''}".encode()
        defaults["Authorization"] = "Basic " + base64.b64encode(credentials).decode()
    if body and "content-type" not in {name.lower() for name in request.headers}:
        defaults["Content-Type"] = "application/octet-stream"
    headers = _merge(defaults, request.headers, secret_headers)
    if body or request.method in _BODY_METHODS:
        headers["Content-Length"] = str(len(body))
    lines = [f"{request.method} {url.raw_path_qs or '/'} HTTP/1.1"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n").encode()


_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
"""Methods that announce an empty body (Content-Length: 0) rather than none."""


def _merge(*layers: Mapping[str, str]) -> dict[str, str]:
    """Later layers win, by case-insensitive name (HTTP header names are case-insensitive)."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        for name, value in layer.items():
            merged[name.lower()] = (name, value)
    return dict(merged.values())


def _secret_texts(values: Iterable[str], url: str) -> tuple[str, ...]:
    """Every string that must not be shown: secret header values and the URL's credentials."""
    texts = {value for value in values if value}
    parts = urllib.parse.urlsplit(url)
    if parts.password:
        texts |= {parts.password, urllib.parse.unquote(parts.password)}
    # Longest first: a secret containing another must be replaced whole.
    return tuple(sorted(texts, key=len, reverse=True))


def _status_line(status: int, reason: str) -> str:
    # The reason phrase is the server's text: already redacted, kept to one short line here.
    reason = _UNPRINTABLE.sub(" ", reason).strip()[:REASON_LIMIT]
    return f"HTTP {status} {reason}" if reason else f"HTTP {status}"
