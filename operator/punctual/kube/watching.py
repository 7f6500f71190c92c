"""The loop of an informer: list, then watch from the list's resourceVersion, for ever.

A watch ends every ``WATCH_SECONDS`` (its server-side timeout) and is resumed where it stopped;
a failure waits ``RETRY_DELAYS`` (the last one repeated) and resumes too; a 410 Gone (the
resourceVersion is too old to resume from) lists again at once. The loop ends only when it is
cancelled. What a listing and an event mean is the caller's: the membership Leases
(``punctual.kube.membership``) and the job target's batch Jobs (``punctual.targets.job``).
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from kubernetes_asyncio import watch
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.contracts import records

logger = logging.getLogger(__name__)

WATCH_SECONDS = 300
"""The server-side timeout of one watch request; it is then resumed where it stopped."""
RETRY_DELAYS = (0.5, 1.0, 2.0, 5.0, 10.0)
"""Seconds between attempts after a failed list or watch, the last one repeated."""
EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})
"""The events handed on; bookmarks only move the resourceVersion."""


@dataclass(frozen=True, kw_only=True)
class Watched:
    """One collection to follow, and what to do with what is seen of it."""

    what: str
    """For the log: ``Leases in punctual-system``."""
    relist: Callable[[], Awaitable[str]]
    """Lists the collection, takes the listing in, and returns its resourceVersion."""
    function: Callable[..., Any]
    """The generated client's list function, whose watch is followed."""
    arguments: Sequence[Any] = ()
    label_selector: str | None = None
    on_event: Callable[[str, Mapping[str, Any]], None]
    """Called with the event's type (one of ``EVENT_TYPES``) and the object's JSON body."""


async def follow(watched: Watched) -> NoReturn:
    """List and watch ``watched`` until cancelled."""
    resource_version: str | None = None
    failures = 0
    while True:
        try:
            if resource_version is None:
                resource_version = await watched.relist()
            resource_version = await _watch(watched, resource_version)
            failures = 0
        except ApiException as error:
            if error.status == 410:
                logger.info("the watch of %s expired (410 Gone): listing again", watched.what)
                resource_version = None
                continue
            failures += 1
            await _pause(watched.what, f"HTTP {error.status} {error.reason}", failures)
        except Exception as error:  # whatever it was, the watch must go on
            failures += 1
            await _pause(watched.what, records.describe_error(error), failures)


async def _pause(what: str, problem: str, failures: int) -> None:
    delay = RETRY_DELAYS[min(failures, len(RETRY_DELAYS)) - 1]
    log = logger.warning if failures in (1, len(RETRY_DELAYS)) else logger.debug
    log("watching %s failed (%s); again in %.1fs", what, problem, delay)
    await asyncio.sleep(delay)


async def _watch(watched: Watched, resource_version: str) -> str:
    """Follow one watch request to its end; the resourceVersion to resume from."""
    selector = {} if watched.label_selector is None else {"label_selector": watched.label_selector}
    # return_type "object": events keep their JSON dicts, no model classes on the way.
    async with watch.Watch(return_type="object") as stream:
        async for event in stream.stream(
            watched.function,
            *watched.arguments,
            **selector,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_SECONDS,
            _request_timeout=WATCH_SECONDS + 30,
        ):
            kind = event.get("type")
            body = event.get("raw_object")
            if kind in EVENT_TYPES and isinstance(body, Mapping):
                watched.on_event(kind, body)
            resource_version = stream.resource_version or resource_version
    return resource_version
