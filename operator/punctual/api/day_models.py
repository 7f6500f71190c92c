"""Days on which no slot runs: ``spec.exclude`` and the namespaced Calendar resource that
holds named days (its names and its spec), both dates and recurring days.

``punctual.api.exclusion_plans`` reads them into what the scheduler leaves out.
"""

from typing import Annotated

import pydantic

from punctual.api import fields
from punctual.scheduling import exclusions

CALENDAR_KIND = "Calendar"
CALENDAR_PLURAL = "calendars"
CALENDAR_SINGULAR = "calendar"
MAX_CALENDARS = 8
"""The most Calendars one job excludes the days of."""


_DATES_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(/[0-9]{4}-[0-9]{2}-[0-9]{2})?$"


class DaysSpec(fields.ApiModel):
    """Days, by date and by recurring rule: what a Calendar holds and spec.exclude leaves out.
    They are local days in the zone of the job that excludes them."""

    dates: tuple[
        Annotated[str, pydantic.Field(min_length=10, max_length=21, pattern=_DATES_PATTERN)], ...
    ] = pydantic.Field(
        default=(),
        max_length=exclusions.MAX_DAYS,
        description="Dates (2026-12-25) and inclusive ranges of dates (2026-12-24/2026-12-31).",
    )
    days: tuple[Annotated[str, pydantic.Field(min_length=1, max_length=64)], ...] = pydantic.Field(
        default=(),
        max_length=exclusions.MAX_RULES,
        description="Recurring days: the three day fields of a cron expression, 'day-of-month "
        "month day-of-week' ('25 12 *': every 25 December; '* * SAT,SUN': weekends; "
        "'* * 1#1': the first Monday of each month), read as spec.schedule reads them "
        "(docs/time.md).",
    )


CALENDAR_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
"""A Calendar's name is an object name (a DNS subdomain)."""


class ExcludeSpec(DaysSpec):
    """Days on which no slot runs (spec.exclude): each such slot is counted excluded."""

    calendars: tuple[
        Annotated[str, pydantic.Field(min_length=1, max_length=253, pattern=CALENDAR_NAME_PATTERN)],
        ...,
    ] = pydantic.Field(
        default=(),
        max_length=MAX_CALENDARS,
        description="Calendars (punctual.dev/v1alpha1 Calendar) in the job's namespace whose "
        "days are excluded too, by name. An edit of one applies at once; a Calendar that does "
        "not exist makes the job not Ready (reason CalendarNotFound).",
    )
    time_zone: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=64,
        description="The IANA time zone whose local days are excluded. Unset: spec.timeZone.",
    )


class CalendarSpec(DaysSpec):
    """Named days (public holidays, a freeze) that ScheduledJobs of its namespace exclude by
    the Calendar's name (spec.exclude.calendars): local days in each job's zone."""
