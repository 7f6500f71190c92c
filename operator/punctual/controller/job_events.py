"""The ScheduledJob watch, beside kopf: listings and watch events in, reconciler calls out.

Every run writes its job's status, and every replica's watch shows it the new version, whether
it owns the job, backs it up or neither. Such an echo changes nothing for the scheduler. kopf
gave each event a worker task, its per-object memory, loggers, a handler call and a patch to
apply, and kept a memory per object for good; here an echo is taken in at once
(``Reconciler.took_in``) and nothing is kept besides what the reconciler keeps. Any other
version (a new generation, a new ``punctual.dev/skip``, run-now or backfill value, a pause due,
a deletion) is handed to a task of its job's, which observes them in the order they came;
jobs never wait for each other.
"""

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NoReturn, Protocol

from punctual.kube import resources, status_api, watching
from punctual.scheduling import slots

logger = logging.getLogger(__name__)

DELETED = "DELETED"


class Observer(Protocol):
    """What takes the versions in: ``reconciler.Reconciler``."""

    def took_in(self, body: resources.Body) -> bool:
        """True when done with ``body`` at once; False: ``observe`` it."""

    async def observe(self, body: resources.Body) -> None: ...

    async def forget(self, body: resources.Body) -> None: ...


class JobEvents:
    """Each job's versions, as listed or watched, to ``observer`` in the order they came."""

    def __init__(self, observer: Observer) -> None:
        self._observer = observer
        self._waiting: dict[slots.JobRef, collections.deque[tuple[str, resources.Body]]] = {}
        """The versions of each job whose task is at work, still to be observed."""
        self._tasks: set[asyncio.Task[None]] = set()

    def on_event(self, kind: str, body: Mapping[str, Any]) -> None:
        """A watch event (``ADDED``, ``MODIFIED`` or ``DELETED``) or a listed object."""
        job = resources.job_ref(body)
        waiting = self._waiting.get(job)
        if waiting is not None:
            waiting.append((kind, body))
        elif kind == DELETED or not self._observer.took_in(body):
            self._waiting[job] = collections.deque([(kind, body)])
            task = asyncio.create_task(self._work(job), name=f"versions of {job}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _work(self, job: slots.JobRef) -> None:
        waiting = self._waiting[job]
        try:
            while waiting:
                kind, body = waiting.popleft()
                try:
                    if kind == DELETED:
                        await self._observer.forget(body)
                    else:
                        await self._observer.observe(body)
                except Exception:  # one version's failure must not stop the job's next ones
                    logger.exception("observing %s failed", job)
        finally:
            del self._waiting[job]

    async def take_in_listing(self, api: status_api.StatusApi, namespace: str | None) -> str:
        """Every job in ``namespace`` (None: all) listed and observed, page by page, the runs
        of the jobs armed so far going on in between; the listing's resourceVersion."""
        return await _each_listed(api, namespace, self._observer.observe)

    async def follow(
        self, api: status_api.StatusApi, namespace: str | None, *, listed_at: str
    ) -> NoReturn:
        """Watch the jobs in ``namespace`` (None: all) from a listing taken in already, until
        cancelled; listed again (``watching.follow``) when the watch cannot resume, each
        listed job's version taken as a watch event."""

        async def as_event(body: resources.Body) -> None:
            self.on_event("ADDED", body)

        async def relist() -> str:
            return await _each_listed(api, namespace, as_event)

        function, arguments = api.list_function(namespace)
        await watching.follow(
            watching.Watched(
                what=f"ScheduledJobs in {namespace or 'every namespace'}",
                relist=relist,
                function=function,
                arguments=arguments,
                on_event=self.on_event,
            ),
            listed_at=listed_at,
        )

    async def stop(self) -> None:
        """No more versions observed: the tasks at work cancelled, and what they held dropped."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def _each_listed(
    api: status_api.StatusApi,
    namespace: str | None,
    take: Callable[[resources.Body], Awaitable[None]],
) -> str:
    """Each job in ``namespace`` (None: all) handed to ``take``, a page at a time with a turn of
    the event loop in between; the listing's resourceVersion."""
    resource_version = ""
    async for page in api.pages(namespace=namespace):
        for body in page.items:
            await take(body)
        resource_version = page.resource_version
        await asyncio.sleep(0)
    return resource_version
