"""The job target's one watch of its batch Jobs, and the cache it keeps (an informer).

ONE watch of the Jobs labelled ``punctual.dev/scheduled-job`` per operator (all namespaces, or
one watch per namespace in namespaced mode), followed by ``punctual.kube.watching`` and listed
in pages. It keeps the newest state of every such Job a ScheduledJob controls (a small record,
``states.BatchJobState``) and resolves the futures of the runs waiting for their Job to end.

The label is anyone's to set: a labelled Job no ScheduledJob controls is not kept, and one that
stops being controlled by one is gone for the watcher (as if deleted).
"""

import asyncio
import collections
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from punctual.kube import watching
from punctual.scheduling import slots
from punctual.targets.job import manifests, requests, states

logger = logging.getLogger(__name__)

RECHECK = timedelta(seconds=60)
"""A run that has waited this long for its Job's end reads the Job itself (then again)."""
_GONE_MEMORY = 4096
"""How many deleted Jobs the watcher remembers, for runs that ask after their Job is gone."""


@dataclass(slots=True)
class _Waiter:
    uid: str
    resource_version: str
    future: "asyncio.Future[states.BatchJobEnd]"


class BatchJobWatcher:
    """Follows every labelled Job in scope through one watch, and tells runs how theirs ended.

    Started on first use (an operator without job targets never lists Jobs); ``close``
    stops it.
    """

    def __init__(
        self,
        api: requests.BatchJobsApi,
        *,
        namespaces: Sequence[str] = (),
        recheck: timedelta = RECHECK,
    ) -> None:
        self._api = api
        self._recheck = recheck
        self._scopes: tuple[str | None, ...] = tuple(namespaces) or (None,)
        self._jobs: dict[tuple[str, str], states.BatchJobState] = {}
        self._by_owner: collections.defaultdict[
            tuple[str, str], dict[tuple[str, str], states.BatchJobState]
        ] = collections.defaultdict(dict)
        """The same states, by the namespace and uid of their controller: a slot asks for its
        own Jobs. An owner reference is a uid anyone who may create Jobs can write; a Job in
        another namespace naming a ScheduledJob's uid is not that ScheduledJob's (counting it,
        or deleting it as history, would let one tenant act on another's schedule)."""
        self._gone: collections.OrderedDict[tuple[str, str], str] = collections.OrderedDict()
        self._waiters: collections.defaultdict[tuple[str, str], list[_Waiter]] = (
            collections.defaultdict(list)
        )
        self._deletions: collections.defaultdict[
            tuple[str, str], list[tuple[str, asyncio.Future[None]]]
        ] = collections.defaultdict(list)
        """The runs waiting for a Job's deletion to be seen: its uid and their future."""
        self._tasks: list[asyncio.Task[None]] = []
        self._listed: dict[str | None, asyncio.Event] = {}

    def start(self) -> None:
        if self._tasks:
            return
        for scope in self._scopes:
            self._listed[scope] = asyncio.Event()
            self._tasks.append(
                asyncio.create_task(
                    watching.follow(self._watched(scope)), name=f"watch Jobs in {scope or '*'}"
                )
            )

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def listed(self) -> None:
        """Wait until every scope has been listed once (the cache is complete)."""
        self.start()
        await asyncio.gather(*(event.wait() for event in self._listed.values()))

    def known(self, namespace: str, name: str) -> states.BatchJobState | None:
        return self._jobs.get((namespace, name))

    def jobs_of(self, owner: slots.JobRef) -> list[states.BatchJobState]:
        """The Jobs in the cache whose controller is the ScheduledJob ``owner``, in ``owner``'s
        namespace only."""
        return list(self._by_owner.get((owner.namespace, owner.uid), {}).values())

    async def ended(self, job: states.BatchJobState) -> states.BatchJobEnd:
        """Wait until ``job`` (this incarnation of its name) completes, fails or is deleted."""
        self.start()
        if job.end is not None:
            return job.end
        key = job.key
        known = self._jobs.get(key)
        if known is not None and known.uid == job.uid and known.end is not None:
            return known.end
        if self._gone.get(key) == job.uid:
            return states.DELETED
        waiter = _Waiter(
            uid=job.uid,
            resource_version=job.resource_version,
            future=asyncio.get_running_loop().create_future(),
        )
        self._waiters[key].append(waiter)
        try:
            while True:
                try:
                    return await asyncio.wait_for(
                        asyncio.shield(waiter.future), self._recheck.total_seconds()
                    )
                except TimeoutError:
                    # A long wait: the watch may be stuck or failing (no RBAC to watch, the
                    # API server away); ask for the Job itself.
                    end = await self._read_end(job)
                    if end is not None:
                        return end
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None:
                if waiter in waiters:
                    waiters.remove(waiter)
                if not waiters:
                    del self._waiters[key]

    async def deleted(self, job: states.BatchJobState) -> None:
        """Wait until the watch has seen ``job`` (this incarnation of its name) deleted: gone
        from the API server, not only ending. Unbounded: the caller bounds it."""
        self.start()
        key = job.key
        if self._gone.get(key) == job.uid:
            return
        future = asyncio.get_running_loop().create_future()
        waiting = (job.uid, future)
        self._deletions[key].append(waiting)
        try:
            await future
        finally:
            waiters = self._deletions.get(key)
            if waiters is not None:
                if waiting in waiters:
                    waiters.remove(waiting)
                if not waiters:
                    del self._deletions[key]

    async def _read_end(self, job: states.BatchJobState) -> states.BatchJobEnd | None:
        try:
            state = await self._api.read(job.namespace, job.name)
        except requests.BatchJobApiError as error:
            logger.debug("Job %s/%s not read: %s", job.namespace, job.name, error)
            return None
        if state is None or state.uid != job.uid:
            return states.DELETED
        return state.end

    # -- following one scope --

    def _watched(self, scope: str | None) -> watching.Watched:
        function, arguments = self._api.watch_function(scope)
        return watching.Watched(
            what=f"Jobs in {scope or '*'}",
            relist=lambda: self._relist(scope),
            function=function,
            arguments=arguments,
            label_selector=manifests.SCHEDULED_JOB_LABEL,
            on_event=self._on_event,
        )

    async def _relist(self, scope: str | None) -> str:
        followed, resource_version = await watching.list_in_pages(
            lambda limit, token: self._api.list_page(scope, limit=limit, continue_token=token),
            keep=_followed,
        )
        listed = {state.key: state for state in followed}
        for key in [key for key in self._jobs if _in_scope(key, scope) and key not in listed]:
            self._forget(key, self._jobs[key].uid, states.DELETED)
        for state in listed.values():
            self._remember(state)
        # A run waiting for a Job the list does not have: deleted while we were not watching,
        # unless the Job is newer than the list.
        for key in [key for key in self._waiters if _in_scope(key, scope) and key not in listed]:
            for waiter in list(self._waiters[key]):
                if _not_newer(waiter.resource_version, than=resource_version):
                    _resolve(waiter, states.DELETED)
        self._listed[scope].set()
        return resource_version

    def _on_event(self, kind: str, body: Mapping[str, Any]) -> None:
        state = states.BatchJobState.from_body(body)
        if kind == "DELETED":
            self._forget(state.key, state.uid, state.end or states.DELETED)
        elif state.owner_uid is None:
            known = self._jobs.get(state.key)
            if known is not None and known.uid == state.uid:
                self._forget(state.key, state.uid, states.DELETED)
        else:
            self._remember(state)

    def _remember(self, state: states.BatchJobState) -> None:
        known = self._jobs.get(state.key)
        if known is not None and known.uid == state.uid and _older(state, than=known):
            return
        if known is not None and known.owner_uid != state.owner_uid:
            self._unindex(known)
        self._jobs[state.key] = state
        self._by_owner[_owner_key(state)][state.key] = state
        if state.end is not None:
            self._resolve_all(state.key, state.uid, state.end)

    def _forget(self, key: tuple[str, str], uid: str, end: states.BatchJobEnd) -> None:
        known = self._jobs.get(key)
        if known is not None and known.uid == uid:
            del self._jobs[key]
            self._unindex(known)
        self._gone[key] = uid
        self._gone.move_to_end(key)
        while len(self._gone) > _GONE_MEMORY:
            self._gone.popitem(last=False)
        self._resolve_all(key, uid, end)
        for waiting_uid, future in self._deletions.get(key, ()):
            if waiting_uid == uid and not future.done():
                future.set_result(None)

    def _unindex(self, state: states.BatchJobState) -> None:
        owner = _owner_key(state)
        owned = self._by_owner.get(owner)
        if owned is not None:
            owned.pop(state.key, None)
            if not owned:
                del self._by_owner[owner]

    def _resolve_all(self, key: tuple[str, str], uid: str, end: states.BatchJobEnd) -> None:
        for waiter in list(self._waiters.get(key, ())):
            if waiter.uid == uid:
                _resolve(waiter, end)


def _followed(body: Mapping[str, Any]) -> states.BatchJobState | None:
    """What the watcher keeps of a listed Job: its state, if a ScheduledJob controls it."""
    state = states.BatchJobState.from_body(body)
    return state if state.owner_uid is not None else None


def _owner_key(state: states.BatchJobState) -> tuple[str, str]:
    return (state.namespace, state.owner_uid or "")


def _resolve(waiter: _Waiter, end: states.BatchJobEnd) -> None:
    if not waiter.future.done():
        waiter.future.set_result(end)


def _in_scope(key: tuple[str, str], scope: str | None) -> bool:
    return scope is None or key[0] == scope


def _older(state: states.BatchJobState, *, than: states.BatchJobState) -> bool:
    mine, theirs = state.resource_version, than.resource_version
    return mine.isdigit() and theirs.isdigit() and int(mine) < int(theirs)


def _not_newer(resource_version: str, *, than: str) -> bool:
    """Whether an object at ``resource_version`` must be in a list at ``than``.

    resourceVersions are opaque by contract but etcd revisions in practice; when either is
    not numeric, nothing can be concluded.
    """
    return resource_version.isdigit() and than.isdigit() and int(resource_version) <= int(than)
