"""``punctual next``: the next fire times of a schedule, with notes on DST adjustments; of a
ScheduledJob's manifest (``-f``), with the entries of ``spec.schedules`` that fire each slot
and the slots its exclusions leave out (marked, not run), after what its runs do (its target,
and a queue target's format, as ``kubectl get``'s TARGET column shows it) on stderr.

The Calendars a job names (``spec.exclude.calendars``) come with it: several ``-f``, or
several documents in one file, as ``kubectl get sj,calendar -o yaml`` writes them. A Calendar
the job names and the input lacks is an error rather than a silent omission: without it, slots
on its days would be shown as running."""

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from punctual.api import (
    annotations,
    day_models,
    exclusion_plans,
    models,
    planning,
    spec_bounds,
    spec_parsing,
)
from punctual.cli import convert
from punctual.scheduling import cron, dst, exclusions, hashed, plans, schedules, timeline, zones
from punctual.scheduling.errors import InvalidSpecError


@dataclass(frozen=True, slots=True)
class Slot:
    occurrence: timeline.Occurrence
    fired_by: tuple[str, ...] = ()
    """The entries of ``spec.schedules`` with a slot at it (none for one schedule)."""
    excluded: bool = False


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = commands.add_parser(
        "next",
        help="print the next fire times of a schedule",
        description="Print the next fire times of a cron SCHEDULE or of --every, in a time zone, "
        "with the DST rules the operator applies.",
    )
    parser.add_argument("schedule", nargs="?", metavar="SCHEDULE", help="cron expression")
    parser.add_argument(
        "-f",
        "--file",
        action="append",
        metavar="FILE",
        help="a ScheduledJob manifest instead of SCHEDULE ('-': stdin, e.g. kubectl get sj "
        "NAME -o yaml): its schedules, zone, H values and exclusions; each slot names the "
        "entries of spec.schedules that fire it, and excluded slots are marked. The Calendars "
        "it names come along: -f again, or more documents (or a List) in the same file",
    )
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
    if arguments.file is not None:
        return _run_manifest(arguments)
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


def _run_manifest(arguments: argparse.Namespace) -> int:
    try:
        if arguments.schedule is not None or arguments.every is not None:
            raise InvalidSpecError("--file", "give SCHEDULE, --every or --file, not several")
        job, calendars = _manifests([convert.read(name) for name in arguments.file])
        plan, zone, target = plan_of(job, calendars=calendars)
        after = _parse_after(arguments.after)
        if arguments.count < 1:
            raise InvalidSpecError("-n", "must be at least 1")
    except exclusion_plans.CalendarNotFoundError as error:
        print(
            f"punctual next: {_as_option(error)}: give its manifest with -f "
            "(kubectl get calendar NAME -o yaml)",
            file=sys.stderr,
        )
        return 2
    except InvalidSpecError as error:
        print(f"punctual next: {_as_option(error)}", file=sys.stderr)
        return 2
    except convert.UnreadableInputError as error:
        print(f"punctual next: {error}", file=sys.stderr)
        return 2
    name = (job.get("metadata") or {}).get("name")
    print(f"punctual next: {_namespace(job)}/{name}: target {target}", file=sys.stderr)
    found = slots_of(plan, after=after, count=arguments.count)
    if arguments.output == "json":
        print(json.dumps([_slot_json(slot, zone) for slot in found], indent=2))
    else:
        for slot in found:
            print(_slot_text(slot, zone))
    return 0


def _manifests(
    sources: list[convert.Source],
) -> tuple[Mapping[str, Any], dict[str, Mapping[str, object]]]:
    """The one ScheduledJob of ``sources`` and the specs of their Calendars by name (a
    ``List`` counts as its items). A Calendar of another namespace than the job's, or one
    given twice, is refused: the operator reads only those of the job's namespace."""
    found = [
        (source.name, document)
        for source in sources
        for listed in source.documents
        for document in _items(listed)
    ]
    jobs = [document for _, document in found if document.get("kind") == models.KIND]
    calendars: dict[str, Mapping[str, object]] = {}
    names = ", ".join(dict.fromkeys(name for name, _ in found)) or "the input"
    if len(jobs) != 1:
        raise InvalidSpecError("--file", f"{names}: expected one {models.KIND}")
    namespace = _namespace(jobs[0])
    for name, document in found:
        kind = document.get("kind")
        if kind == models.KIND:
            continue
        metadata = document.get("metadata") or {}
        calendar = str(metadata.get("name") or "")
        if kind != day_models.CALENDAR_KIND or not calendar:
            raise InvalidSpecError(
                "--file", f"{name}: expected a {models.KIND} and named {day_models.CALENDAR_KIND}s"
            )
        if _namespace(document) != namespace:
            raise InvalidSpecError(
                "--file",
                f"{name}: {day_models.CALENDAR_KIND} {calendar!r} is in namespace "
                f"{_namespace(document)!r}, the job in {namespace!r}",
            )
        if calendar in calendars:
            raise InvalidSpecError(
                "--file", f"{name}: {day_models.CALENDAR_KIND} {calendar!r} is given twice"
            )
        calendars[calendar] = document.get("spec") or {}
    return jobs[0], calendars


def _items(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A ``List``'s objects (what ``kubectl get -o yaml`` writes for several), else itself."""
    if document.get("kind") != "List":
        return [document]
    items = document.get("items") or []
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise InvalidSpecError("--file", "a List's items must be objects")
    return items


def _namespace(document: Mapping[str, Any]) -> str:
    """Where ``kubectl apply`` would put ``document`` without ``-n``."""
    return str((document.get("metadata") or {}).get("namespace") or "default")


def plan_of(
    manifest: Mapping[str, Any], *, calendars: Mapping[str, Mapping[str, object]]
) -> tuple[plans.JobPlan, ZoneInfo, str]:
    """The plan the operator would arm for ``manifest`` (with its ``H`` values and the slots
    its ``punctual.dev/skip`` annotation and the ``calendars`` it names leave out), the
    zone to show its slots in, and its target as ``status.target`` shows it."""
    metadata = manifest.get("metadata") or {}
    spec = spec_parsing.parse_spec(manifest.get("spec") or {})
    skip = (metadata.get("annotations") or {}).get(annotations.SKIP)
    skipped = annotations.parse_skipped(skip) if isinstance(skip, str) else frozenset()
    if isinstance(skipped, str):
        raise InvalidSpecError("--file", skipped)
    key = hashed.job_key(namespace=_namespace(manifest), name=str(metadata.get("name")))
    plan = planning.plan_for(
        spec,
        uid=str(metadata.get("uid") or ""),
        hash_key=key,
        bounds=spec_bounds.UNBOUNDED,
        skipped=skipped,
        calendars=calendars,
    )
    zone = zones.parse(spec.time_zone, field="spec.timeZone")
    return plan, zone, planning.shown_target(spec)


def slots_of(plan: plans.JobPlan, *, after: datetime, count: int) -> list[Slot]:
    """The next ``count`` slots of ``plan``'s timeline, the excluded ones among them marked."""
    schedule = plan.schedule
    left_out = schedule.exclusions if isinstance(schedule, exclusions.Excluding) else None
    timeline_of = schedule.schedule if isinstance(schedule, exclusions.Excluding) else schedule
    return [
        Slot(
            occurrence,
            fired_by=plan.fired_by(occurrence.at),
            excluded=left_out is not None and left_out.excludes(occurrence.at),
        )
        for occurrence in _take(timeline_of, after=after, count=count)
    ]


def _slot_text(slot: Slot, zone: ZoneInfo) -> str:
    line = _as_text(slot.occurrence, zone)
    if slot.fired_by:
        line += f"  [{', '.join(slot.fired_by)}]"
    if slot.excluded:
        line += "  # excluded: not run"
    return line


def _slot_json(slot: Slot, zone: ZoneInfo) -> dict[str, Any]:
    entry: dict[str, Any] = dict(_as_json(slot.occurrence, zone))
    if slot.fired_by:
        entry["schedules"] = list(slot.fired_by)
    if slot.excluded:
        entry["excluded"] = True
    return entry


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
