"""The loop of an informer: list, then watch from the list's resourceVersion, for ever.

A watch ends every ``WATCH_SECONDS`` (its server-side timeout) and is resumed where it stopped;
a failure waits ``RETRY_DELAYS`` (the last one repeated) and resumes too; a 410 Gone (the
resourceVersion is too old to resume from, or a listing's continue token expired) lists again
at once, from the start. The loop ends only when it is cancelled. What a listing and an event
mean is the caller's: the membership Leases (``punctual.kube.membership``), the job target's
batch Jobs (``punctual.targets.job``) and the ScheduledJobs (``punctual.controller.job_events``).

A collection others can write to (any tenant may label a Job) is listed in pages
(``list_in_pages``): one unpaged answer would hold every object at once, however many and
however big.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from kubernetes_asyncio import watch
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.contracts import records

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

WATCH_SECONDS = 300
"""The server-side timeout of one watch request; it is then resumed where it stopped."""
RETRY_DELAYS = (0.5, 1.0, 2.0, 5.0, 10.0)
"""Seconds between attempts after a failed list or watch, the last one repeated."""
EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})
"""The events handed on; bookmarks only move the resourceVersion."""
LIST_PAGE_SIZE = 50
"""The most objects one page of a listing asks for (its ``limit``): what a listing holds at once
is a page, and an object may weigh up to the API server's limit on a request (1.5 MiB by
default), whoever wrote it."""


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


@dataclass(frozen=True, kw_only=True)
class Page:
    """One answer to a list request with a ``limit``."""

    items: Sequence[Mapping[str, Any]]
    resource_version: str
    """The listing's resourceVersion (every page of one listing has the same)."""
    continue_token: str
    """Where the next page starts; empty on the last page."""


async def list_in_pages(
    fetch: Callable[[int, str | None], Awaitable[Page]],
    keep: Callable[[Mapping[str, Any]], _T | None],
) -> tuple[list[_T], str]:
    """A whole listing, ``fetch(limit, continue_token)`` page by page, each object turned into
    what is kept of it (``keep``; ``None``: nothing) before the next page is asked for; and the
    listing's resourceVersion.

    A page is dropped before the next one is fetched, so at most one is held at a time. A
    continue token that expired is a 410 Gone (``ApiException``), which ``follow`` answers as the
    API conventions say: the listing starts again without one (a listing must be one snapshot,
    and the pages read so far are of an older one).
    """
    kept: list[_T] = []
    token: str | None = None
    while True:
        page = await fetch(LIST_PAGE_SIZE, token)
        kept.extend(record for record in map(keep, page.items) if record is not None)
        token, resource_version = page.continue_token, page.resource_version
        del page
        if not token:
            return kept, resource_version


async def follow(watched: Watched, *, listed_at: str | None = None) -> NoReturn:
    """List and watch ``watched`` until cancelled; with ``listed_at``, the resourceVersion of
    a listing the caller has taken in already, watched from there without listing first."""
    resource_version = listed_at or None
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
    async with _PlainWatch(return_type="object") as stream:
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


class _PlainWatch(watch.Watch):  # type: ignore[misc]  # the client is Any to mypy
    """kubernetes-asyncio's watch, each event's object left as parsed.

    Given a return type (``object``: not the model classes), the library serialises every
    object back to JSON and parses it again, two more copies of a body that may be big.
    """

    def unmarshal_event(self, data: str | bytes, response_type: str | None) -> Any:
        return super().unmarshal_event(data, None)
