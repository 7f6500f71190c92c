"""What every model of the ScheduledJob API is built from: the base model and the field types.

Python names are snake_case, wire names camelCase (``max_catch_up`` is ``maxCatchUp``). Every
model is frozen and forbids unknown fields (``ApiModel``). There are no floats: durations are
Go-style strings (``Duration``: ``10s``, ``1h30m``), measurements whole milliseconds
(``WholeNumber``), instants RFC 3339 (``Timestamp``).

The spec's models are in ``punctual.api.models`` and the ``*_models`` modules of its parts, the
status's in ``punctual.api.status_models``.
"""

from datetime import timedelta
from typing import Annotated

import pydantic
from pydantic import alias_generators

from punctual.scheduling import durations, timeline
from punctual.scheduling.errors import InvalidSpecError

DURATION_PATTERN = r"^([0-9]+(ms|h|m|s))+$"
"""Whole numbers with units h, m, s or ms: the grammar of ``punctual.scheduling.durations``.

Written with ``[0-9]`` rather than ``\\d``: the API server's regular expressions (Go RE2) and
Python's disagree on what ``\\d`` matches.
"""
_SIGNED_DURATION_PATTERN = r"^-?([0-9]+(ms|h|m|s))+$"
MAX_DURATION_LENGTH = 32
"""Bounds the cost the API server estimates for the CEL rules that parse durations."""
_LONGEST_GO_DURATION = timedelta(microseconds=(2**63 - 1) // 1000)
"""CEL parses durations with Go's ``time.ParseDuration``, which stops at 2^63 - 1 ns."""

_DURATION_EXAMPLES = "such as 250ms, 10s, 5m or 1h30m"


def _positive_duration(text: str) -> str:
    """Accept exactly what the CRD accepts: the pattern, and a positive value CEL can parse."""
    value = durations.parse(text, field="")
    if value > _LONGEST_GO_DURATION:
        longest = durations.format(_LONGEST_GO_DURATION)
        raise InvalidSpecError("", f"{text!r} is too large (at most {longest})")
    return text


Duration = Annotated[
    str,
    pydantic.Field(
        max_length=MAX_DURATION_LENGTH,
        json_schema_extra={
            "pattern": DURATION_PATTERN,
            "x-kubernetes-validations": [
                {
                    # Only what Go can parse reaches duration(): the pattern reports the rest,
                    # without a "type conversion error" beside it. The optional sign lets "-5s"
                    # through to say what is wrong with it.
                    "rule": f"!self.matches('{_SIGNED_DURATION_PATTERN}') || "
                    "duration(self) > duration('0s')",
                    "message": f"must be a positive duration, {_DURATION_EXAMPLES}",
                }
            ],
        },
    ),
    pydantic.AfterValidator(_positive_duration),
]
"""A positive Go-style duration string (``250ms``, ``10s``, ``1h30m``).

The pattern travels in the JSON schema only; in Python ``durations.parse`` checks the same
grammar and explains what is wrong, where a pattern mismatch could only say "does not match".
"""

FreeFormObject = Annotated[
    dict[str, pydantic.JsonValue],
    pydantic.WithJsonSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
]
"""An object the API server stores as given (the shape belongs to someone else)."""

WholeNumber = Annotated[int, pydantic.Strict()]
"""An integer that refuses ``1.0``, ``"1"`` and ``True``: the API has no floats."""


Timestamp = Annotated[
    pydantic.AwareDatetime,
    pydantic.PlainSerializer(timeline.rfc3339, return_type=str, when_used="json"),
]
"""An RFC 3339 instant (``format: date-time``), written in UTC with a ``Z``."""


INSTANT_PATTERN = r"(Z|z|[+-][0-9]{2}:[0-9]{2})$"
"""An instant users write ends with its offset: without one it would mean different instants
in different zones (the API server's date-time format takes a local time too)."""
MAX_INSTANT_LENGTH = 64
"""Bounds the cost the API server estimates for the CEL rules that compare instants."""

Instant = Annotated[
    Timestamp,
    pydantic.WithJsonSchema(
        {
            "type": "string",
            "format": "date-time",
            "pattern": INSTANT_PATTERN,
            "maxLength": MAX_INSTANT_LENGTH,
        }
    ),
]
"""A ``Timestamp`` written by users (``spec.startsAt``): RFC 3339 with an offset, bounded."""


class ApiModel(pydantic.BaseModel):
    """Frozen, strict about unknown fields, camelCase on the wire.

    Python names are accepted too, so code and tests can build models by them; objects read
    from the API server go through ``plans.parse_spec``, which accepts wire names only.
    """

    model_config = pydantic.ConfigDict(
        alias_generator=alias_generators.to_camel,
        validate_by_alias=True,
        validate_by_name=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=True,
    )


def exactly_one_set(*values: object) -> bool:
    """Whether exactly one of ``values`` is set: the check of a model whose fields are
    alternatives (a target's kinds, a queue target's formats)."""
    return sum(value is not None for value in values) == 1
