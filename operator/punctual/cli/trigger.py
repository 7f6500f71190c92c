"""``punctual trigger NAME``: run a ScheduledJob once more, now, and wait for its result.

It sets a fresh token on the ``punctual.dev/run-now`` annotation (what ``kubectl annotate``
would do by hand), then reads the object once a second until its status records the run of that
token: exit status 0 when it succeeded, 1 when it did not (failed, timed out, lost, or skipped
by the concurrency policy), and 1 with a message when no result came within ``--timeout`` or
the job is not scheduled (its Ready condition is False). 2: the job or the cluster cannot be
reached, or a bad option.
"""

import argparse
import asyncio
import secrets
import sys
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from punctual.api import annotations, condition_models, status_reader
from punctual.cli import namespaces
from punctual.kube import client, resources, spec_api, status_api
from punctual.scheduling import durations
from punctual.scheduling.errors import InvalidSpecError

PROG = "punctual trigger"
POLL_SECONDS = 1.0
"""Every result ends what a token asked for (a Cancelled run too: it did not succeed)."""


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = commands.add_parser(
        "trigger",
        help="run a ScheduledJob once now and wait for its result",
        description="Run a ScheduledJob once more, now (a fresh punctual.dev/run-now token), "
        "and wait for the run's result in its status. Exit status: 0 it succeeded; 1 it did "
        "not, or no result in time; 2 the job or the cluster cannot be reached.",
    )
    parser.add_argument("name", metavar="NAME", help="the ScheduledJob")
    namespaces.add_option(parser)
    parser.add_argument(
        "--timeout",
        default="15m",
        metavar="DURATION",
        help="how long to wait for the result (default: 15m)",
    )
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    try:
        timeout = durations.parse(arguments.timeout, field="timeout")
    except InvalidSpecError as error:
        return _fail(f"--timeout: {error.problem}", status=2)
    try:
        namespace = namespaces.chosen(arguments)
    except client.UnreadableKubeconfigError as error:
        return _fail(str(error), status=2)
    try:
        return asyncio.run(_trigger(namespace, arguments.name, wait=timeout))
    except status_api.GoneError:
        return _fail(f"ScheduledJob {namespace}/{arguments.name} not found", status=2)
    except status_api.UnavailableError as error:
        return _fail(f"the API server did not answer: {error}", status=2)


def fresh_token(now: datetime) -> str:
    """A token no one set before: the time, and random digits for two triggers in a second."""
    return f"{now.astimezone(UTC):%Y%m%dt%H%M%S}-{secrets.token_hex(4)}"


def result_of(body: resources.Body, token: str) -> Mapping[str, Any] | None:
    """The finished run of ``token`` that ``body``'s status records, if any."""
    return status_reader.run_of_token(status_reader.of(body), token)


def not_scheduled(body: resources.Body) -> str | None:
    """The Ready condition's message when it is False (nothing will run), else None."""
    ready = status_reader.condition(status_reader.of(body), condition_models.READY)
    if ready is not None and ready.get("status") == "False":
        return f"{ready.get('reason')}: {ready.get('message')}"
    return None


async def _trigger(namespace: str, name: str, *, wait: timedelta) -> int:
    api = await client.connect()
    try:
        objects = spec_api.SpecApi(api)
        body = await objects.read(namespace, name)
        problem = not_scheduled(body)
        if problem is not None:
            return _fail(f"{namespace}/{name} is not scheduled ({problem}): nothing run")
        token = fresh_token(datetime.now(UTC))
        await objects.annotate(namespace, name, {annotations.RUN_NOW: token})
        print(f"{namespace}/{name}: asked for a run ({annotations.RUN_NOW}={token})", flush=True)
        try:
            async with asyncio.timeout(wait.total_seconds()):
                while True:
                    await asyncio.sleep(POLL_SECONDS)
                    body = await objects.read(namespace, name)
                    found = result_of(body, token)
                    if found is not None:
                        return _report(found)
        except TimeoutError:
            return _fail(f"no result for {token} within {durations.format(wait)}")
    finally:
        await api.close()


def _report(run: Mapping[str, Any]) -> int:
    result, message = run.get("result"), run.get("message") or ""
    line = f"{result}" + (f": {message}" if message else "")
    if result == "Succeeded":
        print(line)
        return 0
    return _fail(line)


def _fail(message: str, *, status: int = 1) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return status
