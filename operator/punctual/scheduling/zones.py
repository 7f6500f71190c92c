"""IANA time-zone names, validated with a suggestion for near misses."""

import difflib
import functools
import zoneinfo

from punctual.scheduling.errors import InvalidSpecError

# Names whose meaning depends on the host: replicas on different hosts would disagree.
_HOST_DEPENDENT = frozenset({"localtime", "Factory", "posixrules"})


def parse(name: str, *, field: str = "spec.timeZone") -> zoneinfo.ZoneInfo:
    if name not in _HOST_DEPENDENT:
        try:
            return zoneinfo.ZoneInfo(name)
        # OSError: a region folder such as "Europe" is found, but is not a zone file.
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            pass
    raise InvalidSpecError(field, f"unknown time zone {name!r}{_suggestion(name)}")


def _suggestion(name: str) -> str:
    by_lower = _known_names()
    close = difflib.get_close_matches(name.lower(), by_lower, n=1)
    if close:
        return f"; did you mean {by_lower[close[0]]!r}?"
    return " (expected an IANA name such as Europe/Copenhagen)"


@functools.cache
def _known_names() -> dict[str, str]:
    """Lower-cased name → name, so that near misses in any case find their zone."""
    names = sorted(zoneinfo.available_timezones() - _HOST_DEPENDENT)
    return {known.lower(): known for known in names}
