"""Reading a ScheduledJob's ``spec`` through its models, every failure an ``InvalidSpecError``
whose ``field`` is the path users wrote (``spec.missedRuns.maxCatchUp``), never a pydantic error.

The path lands in the Ready condition, a Warning Event and the logs, so it is written for
people, and quoted where a key users made up could carry control characters.
"""

import json
import re
from collections.abc import Mapping

import pydantic
import pydantic_core

from punctual.api import models
from punctual.scheduling.errors import InvalidSpecError

SPEC = "spec"
"""The root of every field path users read: the object's ``spec``."""
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,128}")


def parse_spec(raw: Mapping[str, object]) -> models.ScheduledJobSpec:
    """Read an object's ``spec`` by its wire (camelCase) names.

    Raises ``InvalidSpecError`` naming the first offending field in camelCase, with a count of
    any further problems; never a pydantic error.
    """
    try:
        return models.ScheduledJobSpec.model_validate(raw, by_alias=True, by_name=False)
    except pydantic.ValidationError as error:
        raise first_problem(error) from None


def first_problem(error: pydantic.ValidationError) -> InvalidSpecError:
    """The first of pydantic's errors as an ``InvalidSpecError``, with a count of the others."""
    details = error.errors(include_url=False)
    field, problem = _describe(details[0])
    if len(details) > 1:
        more = len(details) - 1
        problem += f" (and {more} more problem{'s' if more > 1 else ''})"
    return InvalidSpecError(field, problem)


def _describe(detail: pydantic_core.ErrorDetails) -> tuple[str, str]:
    """The camelCase path and a sentence for one pydantic error."""
    path = _path(detail["loc"])
    cause = detail.get("ctx", {}).get("error")
    if isinstance(cause, InvalidSpecError):
        # Raised by the models' own validators, with a field relative to the model.
        return (f"{path}.{cause.field}" if cause.field else path), cause.problem
    match detail["type"]:
        case "missing":
            return path, "required"
        case "extra_forbidden":
            return path, "unknown field"
    given = detail.get("input")
    if isinstance(given, str | int | float | bool):
        return path, f"{detail['msg']} (got {given!r})"
    return path, detail["msg"]


def _path(loc: tuple[int | str, ...]) -> str:
    """``('missedRuns', 'maxCatchUp')`` → ``spec.missedRuns.maxCatchUp``; list items as ``[0]``.

    A key users made up (an unknown field) is quoted as JSON, ``spec.dst["\\u001b[2J"]``: the
    path lands in the Ready condition, an Event and the logs, where a raw newline or terminal
    escape sequence from the object could forge lines or rewrite a terminal.
    """
    path = SPEC
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            path += f".{part}"
        else:
            path += f"[{json.dumps(part)}]"
    return path
