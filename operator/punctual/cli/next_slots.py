"""``punctual next``: the next fire times of a schedule, with notes on DST adjustments."""

import argparse
import json
import sys
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from punctual.scheduling import cron, dst, hashed, schedules, timeline, zones
from punctual.scheduling.errors import InvalidSpecError


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = commands.add_parser(
        "next",
        help="print the next fire times of a schedule",
        description="Print the next fire times of a cron SCHEDULE or of --every, in a time zone, "
        "with the DST rules the operator applies.",
    )
    parser.add_argument("schedule", nargs="?", metavar="SCHEDULE", help="cron expression")
    parser.add_argument("--every", metavar="DURATION", help="fixed interval, e.g. 10s or 1h30m")
    parser.add_argument("--tz", default="UTC", metavar="ZONE", help="IANA time zone")
    parser.add_argument(
        "--job",
        metavar="NAMESPACE/NAME",
        help="the ScheduledJob whose H values the schedule's H stands for (printed to stderr)",
    )
    parser.add_argument("--after", metavar="RFC3339", help="start instant (default: now)")
    parser.add_argument("-n", type=int, default=5, dest="count", metavar="COUNT")
    parser.add_argument(
        "--nonexistent", choices=[rule.value for rule in dst.Nonexistent], default="ShiftForward"
    )
    parser.add_argument(
        "--ambiguous", choices=[rule.value for rule in dst.Ambiguous], default="First"
    )
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    try:
        schedule = schedules.build(
            schedule=arguments.schedule,
            every=arguments.every,
            time_zone=arguments.tz,
            rules=dst.DstRules(
                nonexistent=dst.Nonexistent(arguments.nonexistent),
                ambiguous=dst.Ambiguous(arguments.ambiguous),
            ),
            field_prefix="",
            hash_key=_hash_key(arguments.job),
        )
        after = _parse_after(arguments.after)
        if arguments.count < 1:
            raise InvalidSpecError("-n", "must be at least 1")
    except InvalidSpecError as error:
        print(f"punctual next: {_as_option(error)}", file=sys.stderr)
        return 2
    if arguments.job is not None and isinstance(schedule, cron.CronSchedule):
        print(f"punctual next: for {arguments.job}: {schedule.expression}", file=sys.stderr)
    occurrences = _take(schedule, after=after, count=arguments.count)
    zone = zones.parse(arguments.tz)
    if arguments.output == "json":
        print(json.dumps([_as_json(occurrence, zone) for occurrence in occurrences], indent=2))
    else:
        for occurrence in occurrences:
            print(_as_text(occurrence, zone))
    if len(occurrences) < arguments.count:
        print(
            "punctual next: the schedule has no further slot within ten years of the last one "
            "(of the start instant when none is shown)",
            file=sys.stderr,
        )
    return 0


def _take(schedule: timeline.Schedule, *, after: datetime, count: int) -> list[timeline.Occurrence]:
    """At most ``count`` slots: fewer when the schedule has no more within the search limit."""
    occurrences = []
    for _ in range(count):
        occurrence = schedule.next_after(after)
        if occurrence is None:
            break
        occurrences.append(occurrence)
        after = occurrence.at
    return occurrences


def _hash_key(job: str | None) -> str | None:
    if job is None:
        return None
    namespace, _, name = job.partition("/")
    if not namespace or not name or "/" in name:
        raise InvalidSpecError("--job", f"{job!r} is not NAMESPACE/NAME")
    return hashed.job_key(namespace=namespace, name=name)


EARLIEST_AFTER = datetime(2, 1, 1, tzinfo=UTC)
"""``--after`` from here on: a year of margin, so that local times in any zone exist."""
LATEST_AFTER = datetime(9000, 1, 1, tzinfo=UTC)
"""``--after`` before this: the search for slots never looks past it (``timeline``), and local
times near year 9999 would fall off the calendar."""


def _parse_after(text: str | None) -> datetime:
    if text is None:
        return datetime.now(UTC)
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidSpecError("--after", f"{text!r} is not an RFC 3339 timestamp") from None
    if instant.tzinfo is None:
        raise InvalidSpecError("--after", f"{text!r} needs an offset, e.g. 2026-10-25T00:00:00Z")
    try:
        in_range = EARLIEST_AFTER <= instant < LATEST_AFTER
    except OverflowError:  # an offset that takes it past year 1 or 9999 in UTC
        in_range = False
    if not in_range:
        raise InvalidSpecError(
            "--after",
            f"{text!r} is not between {EARLIEST_AFTER.date()} and {LATEST_AFTER.date()}",
        )
    return instant


def _as_option(error: InvalidSpecError) -> str:
    """Name command-line options as the user typed them: ``--every``, not ``every``."""
    options = {"schedule": "SCHEDULE", "every": "--every", "timeZone": "--tz"}
    return f"{options.get(error.field, error.field)}: {error.problem}"


def _as_json(occurrence: timeline.Occurrence, zone: ZoneInfo) -> dict[str, str]:
    entry = {"utc": timeline.rfc3339(occurrence.at), "local": _local(occurrence, zone)}
    if occurrence.adjustment is not None:
        entry["adjustment"] = occurrence.adjustment.value
        entry["note"] = _note(occurrence)
    return entry


def _local(occurrence: timeline.Occurrence, zone: ZoneInfo) -> str:
    """RFC 3339 in the zone, milliseconds only when there are any."""
    return occurrence.at.astimezone(zone).isoformat(timespec="milliseconds").replace(".000", "")


def _as_text(occurrence: timeline.Occurrence, zone: ZoneInfo) -> str:
    name = occurrence.at.astimezone(zone).tzname()
    line = f"{_local(occurrence, zone)}  {name:<6} {timeline.rfc3339(occurrence.at)}"
    if occurrence.adjustment is not None:
        line += f"  # {_note(occurrence)}"
    return line


def _note(occurrence: timeline.Occurrence) -> str:
    nominal = occurrence.nominal.strftime("%H:%M:%S").removesuffix(":00")
    day = occurrence.nominal.date().isoformat()
    match occurrence.adjustment:
        case timeline.Adjustment.SHIFTED_FORWARD:
            return (
                f"{nominal} does not exist on {day} (clocks spring forward): "
                "shifted to the end of the gap"
            )
        case timeline.Adjustment.FIRST_OF_REPEATED:
            return f"{nominal} happens twice on {day} (clocks fall back): first occurrence"
        case timeline.Adjustment.SECOND_OF_REPEATED:
            return f"{nominal} happens twice on {day} (clocks fall back): second occurrence"
        case None:
            return ""
