"""The annotations users set on a ScheduledJob to ask the operator for something, and what
makes their values acceptable. An annotation is anyone's to write who may edit the object: its
value is outside input, checked here before it goes anywhere (a lock key, a header, a name).
"""

import json
import re
from collections.abc import Iterable
from datetime import datetime

from punctual.contracts import records
from punctual.scheduling import exclusions, timeline

RUN_NOW = "punctual.dev/run-now"
"""``punctual.dev/run-now: <token>``: run the job once more, now, once per new token."""
BACKFILL = "punctual.dev/backfill"
"""``punctual.dev/backfill: {"token": ..., "from": RFC 3339, "to": RFC 3339}``: run the slots of
that past window once each, oldest first, once per new token."""
SKIP = "punctual.dev/skip"
"""``punctual.dev/skip: <RFC 3339>,<RFC 3339>,...``: the slots (their scheduled times) that do
not run, each counted excluded; ``punctual skip`` and ``punctual unskip`` edit it."""
TOKEN_MAX_LENGTH = 63
_BACKFILL_MAX_LENGTH = 512
_TOKEN = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def token_problem(annotation: str, value: str, *, key: str = "") -> str | None:
    """Why ``value`` is no acceptable token for ``annotation`` (its ``key`` when the token is
    one field of the value; None when it is): like a label value, 1 to 63 characters,
    alphanumeric at both ends, ``-``, ``_`` and ``.`` between."""
    if len(value) > TOKEN_MAX_LENGTH or not _TOKEN.fullmatch(value):
        shown = value if len(value) <= TOKEN_MAX_LENGTH else value[:TOKEN_MAX_LENGTH] + "…"
        return (
            f"metadata.annotations[{annotation}]{key}: {shown!r} is no token: 1 to "
            f"{TOKEN_MAX_LENGTH} characters, letters and digits at both ends, '-', '_' and "
            "'.' between; nothing run"
        )
    return None


def parse_backfill(value: str) -> records.BackfillRequest | str:
    """The backfill ``value`` asks for, or why it is none (a message naming the annotation)."""
    where = f"metadata.annotations[{BACKFILL}]"
    if len(value) > _BACKFILL_MAX_LENGTH:
        return f"{where}: longer than {_BACKFILL_MAX_LENGTH} characters; nothing run"
    try:
        asked = json.loads(value)
    except ValueError:
        asked = None
    if not isinstance(asked, dict) or set(asked) != {"token", "from", "to"}:
        return f'{where}: not {{"token": ..., "from": RFC 3339, "to": RFC 3339}}; nothing run'
    token = asked["token"]
    if not isinstance(token, str):
        return f"{where}: token is no string; nothing run"
    problem = token_problem(BACKFILL, token, key=".token")
    if problem is not None:
        return problem
    instants: list[datetime] = []
    for key in ("from", "to"):
        try:
            instants.append(timeline.parse_rfc3339(asked[key]))
        except (TypeError, ValueError):
            return f"{where}: {key} is no RFC 3339 instant; nothing run"
    start, end = instants
    if start > end:
        return f"{where}: from is after to; nothing run"
    return records.BackfillRequest(token=token, start=start, end=end)


SKIP_SEPARATOR = ","
_SKIP_MAX_LENGTH = exclusions.MAX_SKIPPED * 32


def parse_skipped(value: str) -> frozenset[datetime] | str:
    """The slots ``value`` skips, or why it skips none (a message naming the annotation): at
    most ``exclusions.MAX_SKIPPED`` RFC 3339 instants with their offsets, comma-separated."""
    where = f"metadata.annotations[{SKIP}]"
    if len(value) > _SKIP_MAX_LENGTH:
        return f"{where}: longer than {_SKIP_MAX_LENGTH} characters; nothing skipped"
    parts = [part.strip() for part in value.split(SKIP_SEPARATOR) if part.strip()]
    if len(parts) > exclusions.MAX_SKIPPED:
        return f"{where}: more than {exclusions.MAX_SKIPPED} slots; nothing skipped"
    skipped: set[datetime] = set()
    for part in parts:
        try:
            skipped.add(timeline.parse_rfc3339(part))
        except ValueError:
            return f"{where}: {part[:40]!r} is no RFC 3339 instant; nothing skipped"
    return frozenset(skipped)


def format_skipped(skipped: Iterable[datetime]) -> str:
    """The annotation's value for ``skipped``, oldest first."""
    return SKIP_SEPARATOR.join(timeline.rfc3339(slot) for slot in sorted(skipped))
