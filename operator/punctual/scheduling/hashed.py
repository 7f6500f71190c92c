"""``H`` in a cron field: a value fixed per job, so that many jobs written alike spread out.

A thousand jobs on ``H * * * *`` each run once an hour, at a minute of their own. The minute is
derived from the job's ``<namespace>/<name>``, never from its uid: a job deleted and created
again, or applied again by GitOps, keeps its minute. The derivation is this project's own and
is versioned (``HASH_VERSION``); docs/time.md spells it out so that other tools can reproduce
it. croniter never sees an ``H``: every ``H`` item is replaced here by the numbers it stands for.

The forms, as list items of any field (``H,30`` too):

- ``H``: one value of the field's range (day-of-month: 1-28, so that it fires every month;
  day-of-week: 0-6);
- ``H(a-b)``: one value of ``a``..``b`` (numbers, ``a <= b``, within the field);
- ``H/n`` and ``H(a-b)/n``: every ``n``-th value of the range from a start of its first ``n``.
"""

import hashlib
import re
from collections.abc import Sequence

from punctual.scheduling.errors import InvalidSpecError

HASH_VERSION = "punctual-h-v1"
"""Part of every hashed text: a future derivation gets a new version and never reads alike."""
_RANGES = {
    "second": (0, 59),
    "minute": (0, 59),
    "hour": (0, 23),
    "day-of-month": (1, 28),
    "month": (1, 12),
    "day-of-week": (0, 6),
}
_LIMITS = {**_RANGES, "day-of-month": (1, 31)}
"""What ``H(a-b)`` may name: the whole field (the plain ``H`` of day-of-month keeps to 1-28)."""
_ITEM = re.compile(r"h(?:\((?P<low>[0-9]+)-(?P<high>[0-9]+)\))?(?:/(?P<step>[0-9]+))?")
_FORMS = "H, H(a-b), H/n or H(a-b)/n"


def job_key(*, namespace: str, name: str) -> str:
    """What ``H`` is hashed from: the job's namespace and name, never its uid."""
    return f"{namespace}/{name}"


def is_hashed(item: str) -> bool:
    """Whether a list item of a cron field is an ``H`` item (full names never start with H)."""
    return item[:1] in ("h", "H")


def resolve(
    fields: Sequence[str], names: Sequence[str], *, key: str | None, field: str
) -> list[str]:
    """``fields`` with every ``H`` item replaced by its numbers for the job ``key``.

    ``key`` is ``job_key``'s; None where no job is named (``punctual next`` without ``--job``):
    an ``H`` is then refused, since its values depend on the job.
    """
    return [
        ",".join(
            _resolve_item(name, item, value, key=key, field=field) if is_hashed(item) else item
            for item in value.split(",")
        )
        for name, value in zip(names, fields, strict=True)
    ]


def _resolve_item(name: str, item: str, value: str, *, key: str | None, field: str) -> str:
    match = _ITEM.fullmatch(item.lower())
    if match is None:
        raise _error(field, name, value, f"H takes the forms {_FORMS} (numbers only)")
    first, last = _RANGES[name]
    if match["low"] is not None:
        first, last = int(match["low"]), int(match["high"])
        lowest, highest = _LIMITS[name]
        if not lowest <= first <= last <= highest:
            raise _error(
                field,
                name,
                value,
                f"H({first}-{last}) must name a rising range within {lowest}-{highest}",
            )
    size = last - first + 1
    step = int(match["step"]) if match["step"] is not None else None
    if step is not None and not 1 <= step <= size:
        raise _error(
            field, name, value, f"the step of H must be 1 to {size}, the size of its range"
        )
    if key is None:
        raise InvalidSpecError(
            field,
            f"{name} field {value!r}: H stands for a value derived from the job's namespace and "
            "name, and no job is named (punctual next --job NAMESPACE/NAME)",
        )
    number = hash_number(key=key, field_name=name)
    if step is None:
        return str(first + number % size)
    return ",".join(str(value) for value in range(first + number % step, last + 1, step))


def hash_number(*, key: str, field_name: str) -> int:
    """The number an ``H`` of ``field_name`` is reduced from: the first 8 bytes, big-endian, of
    SHA-256 over ``<HASH_VERSION>:<key>:<field_name>`` in UTF-8. The field's name is hashed so
    that ``H H * * *`` need not pick the same minute as hour."""
    text = f"{HASH_VERSION}:{key}:{field_name}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _error(field: str, name: str, value: str, problem: str) -> InvalidSpecError:
    return InvalidSpecError(field, f"{name} field {value!r}: {problem}")
