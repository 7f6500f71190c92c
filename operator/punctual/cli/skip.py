"""``punctual skip NAME --at T | --next`` and ``punctual unskip NAME --at T | --all``: leave one
occurrence of a ScheduledJob out, or take that back.

The skipped slots live in the ``punctual.dev/skip`` annotation (what ``kubectl annotate`` would
do by hand); the operator re-plans the job when it changes, and counts each skipped slot
``excluded`` as it passes. The slot is checked against the job's own schedule first (the spec
as the operator reads it, with the days of the Calendars it names, read from its namespace):
``--at`` must name one of its slots ahead that would run (its scheduled time, or that time with
the job's jitter, as ``status.nextScheduleTime`` shows it), and ``--next`` is the next slot
that would run, never one a Calendar leaves out already. Slots already past
are dropped from the annotation on each edit, so it never grows beyond the slots ahead. The
edit is made on the version read (``metadata.resourceVersion``): two edits at once do not
lose one. Exit status: 0 done; 1 nothing to do (no such slot, skipped already, not skipped);
2 a bad option, or the job or the cluster cannot be reached.
"""

import argparse
import asyncio
import sys
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from punctual.api import annotations, planning, spec_bounds, spec_parsing
from punctual.cli import namespaces
from punctual.controller.calendars import named
from punctual.kube import client, spec_api, status_api
from punctual.scheduling import exclusions, hashed, timeline
from punctual.scheduling.errors import InvalidSpecError

_TICK = timedelta(microseconds=1)


class NothingToDoError(Exception):
    """The edit asked for changes nothing: the message says why."""


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    skip = commands.add_parser(
        "skip",
        help="leave one occurrence of a ScheduledJob out",
        description="Leave one slot of a ScheduledJob out (punctual.dev/skip): it does not "
        "run, and is counted excluded. Exit status: 0 done; 1 no such slot ahead, or skipped "
        "already; 2 a bad option, or the job or the cluster cannot be reached.",
    )
    _common(skip)
    which = skip.add_mutually_exclusive_group(required=True)
    which.add_argument("--at", metavar="RFC3339", help="the slot's scheduled time")
    which.add_argument("--next", action="store_true", help="the next slot that would run")
    skip.set_defaults(handler=run)
    unskip = commands.add_parser(
        "unskip",
        help="take back a skipped occurrence",
        description="Take back a slot left out with punctual skip: it runs as scheduled. Exit "
        "status: 0 done; 1 it was not skipped; 2 a bad option, or the job or the cluster "
        "cannot be reached.",
    )
    _common(unskip)
    which = unskip.add_mutually_exclusive_group(required=True)
    which.add_argument("--at", metavar="RFC3339", help="the slot's scheduled time")
    which.add_argument("--all", action="store_true", help="every slot skipped")
    unskip.set_defaults(handler=run)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="the ScheduledJob")
    namespaces.add_option(parser)


def skipping(
    spec: Mapping[str, Any],
    *,
    uid: str,
    hash_key: str,
    current: str | None,
    at: datetime | None,
    now: datetime,
    calendars: Mapping[str, Mapping[str, object]],
) -> tuple[datetime, str]:
    """The slot to skip (``at``, or the next one that would run when None) and the
    annotation's new value; ``hash_key`` as the operator derives the job's ``H`` values,
    ``calendars`` the specs by name of the Calendars of the job's namespace it names.
    Raises ``InvalidSpecError`` (a bad spec or annotation, a Calendar named and missing) or
    ``NothingToDoError``."""
    kept = _ahead(current, now=now)
    parsed = spec_parsing.parse_spec(spec)
    plan = planning.plan_for(
        parsed, uid=uid, hash_key=hash_key, bounds=spec_bounds.UNBOUNDED, calendars=calendars
    )
    if at is None:
        found = plan.schedule.next_after(now)
        while found is not None and found.at in kept:
            found = plan.schedule.next_after(found.at)
        if found is None:
            raise NothingToDoError("the job has no slot ahead")
        slot = found.at
    else:
        slot = _slot_at(plan.schedule, at, offset=plan.offset, now=now)
        if slot in kept:
            raise NothingToDoError(f"the slot at {timeline.rfc3339(slot)} is skipped already")
    if len(kept) >= exclusions.MAX_SKIPPED:
        raise NothingToDoError(
            f"{exclusions.MAX_SKIPPED} slots ahead are skipped already: the most at once "
            "(spec.exclude leaves days out)"
        )
    return slot, annotations.format_skipped(kept | {slot})


def unskipping(current: str | None, *, at: datetime | None, now: datetime) -> str | None:
    """The annotation's new value without ``at`` (None: without any), None to remove it.
    Raises ``InvalidSpecError`` (a malformed annotation) or ``NothingToDoError``."""
    kept = _ahead(current, now=now)
    if at is None:
        if not kept:
            raise NothingToDoError("no slot ahead is skipped")
        return None
    left = {slot for slot in kept if slot != at}
    if len(left) == len(kept):
        raise NothingToDoError(f"the slot at {timeline.rfc3339(at)} is not skipped")
    return annotations.format_skipped(left) if left else None


def _ahead(current: str | None, *, now: datetime) -> frozenset[datetime]:
    if current is None:
        return frozenset()
    skipped = annotations.parse_skipped(current)
    if isinstance(skipped, str):
        raise InvalidSpecError(f"metadata.annotations[{annotations.SKIP}]", skipped)
    return frozenset(slot for slot in skipped if slot > now)


def _slot_at(
    schedule: timeline.Schedule, at: datetime, *, offset: timedelta, now: datetime
) -> datetime:
    """The slot ``at`` names: its scheduled time, or that time with the job's jitter."""
    if at <= now:
        raise NothingToDoError(f"--at {timeline.rfc3339(at)} is past: skip slots ahead")
    for slot in (at, at - offset):
        found = schedule.next_after(slot - _TICK)
        if found is not None and found.at == slot:
            return slot
    after = schedule.next_after(at)
    nearest = f" (the next is {timeline.rfc3339(after.at)})" if after is not None else ""
    raise NothingToDoError(
        f"--at {timeline.rfc3339(at)} is no slot of the job's schedule, or one it leaves out "
        f"already{nearest}"
    )


def run(arguments: argparse.Namespace) -> int:
    prog = f"punctual {arguments.command}"
    try:
        at = _instant(arguments.at) if arguments.at is not None else None
        namespace = namespaces.chosen(arguments)
    except InvalidSpecError as error:
        return _fail(prog, str(error), status=2)
    except client.UnreadableKubeconfigError as error:
        return _fail(prog, str(error), status=2)
    try:
        said = asyncio.run(
            _edit(namespace, arguments.name, at=at, skip=arguments.command == "skip")
        )
    except status_api.GoneError:
        return _fail(prog, f"ScheduledJob {namespace}/{arguments.name} not found", status=2)
    except status_api.ConflictError:
        return _fail(prog, "the job changed while it was edited: run it again")
    except status_api.UnavailableError as error:
        return _fail(prog, f"the API server did not answer: {error}", status=2)
    except InvalidSpecError as error:
        return _fail(prog, str(error), status=2)
    except NothingToDoError as error:
        return _fail(prog, str(error))
    print(f"{namespace}/{arguments.name}: {said}")
    return 0


async def _edit(namespace: str, name: str, *, at: datetime | None, skip: bool) -> str:
    """Edit the annotation and say what was done."""
    api = await client.connect()
    try:
        objects = spec_api.SpecApi(api)
        body = await objects.read(namespace, name)
        metadata = body["metadata"]
        current = (metadata.get("annotations") or {}).get(annotations.SKIP)
        now = datetime.now(UTC)
        if skip:
            calendars = await objects.read_calendars(namespace, named(body))
            slot, value = skipping(
                body.get("spec") or {},
                uid=metadata["uid"],
                hash_key=hashed.job_key(namespace=namespace, name=name),
                current=current,
                at=at,
                now=now,
                calendars=calendars,
            )
            said = f"the slot at {timeline.rfc3339(slot)} is skipped"
            new: str | None = value
        else:
            new = unskipping(current, at=at, now=now)
            said = (
                "no slot is skipped" if at is None else f"the slot at {timeline.rfc3339(at)} runs"
            )
        await objects.annotate(
            namespace,
            name,
            {annotations.SKIP: new},
            resource_version=metadata.get("resourceVersion"),
        )
        return f"{said} ({annotations.SKIP}={new or ''})"
    finally:
        await api.close()


def _instant(text: str) -> datetime:
    try:
        return timeline.parse_rfc3339(text)
    except ValueError:
        raise InvalidSpecError("--at", f"{text!r} is no RFC 3339 instant") from None


def _fail(prog: str, message: str, *, status: int = 1) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return status
