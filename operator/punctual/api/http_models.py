"""The HTTP target's models (``spec.target.http``): the request the operator makes itself,
once per slot, and where its secret headers come from.

``punctual.targets.http`` sends the request; the limits on its size are
``punctual.api.spec_bounds``'.
"""

import enum
from typing import Annotated

import pydantic

from punctual.api import fields


class HttpMethod(enum.StrEnum):
    GET = "GET"
    HEAD = "HEAD"
    POST = "POST"
    PUT = "PUT"
    PATCH = "PATCH"
    DELETE = "DELETE"
    OPTIONS = "OPTIONS"


class SecretReference(fields.ApiModel):
    """A Secret in the ScheduledJob's own namespace."""

    name: str = pydantic.Field(
        min_length=1,
        max_length=253,
        description="Name of a Secret in the same namespace as the ScheduledJob.",
    )


class HeadersSource(fields.ApiModel):
    """Where to read extra request headers from."""

    secret_ref: SecretReference = pydantic.Field(
        description="A Secret whose keys are header names and whose values are the header "
        "values. Keeps credentials such as an Authorization header out of the ScheduledJob.",
    )


class HttpTarget(fields.ApiModel):
    """An HTTP request the operator makes itself, once per slot."""

    url: str = pydantic.Field(
        min_length=1,
        max_length=2048,
        pattern=r"^https?://\S+$",
        description="The http:// or https:// URL to call, e.g. "
        "http://report-svc.reports.svc:8080/run.",
    )
    method: HttpMethod = pydantic.Field(
        default=HttpMethod.POST,
        description="The HTTP method: GET, HEAD, POST (default), PUT, PATCH, DELETE or OPTIONS.",
    )
    headers: dict[str, Annotated[str, pydantic.Field(max_length=8192)]] = pydantic.Field(
        default_factory=dict,
        max_length=64,
        description="Extra request headers, name to value (at most 64). Every request also "
        "carries Idempotency-Key (the slot id) and X-Punctual-Scheduled-Time. Refused: Host, "
        "Forwarded, X-Forwarded-Host, and the framing and connection headers (Content-Length, "
        "Transfer-Encoding, TE, Trailer, Expect, Connection, Keep-Alive, Proxy-Connection, "
        "Upgrade), any case, here and in headersFrom.",
    )
    headers_from: tuple[HeadersSource, ...] = pydantic.Field(
        default_factory=tuple,
        max_length=16,
        description="Secrets to read extra request headers from, applied after headers (at most "
        "16). Use these for credentials such as an Authorization header.",
    )
    body: str | None = pydantic.Field(
        default=None,
        max_length=65536,
        description="The request body, sent as given (at most 64 KiB). Unset: no body.",
    )
    success_codes: (
        tuple[Annotated[fields.WholeNumber, pydantic.Field(ge=100, le=599)], ...] | None
    ) = pydantic.Field(
        default=None,
        min_length=1,
        max_length=64,
        json_schema_extra={"x-kubernetes-list-type": "set"},
        description="The HTTP status codes that count as success, e.g. [200, 204]. Unset: "
        "any 2xx status. Any other status, a connection error or the timeout fails the run.",
    )
