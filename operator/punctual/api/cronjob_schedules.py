"""A CronJob's schedule as a ScheduledJob writes it: ``schedule``, ``timeZone`` and ``dst``, or
``every``.

Belongs here: the ``TZ=``/``CRON_TZ=`` prefix of a CronJob's schedule (it becomes ``timeZone``,
over the CronJob's own), ``@every <Go duration>`` (it becomes ``every``, with the problem that
its phase is lost), Go's ``time.ParseDuration`` as robfig/cron reads that duration, and the DST
handling of CronJob's cron library, written out for cron schedules.

Does not belong here: the CronJob's other fields, and the operator's check of the result
(``punctual.api.cronjob_translation``).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from fractions import Fraction
from typing import Any

from punctual.api import cronjob_problems
from punctual.scheduling import durations

CRONJOB_DST = {"nonexistent": "Skip", "ambiguous": "Both"}
"""How CronJob's cron library (robfig/cron v3) treats DST: a local time that does not exist is
skipped, one that happens twice runs twice."""
_ZONE_PREFIXES = ("TZ=", "CRON_TZ=")
_EVERY = "@every "
_GO_UNITS_NS = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,
    "μs": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_GO_TERM = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """What became of a CronJob's ``schedule`` and ``timeZone``."""

    fields: dict[str, Any] | None
    """The ScheduledJob's ``schedule``, ``timeZone`` and ``dst``, or its ``every``; None: no
    ScheduledJob can be made (the problems say why)."""
    zone_origin: str
    """The CronJob's field the ``timeZone`` written came from: ``spec.timeZone`` or
    ``spec.schedule`` (its prefix)."""
    problems: tuple[cronjob_problems.Problem, ...]


def translate(spec: Mapping[str, Any], *, default_time_zone: str) -> Schedule:
    """The schedule of the CronJob whose spec is ``spec``; ``default_time_zone`` for a cron
    schedule that names no zone."""
    problems: list[cronjob_problems.Problem] = []

    def problem(path: str, message: str) -> None:
        problems.append(cronjob_problems.Problem(path=path, message=message))

    def result(fields: dict[str, Any] | None, *, zone_origin: str) -> Schedule:
        return Schedule(fields=fields, zone_origin=zone_origin, problems=tuple(problems))

    zone_origin = "spec.timeZone"
    raw = spec.get("schedule")
    if not isinstance(raw, str) or not raw.strip():
        problem("spec.schedule", "required: a cron expression")
        return result(None, zone_origin=zone_origin)
    expression = raw.strip()
    written_zone = spec.get("timeZone")
    if written_zone is not None and not isinstance(written_zone, str):
        kind = cronjob_problems.kind_of(written_zone)
        problem("spec.timeZone", f"must be a time zone name, not {kind}")
        written_zone = None
    zone = written_zone
    if expression.startswith(_ZONE_PREFIXES):
        prefix, _, expression = expression.partition(" ")
        expression = expression.strip()
        zone = prefix.partition("=")[2]
        zone_origin = "spec.schedule"
        if written_zone is not None and written_zone != zone:
            # The CronJob controller uses the schedule as written when it names a zone.
            problem(
                "spec.timeZone",
                f"{cronjob_problems.show(written_zone)} is ignored by CronJob when the schedule "
                f"starts with {prefix}: wrote timeZone {cronjob_problems.show(zone)}",
            )
        if not expression:
            problem(
                "spec.schedule",
                f"{cronjob_problems.show(raw)} has no expression after {prefix}",
            )
            return result(None, zone_origin=zone_origin)
    if expression.startswith(_EVERY):
        seconds = _every_seconds(expression.removeprefix(_EVERY).strip())
        if seconds is None:
            problem(
                "spec.schedule",
                f"{cronjob_problems.show(raw)}: not a Go duration after @every",
            )
            return result(None, zone_origin=zone_origin)
        every = durations.format(timedelta(seconds=seconds))
        problem(
            "spec.schedule",
            f"{cronjob_problems.show(raw)}: CronJob counts it from its last run, a ScheduledJob "
            f"from the Unix epoch: wrote every: {every} (the same period, another phase)",
        )
        return result({"every": every}, zone_origin=zone_origin)
    if zone is None:
        zone = default_time_zone
        zone_origin = "spec.timeZone"
    fields = {"schedule": expression, "timeZone": zone, "dst": dict(CRONJOB_DST)}
    return result(fields, zone_origin=zone_origin)


def _every_seconds(text: str) -> int | None:
    """The period of CronJob's ``@every <Go duration>``: whole seconds, at least 1 (as robfig/cron
    rounds it); None for what Go's ``time.ParseDuration`` refuses."""
    nanoseconds = _go_duration_ns(text)
    if nanoseconds is None:
        return None
    return max(1, nanoseconds // 10**9)


def _go_duration_ns(text: str) -> int | None:
    sign, body = (-1, text[1:]) if text.startswith("-") else (1, text.removeprefix("+"))
    if body == "0":
        return 0
    if not body:
        return None
    total = Fraction(0)
    position = 0
    while position < len(body):
        term = _GO_TERM.match(body, position)
        if term is None or term.group(1) in ("", "."):
            return None
        total += Fraction(term.group(1)) * _GO_UNITS_NS[term.group(2)]
        position = term.end()
    return sign * int(total)
