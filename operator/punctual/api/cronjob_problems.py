"""What ``punctual convert`` says about what it could not carry over, and how it words it.

Belongs here: ``Problem`` (a field of a CronJob left out, or carried over with another value)
and the wording every message of a conversion shares, whatever the input holds: the object
(``subject``: ``CronJob reports/nightly``), a field's path (``field_path``:
``spec.jobTemplate.spec.x``), a value (``show``) and what kind of value it is (``kind_of``),
each on one line and cut short.

Does not belong here: deciding what is a problem: ``punctual.api.cronjob_translation`` for the
fields of one CronJob, ``punctual.api.cronjobs`` for documents and lists.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_./-]{1,128}")
_SHOWN_LENGTH = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """A field of the input that was left out, or carried over with another value."""

    path: str
    """Where in the CronJob, as users write it: ``spec.jobTemplate.spec.x``; empty: the object."""
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def subject(document: Mapping[str, Any], *, location: str) -> str:
    """The object, for messages: ``CronJob reports/nightly``; one without a plain name is named
    by its ``location`` in the input (``items[2]``)."""
    kind = document.get("kind")
    kind_name = kind if isinstance(kind, str) and _PLAIN_KEY.fullmatch(kind) else "object"
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    if isinstance(name, str) and _PLAIN_KEY.fullmatch(name):
        if isinstance(namespace, str) and _PLAIN_KEY.fullmatch(namespace):
            return f"{kind_name} {namespace}/{name}"
        return f"{kind_name} {name}"
    unnamed = f"{kind_name} without a name"
    return f"{location}: {unnamed}" if location else unnamed


def field_path(parent: str, key: object) -> str:
    """``parent.key``; a key that is not plain is quoted as JSON (messages stay one line)."""
    text = str(key)
    if _PLAIN_KEY.fullmatch(text):
        return f"{parent}.{text}" if parent else text
    return f"{parent}[{json.dumps(text)}]"


def show(value: object) -> str:
    """A value in a message: its repr, cut short, on one line."""
    shown = repr(value) if isinstance(value, str | int | float | bool | None) else kind_of(value)
    if len(shown) > _SHOWN_LENGTH:
        return shown[: _SHOWN_LENGTH - 3] + "..."
    return shown


def kind_of(value: object) -> str:
    """What kind of value ``value`` is, as a message says it: ``an object``, ``a list``..."""
    match value:
        case Mapping():
            return "an object"
        case list():
            return "a list"
        case str():
            return "a string"
        case bool():
            return "a boolean"
        case int() | float():
            return "a number"
        case None:
            return "null"
    return f"a {type(value).__name__}"
