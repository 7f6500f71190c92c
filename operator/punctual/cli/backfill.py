"""``punctual backfill NAME --from T1 --to T2``: run a ScheduledJob's slots of a past window,
once each, oldest first, and print the progress.

It checks the window against the job's own schedule first (the spec as the operator reads it):
at most ``scheduling.backfill.MAX_SLOTS`` slots, and wholly in the past. Then it sets the
``punctual.dev/backfill`` annotation (a fresh token and the window, JSON) and reads the object
once a second: ``status.backfill`` says how far the replica that took the request has come. Exit
status: 0 when every slot was dealt with and every run that started succeeded; 1 when a run did
not succeed, or no end came within ``--timeout``; 2 for a bad window, or a job or cluster that
cannot be reached.
"""

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from punctual.api import annotations, planning, spec_bounds, spec_parsing, status_reader
from punctual.cli import namespaces, trigger
from punctual.kube import client, spec_api, status_api
from punctual.scheduling import backfill, durations, hashed, timeline
from punctual.scheduling.errors import InvalidSpecError

PROG = "punctual backfill"


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = commands.add_parser(
        "backfill",
        help="run a ScheduledJob's slots of a past window, once each",
        description="Run the slots of a ScheduledJob's schedule in [--from, --to], oldest "
        f"first, once each (at most {backfill.MAX_SLOTS}; a slot that ran already, or that "
        "runs elsewhere, does not run again), printing the progress. Exit status: 0 all dealt "
        "with and every run succeeded; 1 a run did not, or no end in time; 2 a bad window, or "
        "the job or the cluster cannot be reached.",
    )
    parser.add_argument("name", metavar="NAME", help="the ScheduledJob")
    namespaces.add_option(parser)
    parser.add_argument("--from", dest="start", required=True, metavar="RFC3339")
    parser.add_argument("--to", dest="end", required=True, metavar="RFC3339")
    parser.add_argument(
        "--timeout", default="1h", metavar="DURATION", help="how long to wait (default: 1h)"
    )
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    try:
        start = _instant(arguments.start, option="--from")
        end = _instant(arguments.end, option="--to")
        wait = durations.parse(arguments.timeout, field="--timeout")
    except InvalidSpecError as error:
        return _fail(str(error), status=2)
    try:
        namespace = namespaces.chosen(arguments)
    except client.UnreadableKubeconfigError as error:
        return _fail(str(error), status=2)
    try:
        return asyncio.run(_backfill(namespace, arguments.name, start=start, end=end, wait=wait))
    except status_api.GoneError:
        return _fail(f"ScheduledJob {namespace}/{arguments.name} not found", status=2)
    except status_api.UnavailableError as error:
        return _fail(f"the API server did not answer: {error}", status=2)


def check_window(
    spec: Mapping[str, Any],
    *,
    uid: str,
    hash_key: str,
    start: datetime,
    end: datetime,
    now: datetime,
) -> str | None:
    """Why the window cannot be backfilled (None when it can); ``hash_key`` as the operator
    derives the job's ``H`` values."""
    if start > end:
        return "--from is after --to"
    if end > now:
        return f"--to is in the future ({timeline.rfc3339(end)}): backfill runs past slots only"
    try:
        plan = planning.plan_for(
            spec_parsing.parse_spec(spec), uid=uid, hash_key=hash_key, bounds=spec_bounds.UNBOUNDED
        )
    except InvalidSpecError as error:
        return f"the job's spec is invalid: {error}"
    found = backfill.window(plan.schedule, start=start, end=end)
    if found.more:
        return (
            f"the window holds more than {backfill.MAX_SLOTS} slots: narrow it (the "
            f"{backfill.MAX_SLOTS}th is {timeline.rfc3339(found.slots[-1])})"
        )
    if not found.slots:
        return "the window holds no slot of the job's schedule"
    return None


def progress_line(progress: Mapping[str, Any]) -> str:
    waiting = progress.get("waiting")
    if waiting:
        return f"waiting: {waiting}"
    return (
        f"{progress.get('done', 0)}/{progress.get('total', 0)} slots: "
        f"{progress.get('succeeded', 0)} succeeded, {progress.get('failed', 0)} did not, "
        f"{progress.get('skipped', 0)} skipped (ran already or elsewhere)"
    )


async def _backfill(
    namespace: str, name: str, *, start: datetime, end: datetime, wait: timedelta
) -> int:
    api = await client.connect()
    try:
        objects = spec_api.SpecApi(api)
        body = await objects.read(namespace, name)
        problem = check_window(
            body.get("spec") or {},
            uid=body["metadata"]["uid"],
            hash_key=hashed.job_key(namespace=namespace, name=name),
            start=start,
            end=end,
            now=datetime.now(UTC),
        )
        if problem is not None:
            return _fail(problem, status=2)
        token = trigger.fresh_token(datetime.now(UTC))
        request = {"token": token, "from": timeline.rfc3339(start), "to": timeline.rfc3339(end)}
        await objects.annotate(namespace, name, {annotations.BACKFILL: json.dumps(request)})
        print(f"{namespace}/{name}: asked for a backfill ({token})", flush=True)
        shown = ""
        try:
            async with asyncio.timeout(wait.total_seconds()):
                while True:
                    await asyncio.sleep(trigger.POLL_SECONDS)
                    body = await objects.read(namespace, name)
                    progress = status_reader.backfill(status_reader.of(body))
                    if progress.get("token") != token:
                        continue
                    line = progress_line(progress)
                    if line != shown:
                        print(line, flush=True)
                        shown = line
                    if progress.get("finished"):
                        return 0 if not progress.get("failed") else _fail(line)
        except TimeoutError:
            return _fail(f"the backfill did not end within {durations.format(wait)}")
    finally:
        await api.close()


def _instant(text: str, *, option: str) -> datetime:
    try:
        return timeline.parse_rfc3339(text)
    except ValueError:
        raise InvalidSpecError(option, f"{text!r} is no RFC 3339 instant") from None


def _fail(message: str, *, status: int = 1) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return status
