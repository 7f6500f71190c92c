"""IANA time-zone names, validated with a suggestion for near misses."""

import difflib
import functools
import zoneinfo

from punctual.scheduling.errors import InvalidSpecError


def parse(name: str, *, field: str = "spec.timeZone") -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(name)
    # OSError: a region folder such as "Europe" is found, but is not a zone file.
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        close = difflib.get_close_matches(name, _known_names(), n=1)
        hint = (
            f"; did you mean {close[0]!r}?"
            if close
            else " (expected an IANA name such as Europe/Copenhagen)"
        )
        raise InvalidSpecError(field, f"unknown time zone {name!r}{hint}") from None


@functools.cache
def _known_names() -> list[str]:
    return sorted(zoneinfo.available_timezones())
