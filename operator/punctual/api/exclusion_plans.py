"""The days a job does not run on, as the scheduler leaves them out: ``spec.exclude``, the
Calendars it names and the slots skipped by hand (``punctual.dev/skip``), with errors naming
the entry users wrote (``spec.exclude.days[1]``, ``spec.exclude.calendars[0]``).
"""

from collections.abc import Iterable, Mapping
from datetime import date, datetime

import pydantic

from punctual.api import day_models, models, spec_parsing
from punctual.api.spec_parsing import SPEC
from punctual.scheduling import exclusions, zones
from punctual.scheduling.errors import InvalidSpecError


class CalendarNotFoundError(InvalidSpecError):
    """``spec.exclude.calendars`` names a Calendar its namespace does not hold (yet): the job
    is not Ready, with this reason, until it does."""

    reason = "CalendarNotFound"


def plan_exclusions(
    spec: models.ScheduledJobSpec,
    *,
    skipped: Iterable[datetime],
    calendars: Mapping[str, Mapping[str, object]] | None,
) -> exclusions.Exclusions:
    """What ``spec.exclude``, the Calendars it names and the ``skipped`` slots leave out, local
    days in the exclusion's zone (the job's unless it names one); errors name the entry
    (``spec.exclude.days[1]``, ``spec.exclude.calendars[0]``)."""
    exclude = spec.exclude or day_models.ExcludeSpec()
    where = f"{SPEC}.exclude"
    zone = (
        zones.parse(exclude.time_zone, field=f"{where}.timeZone")
        if exclude.time_zone is not None
        else zones.parse(spec.time_zone, field=f"{SPEC}.timeZone")
    )
    ranges, rules = _days(exclude, prefix=where)
    for index, name in enumerate(exclude.calendars):
        field = f"{where}.calendars[{index}]"
        if calendars is None:
            continue  # not looked at (admission: a Calendar may come after its job)
        raw = calendars.get(name)
        if raw is None:
            raise CalendarNotFoundError(field, f"no Calendar {name!r} in the job's namespace")
        try:
            more_ranges, more_rules = _days(
                day_models.CalendarSpec.model_validate(raw, by_alias=True, by_name=False),
                prefix=SPEC,
            )
        except pydantic.ValidationError as error:
            raise InvalidSpecError(
                field, f"Calendar {name!r}: {spec_parsing.first_problem(error)}"
            ) from None
        except InvalidSpecError as error:
            raise InvalidSpecError(field, f"Calendar {name!r}: {error}") from None
        ranges += more_ranges
        rules += more_rules
    if len(rules) > exclusions.MAX_RULES:
        raise InvalidSpecError(
            where, f"more than {exclusions.MAX_RULES} recurring days, its Calendars' included"
        )
    return exclusions.Exclusions(
        zone=zone, ranges=tuple(ranges), rules=tuple(rules), skipped=frozenset(skipped)
    )


def _days(
    days: day_models.DaysSpec, *, prefix: str
) -> tuple[list[tuple[date, date]], list[exclusions.DayRule]]:
    ranges = [
        exclusions.parse_dates(text, field=f"{prefix}.dates[{index}]")
        for index, text in enumerate(days.dates)
    ]
    rules = [
        exclusions.parse_rule(text, field=f"{prefix}.days[{index}]")
        for index, text in enumerate(days.days)
    ]
    return ranges, rules
