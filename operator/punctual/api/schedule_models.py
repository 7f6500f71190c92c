"""The models of when a ScheduledJob runs, apart from its schedule's own text: the DST rules,
what happens to missed slots, how many finished runs are remembered, and the entries of
``spec.schedules``.

They are fields of ``punctual.api.models.ScheduledJobSpec``; ``punctual.api.planning`` turns
them into the scheduler's plan.
"""

import pydantic

from punctual.api import fields
from punctual.scheduling import dst, missed, plans
from punctual.scheduling.errors import InvalidSpecError


class DstSpec(fields.ApiModel):
    """How a fixed-hour cron schedule treats local times that a DST transition skips or repeats."""

    nonexistent: dst.Nonexistent = pydantic.Field(
        default=dst.Nonexistent.SHIFT_FORWARD,
        description="What a slot does when its local time does not exist because clocks spring "
        "forward. ShiftForward (default): run once at the first instant after the gap (slots "
        "inside one gap coalesce into that run). Skip: do not run that day. Applies to "
        "schedules with a fixed hour field; wildcard-hour schedules follow real elapsed time.",
    )
    ambiguous: dst.Ambiguous = pydantic.Field(
        default=dst.Ambiguous.FIRST,
        description="Which occurrence of a local time that happens twice because clocks fall "
        "back runs: First (default), Second, or Both. Applies to schedules with a fixed hour "
        "field; wildcard-hour schedules run in both copies of the repeated hour.",
    )


class MissedRunsSpec(fields.ApiModel):
    """What happens to slots that came due while no replica could run them."""

    policy: missed.MissedRunPolicy = pydantic.Field(
        default=missed.MissedRunPolicy.RUN_ONCE,
        description="What to do with slots missed during downtime or a long stall. Skip: run "
        "none, resume at the next future slot and count them as missed. RunOnce (default): run "
        "the newest missed slot once, now. CatchUp: run the missed slots one after another, "
        "oldest first, at most maxCatchUp of them (the newest); older ones count as missed.",
    )
    max_catch_up: fields.WholeNumber = pydantic.Field(
        default=10,
        ge=1,
        le=1000,
        description="With policy CatchUp, the most missed slots run after an outage (the newest "
        "ones); the older ones are counted as missed. Between 1 and 1000; default 10.",
    )
    starting_deadline: fields.Duration | None = pydantic.Field(
        default=None,
        description="A slot that cannot start within this long of its scheduled time is counted "
        "as missed instead of running late, whatever the policy. A positive Go-style duration "
        "(e.g. 30s, 5m, 1h30m). Unset: no deadline.",
    )


class HistorySpec(fields.ApiModel):
    """How many finished runs are remembered."""

    succeeded: fields.WholeNumber = pydantic.Field(
        default=plans.KEPT_BY_DEFAULT,
        ge=0,
        le=plans.MOST_KEPT,
        description="How many successful runs status.recentRuns keeps, and how many finished "
        f"Jobs of the job target are kept. Between 0 and {plans.MOST_KEPT}; default "
        f"{plans.KEPT_BY_DEFAULT}.",
    )
    failed: fields.WholeNumber = pydantic.Field(
        default=plans.KEPT_BY_DEFAULT,
        ge=0,
        le=plans.MOST_KEPT,
        description="How many runs that did not succeed status.recentRuns keeps, and how many "
        f"failed Jobs of the job target are kept. Between 0 and {plans.MOST_KEPT}; default "
        f"{plans.KEPT_BY_DEFAULT}.",
    )


_ONE_ENTRY_SCHEDULE = "set exactly one of schedule (a cron expression) or every (an interval)"


ENTRY_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
"""An entry's name is a DNS label: it shows in status, Events and logs as it is."""


class ScheduleEntry(fields.ApiModel):
    """One of several schedules of a job (spec.schedules): a cron expression or an
    interval, in its own time zone with its own DST rules."""

    model_config = pydantic.ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "has(self.schedule) != has(self.every)", "message": _ONE_ENTRY_SCHEDULE}
            ]
        }
    )

    name: str = pydantic.Field(
        min_length=1,
        max_length=63,
        pattern=ENTRY_NAME_PATTERN,
        description="The entry's name, unique in the list: a DNS label (lower-case letters, "
        "digits and '-'). status.recentRuns names the entries that fired each run.",
    )
    schedule: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=128,
        description="A cron expression, as spec.schedule. Exactly one of schedule or every.",
    )
    every: fields.Duration | None = pydantic.Field(
        default=None,
        description="An interval, as spec.every. Exactly one of schedule or every.",
    )
    time_zone: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=64,
        description="The IANA time zone this entry's cron expression is evaluated in. Unset: "
        "spec.timeZone.",
    )
    dst: DstSpec | None = pydantic.Field(
        default=None,
        description="This entry's DST rules, as spec.dst. Unset: spec.dst.",
    )

    @pydantic.model_validator(mode="after")
    def _one_schedule(self) -> "ScheduleEntry":
        if (self.schedule is None) == (self.every is None):
            raise InvalidSpecError("schedule", _ONE_ENTRY_SCHEDULE)
        return self
