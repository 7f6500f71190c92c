"""The fields of a cron expression: which extensions ``spec.schedule`` takes, spelled for croniter.

croniter computes every slot; this module only decides what it is given. Accepted beyond plain
cron (numbers, ``*``, lists, ranges, steps, month and weekday names):

- day-of-month ``L``, the month's last day: alone, in a list (``1,L``) or ending a range
  (``15-L``);
- day-of-month ``nW`` (or ``Wn``), alone: the weekday (Mon-Fri) nearest the n-th, never in
  another month; in a month shorter than n, nearest its last day (``31W``: the last weekday);
- day-of-week ``nL`` (``5L``, ``FRIL``, croniter's ``L5``): the month's last such weekday;
- day-of-week ``n#k`` (``1#2``, ``MON#2``, ``MON-FRI#1``): the k-th (1-5) such weekday;
- ``?`` as the whole day-of-month or day-of-week: no specific value, the same as ``*``;
- ranges that wrap around the end of their field: ``FRI-MON``, ``22-2``, ``NOV-FEB/2``.

Rewritten, because croniter reads them otherwise: a range with equal ends (``5-5``) is that one
value (croniter: the whole field); a wrapping range with a step is spelled out as a list
(croniter drops or shifts the values after the wrap: ``50-10/20`` is minutes 50 and 10);
``nL`` becomes ``Ln``; ``#`` on a range becomes one ``#`` per weekday.

The two day fields combine by one rule (``day_fields``; docs/time.md has its table): when either
is unrestricted (an item ``*``, ``?`` or ``*/1``) the other alone decides, otherwise a day matches
when either does. CronJob's cron library (robfig/cron v3) reads them so; croniter's own reading
of a field covering every day depends on whether the other field's text holds a ``*``, so it is
never given the chance.

Refused, saying what is not supported: ``L``, ``W``, ``#`` and ``?`` in fields without that
meaning, ``L-n``, ``LW``, ``W`` in a list or range, day-of-week lists that mix plain weekdays
with ``#`` or ``L`` ones, and ``W``, ``#`` or a weekday's ``L`` beside a restricted other day
field (croniter would then ignore one of the two fields, or never fire).
"""

import re
from collections.abc import Sequence

from punctual.scheduling.errors import InvalidSpecError

DAY_OF_MONTH = "day-of-month"
DAY_OF_WEEK = "day-of-week"
_BOUNDS = {
    "second": (0, 59),
    "minute": (0, 59),
    "hour": (0, 23),
    DAY_OF_MONTH: (1, 31),
    "month": (1, 12),
    DAY_OF_WEEK: (0, 7),
}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_NAMES = {
    "month": {name: number for number, name in enumerate(_MONTHS, start=1)},
    DAY_OF_WEEK: {name: number for number, name in enumerate(_WEEKDAYS)},
}
_FULL_NAMES = (
    "january", "february", "march", "april", "june", "july", "august", "september", "october",
    "november", "december", "sunday", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday",
)  # fmt: skip
"""Spelled out, which cron does not take (``may`` is both)."""
_FULL_NAME = re.compile("|".join(_FULL_NAMES), re.IGNORECASE)
_NAME = re.compile("|".join(_FULL_NAMES + _MONTHS + _WEEKDAYS), re.IGNORECASE)
_RANGE = re.compile(r"(?P<low>[a-z0-9]+)-(?P<high>[a-z0-9]+)(?:/(?P<step>[0-9]+))?")
_NEAREST_WEEKDAY = re.compile(r"[0-9]+w|w[0-9]+")
_NTH_WEEKDAY = re.compile(r"(?P<days>[a-z0-9]+(?:-[a-z0-9]+)?)#(?P<nth>[0-9]+)")
_LAST_WEEKDAY = re.compile(r"(?P<day>[a-z]+|[0-9]+)l|l(?P<number>[0-9]+)")


def strip_names(value: str) -> str:
    """``value`` without month and weekday names, whose letters are no markers (JUL, WED;
    spelled out too, so that ``thursday`` is refused as a name, not for its R)."""
    return _NAME.sub("", value)


def canonical(fields: Sequence[str], names: Sequence[str], *, field: str) -> list[str]:
    """``fields`` as croniter reads them right; unsupported syntax raises ``InvalidSpecError``.

    Values that need no rewriting come back as written; those croniter itself must judge (out
    of range, malformed) come back too, for the caller to check.
    """
    result = [_field(name, value, field=field) for name, value in zip(names, fields, strict=True)]
    by_name = dict(zip(names, fields, strict=True))
    _check_day_fields(by_name[DAY_OF_MONTH], by_name[DAY_OF_WEEK], field=field)
    days = day_fields(result[names.index(DAY_OF_MONTH)], result[names.index(DAY_OF_WEEK)])
    result[names.index(DAY_OF_MONTH)], result[names.index(DAY_OF_WEEK)] = days
    return result


def unrestricted(value: str) -> bool:
    """Whether a day field leaves the day to the other one: an item of its list is ``*``, ``?``
    or ``*/1``, as CronJob's cron library reads it (a full range such as ``1-31`` is not)."""
    return any(item in ("*", "?", "*/1") for item in value.split(","))


def day_fields(day_of_month: str, day_of_week: str) -> tuple[str, str]:
    """The two day fields spelled so that croniter applies the rule, whatever its own reading.

    The rule: when either field is unrestricted, the other alone decides; otherwise a day
    matches when either does. An unrestricted field becomes ``*`` (``?`` stays: croniter reads
    it as ``*``). When both are restricted,
    their ``*/n`` items are spelled as ranges (``1-31/n``, ``0-6/n``): croniter turns a field
    that covers every day into ``*`` (and then takes the other field alone) whenever the other
    field's text holds a ``*``, which would drop the union.
    """
    if unrestricted(day_of_month):
        return _any_day(day_of_month), day_of_week
    if unrestricted(day_of_week):
        return day_of_month, _any_day(day_of_week)
    return _spelled_steps(DAY_OF_MONTH, day_of_month), _spelled_steps(DAY_OF_WEEK, day_of_week)


def _any_day(value: str) -> str:
    return value if value == "?" else "*"


def _spelled_steps(name: str, value: str) -> str:
    first, last = _BOUNDS[name]
    if name == DAY_OF_WEEK:
        last = 6
    return value.replace("*/", f"{first}-{last}/")


def _field(name: str, value: str, *, field: str) -> str:
    _check_markers(name, value, field=field)
    if value == "?":
        return value
    items = value.split(",")
    if name == DAY_OF_MONTH:
        return ",".join(
            _day_of_month(item, value, alone=len(items) == 1, field=field) for item in items
        )
    if name == DAY_OF_WEEK:
        return _day_of_week(items, value, field=field)
    return ",".join(_range(name, item.lower()) or item for item in items)


def _check_markers(name: str, value: str, *, field: str) -> None:
    bare = strip_names(value).lower()
    if full_name := _FULL_NAME.search(value):
        written = full_name[0]
        problem = (
            f"{written!r} is a full name, which cron does not take: write its first three "
            f"letters ({written[:3].upper()})"
        )
    elif "?" in bare and not (value == "?" and name in (DAY_OF_MONTH, DAY_OF_WEEK)):
        problem = (
            "'?' (no specific value) is only supported as the whole day-of-month or day-of-week"
        )
    elif "l" in bare and name not in (DAY_OF_MONTH, DAY_OF_WEEK):
        problem = (
            "L (last) is only supported in day-of-month (L: the last day) and day-of-week "
            "(5L: the last Friday)"
        )
    elif "w" in bare and name != DAY_OF_MONTH:
        problem = "W (nearest weekday) is only supported in day-of-month (15W)"
    elif "#" in bare and name != DAY_OF_WEEK:
        problem = "# (nth weekday) is only supported in day-of-week (1#2: the second Monday)"
    else:
        return
    raise _error(field, name, value, problem)


def _day_of_month(item: str, value: str, *, alone: bool, field: str) -> str:
    text = item.lower()
    if text == "l":
        return item
    if _NEAREST_WEEKDAY.fullmatch(text):
        if not alone:
            raise _error(field, DAY_OF_MONTH, value, "W takes one day (15W), not a list")
        return item
    if text in ("lw", "wl"):
        raise _error(
            field,
            DAY_OF_MONTH,
            value,
            "LW is not supported; 31W (the weekday nearest the month's last day) is the same",
        )
    if text == "w":
        raise _error(field, DAY_OF_MONTH, value, "W needs a day before it: 15W")
    if "w" in text:
        raise _error(field, DAY_OF_MONTH, value, "W takes one day (15W), not a range or step")
    if re.fullmatch(r"l-[0-9]+", text):
        raise _error(
            field, DAY_OF_MONTH, value, "offsets from the last day (L-3) are not supported"
        )
    if "l" in text:
        last_day_range = _RANGE.fullmatch(text)
        if last_day_range is None or last_day_range["high"] != "l":
            raise _error(
                field, DAY_OF_MONTH, value, "L stands alone (L) or ends a range (15-L, 1-L/2)"
            )
        return _range(DAY_OF_MONTH, text.replace("-l", "-31")) or item
    return _range(DAY_OF_MONTH, text) or item


def _day_of_week(items: list[str], value: str, *, field: str) -> str:
    plain, special = [], []
    for item in items:
        text = item.lower()
        if "#" in text:
            special.extend(_nth_weekday(text, value, field=field))
        elif "l" in strip_names(text):
            special.append(_last_weekday(text, value, field=field))
        else:
            plain.append(_range(DAY_OF_WEEK, text) or item)
    if plain and special:
        raise _error(
            field,
            DAY_OF_WEEK,
            value,
            "a list mixing plain weekdays with # or L ones (1#2,5) is not supported",
        )
    return ",".join(plain or special)


def _nth_weekday(text: str, value: str, *, field: str) -> list[str]:
    match = _NTH_WEEKDAY.fullmatch(text)
    if match is None:
        raise _error(
            field,
            DAY_OF_WEEK,
            value,
            "# takes a weekday or a range of them, then the nth: 1#2, MON#2, MON-FRI#1",
        )
    nth = int(match["nth"])
    if not 1 <= nth <= 5:
        raise _error(field, DAY_OF_WEEK, value, f"the nth weekday after # must be 1-5, not {nth}")
    low, _, high = match["days"].partition("-")
    first, last = _weekday(low, value, field=field), _weekday(high or low, value, field=field)
    if (first, last) == (0, 7):
        days = list(range(7))
    else:
        days = _cycle(first % 7, last % 7, step=1, first=0, size=7)
    return [f"{day}#{nth}" for day in days]


def _last_weekday(text: str, value: str, *, field: str) -> str:
    match = _LAST_WEEKDAY.fullmatch(text)
    if match is None:
        problem = (
            "L in day-of-week needs one weekday before it: 5L (or FRIL) is the last Friday"
            if text == "l"
            else "L takes one weekday: 5L (or FRIL) is the last Friday"
        )
        raise _error(field, DAY_OF_WEEK, value, problem)
    return f"L{_weekday(match['day'] or match['number'], value, field=field) % 7}"


def _weekday(token: str, value: str, *, field: str) -> int:
    """The weekday ``token`` names, 0-7 (7 is Sunday too)."""
    number = _number(DAY_OF_WEEK, token)
    if number is None or not 0 <= number <= 7:
        raise _error(field, DAY_OF_WEEK, value, f"{token!r} is not a weekday (0-7 or SUN-SAT)")
    return number


def _range(name: str, text: str) -> str | None:
    """``text`` respelled if croniter would misread it (lowercase in), else None.

    Only well-formed ranges within the field are respelled; anything else is croniter's to
    accept or refuse.
    """
    match = _RANGE.fullmatch(text)
    if match is None:
        return None
    low, high = _number(name, match["low"]), _number(name, match["high"])
    step = int(match["step"]) if match["step"] else 1
    first, last = _BOUNDS[name]
    if (
        low is None
        or high is None
        or step < 1
        or not first <= min(low, high) <= max(low, high) <= last
    ):
        return None
    if name == DAY_OF_WEEK:
        if (low, high) == (0, 7):
            return None  # the whole week, which croniter reads right
        low, high, last = low % 7, high % 7, 6
    if low == high:
        return str(low)
    if low < high or match["step"] is None:
        return None
    values = _cycle(low, high, step=step, first=first, size=last - first + 1)
    return ",".join(str(value) for value in values)


def _cycle(low: int, high: int, *, step: int, first: int, size: int) -> list[int]:
    """From ``low`` to ``high`` by ``step``, through the end of a field of ``size`` values."""
    span = (high - low) % size
    return [first + (low - first + offset) % size for offset in range(0, span + 1, step)]


def _number(name: str, token: str) -> int | None:
    if token.isdigit():
        return int(token)
    return _NAMES.get(name, {}).get(token)


def _check_day_fields(day_of_month: str, day_of_week: str, *, field: str) -> None:
    by_weekday = "w" in day_of_month.lower()
    by_nth = "#" in day_of_week or "l" in strip_names(day_of_week).lower()
    if (by_weekday and not unrestricted(day_of_week)) or (
        by_nth and not unrestricted(day_of_month)
    ):
        raise InvalidSpecError(
            field,
            f"day-of-month {day_of_month!r} with day-of-week {day_of_week!r} is not supported: "
            "W, # and a weekday's L need * or ? in the other day field",
        )


def _error(field: str, name: str, value: str, problem: str) -> InvalidSpecError:
    return InvalidSpecError(field, f"{name} field {value!r}: {problem}")
