"""Go-style durations (``250ms``, ``10s``, ``1h30m``), as Kubernetes users write them.

Whole numbers only (the API carries no floats) and millisecond resolution: units ``h``, ``m``,
``s`` and ``ms``.
"""

import re
from datetime import timedelta

from punctual.scheduling.errors import InvalidSpecError

_UNITS = {
    "h": timedelta(hours=1),
    "m": timedelta(minutes=1),
    "s": timedelta(seconds=1),
    "ms": timedelta(milliseconds=1),
}
# [0-9], not \d: Python's \d matches any Unicode digit, Go's (and the API server's) only ASCII.
_TERM = re.compile(r"([0-9]+)(ms|h|m|s)")
_WHOLE = re.compile(r"(?:[0-9]+(?:ms|h|m|s))+")
_EXAMPLES = "e.g. 250ms, 10s, 5m, 1h30m"


def parse(text: str, *, field: str) -> timedelta:
    """Parse a positive duration; errors name ``field`` and say what is wrong."""
    if not text:
        raise InvalidSpecError(field, f"empty duration ({_EXAMPLES})")
    if not _WHOLE.fullmatch(text):
        raise InvalidSpecError(field, f"{text!r} is not a duration: {_diagnose(text)}")
    try:
        total = sum((int(n) * _UNITS[unit] for n, unit in _TERM.findall(text)), timedelta())
    except OverflowError:
        raise InvalidSpecError(field, f"{text!r} is too large") from None
    if total <= timedelta():
        raise InvalidSpecError(field, f"{text!r} must be positive")
    return total


def format(duration: timedelta) -> str:
    """The canonical Go-style spelling of a whole-millisecond duration: ``1h30m``, ``250ms``."""
    remaining = duration // timedelta(milliseconds=1)
    if remaining == 0:
        return "0s"
    parts = []
    for unit in ("h", "m", "s", "ms"):
        count, remaining = divmod(remaining, _UNITS[unit] // timedelta(milliseconds=1))
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def _diagnose(text: str) -> str:
    if text.lstrip("-").isdigit():
        return f"missing unit ({_EXAMPLES})"
    if text.startswith("-"):
        return "must be positive"
    if "." in text:
        return f"fractions are not supported, use a smaller unit ({_EXAMPLES})"
    if re.search(r"\d+(ns|us|µs)", text):
        return "the smallest unit is ms"
    return f"expected whole numbers with units h, m, s or ms ({_EXAMPLES})"
