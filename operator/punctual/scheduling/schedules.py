"""One entry point from the fields users write to a ``Schedule``.

The operator and ``punctual next`` both build schedules here, so they cannot disagree.
"""

from punctual.scheduling import cron, dst, durations, interval, timeline, zones
from punctual.scheduling.errors import InvalidSpecError


def build(
    *,
    schedule: str | None,
    every: str | None,
    time_zone: str = "UTC",
    rules: dst.DstRules = dst.DstRules(),
    field_prefix: str = "spec.",
    hash_key: str | None = None,
) -> timeline.Schedule:
    """A schedule from exactly one of a cron ``schedule`` or an ``every`` duration;
    ``hash_key`` (``hashed.job_key``) is what a cron schedule's ``H`` values derive from."""
    if (schedule is None) == (every is None):
        raise InvalidSpecError(
            f"{field_prefix}schedule", "set exactly one of schedule (cron) or every (interval)"
        )
    zone = zones.parse(time_zone, field=f"{field_prefix}timeZone")
    if every is not None:
        period = durations.parse(every, field=f"{field_prefix}every")
        if period > interval.LONGEST:
            raise InvalidSpecError(
                f"{field_prefix}every",
                f"{every!r} is longer than {durations.format(interval.LONGEST)} (ten years)",
            )
        return interval.IntervalSchedule(every=period)
    assert schedule is not None  # narrowed by the exactly-one check above
    return cron.parse(
        schedule, zone=zone, rules=rules, field=f"{field_prefix}schedule", hash_key=hash_key
    )
