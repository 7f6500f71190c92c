"""batch/v1 Jobs of the job target: the one module that talks to the API server about Jobs.

- Names: one Job per slot, ``<name>-<unix seconds of the slot>``, so that creating it twice (two
  replicas, a retry, an operator restarted mid-slot) fails with ``AlreadyExists`` instead of
  running the slot twice. The ``<name>`` part is at most 52 characters, CronJob's own limit
  for the same reason: the Job controller copies the Job's name into the ``job-name`` and
  ``batch.kubernetes.io/job-name`` labels of its pods, and label values stop at 63 characters;
  52 + ``-`` + 10 digits of unix seconds is 63. (Pod names are ``<job name>-<5 random>``, which
  the API server's name generator keeps within 63 by trimming the base, so they fit too.) A
  longer ScheduledJob name is cut to 43 characters plus ``-`` and 8 hex digits of its SHA-256:
  stable across replicas and restarts, distinct for names sharing a long prefix.
- ``JobRequest``: a slot's Job, built and serialised ahead of its slot (off the firing path).
- ``JobsApi``: create (an existing Job of the same slot is adopted), read, delete.
- ``JobWatcher``: ONE watch of the Jobs labelled ``punctual.dev/scheduled-job`` per operator
  (all namespaces, or one watch per namespace in namespaced mode), resumed from its last
  ``resourceVersion`` and re-listed when the API server answers 410 Gone. It keeps the newest
  state of every such Job and resolves the futures of the runs waiting for their Job to end.
"""

import asyncio
import collections
import copy
import hashlib
import json
import logging
import math
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import aiohttp
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.kube import client as kube_client
from punctual.kube import resources
from punctual.scheduling import slots, timeline

logger = logging.getLogger(__name__)

SCHEDULED_JOB_LABEL = "punctual.dev/scheduled-job"
"""On every Job of the job target: the ScheduledJob's name (shortened past 63 characters)."""
SCHEDULED_TIME_ANNOTATION = "punctual.dev/scheduled-time"
"""RFC 3339 (UTC): when the run was due, the slot plus the ScheduledJob's jitter."""
SLOT_ID_ANNOTATION = "punctual.dev/slot-id"
"""The slot id, ``<namespace>/<name>/<uid>/<unix-ms>``: also what tells our Jobs apart."""

MAX_BASE_LENGTH = 52
"""CronJob's name limit: 52 + ``-`` + 10 digits = 63, the limit of a label value."""
MAX_LABEL_VALUE = 63
_HASH_LENGTH = 8

WATCH_SECONDS = 300
"""The server-side timeout of one watch request; it is then resumed where it stopped."""
RETRY_DELAYS = (0.5, 1.0, 2.0, 5.0, 10.0)
"""Seconds between attempts after a failed list or watch, the last one repeated."""
RECHECK = timedelta(seconds=60)
"""A run that has waited this long for its Job's end reads the Job itself (then again)."""
_GONE_MEMORY = 4096
"""How many deleted Jobs the watcher remembers, for runs that ask after their Job is gone."""
_MESSAGE_LIMIT = 500


class JobApiError(Exception):
    """The API server refused or failed a Job request; the message says why, for status."""


@dataclass(frozen=True, slots=True)
class JobEnd:
    """How a Job ended: its Complete or Failed condition, or its deletion before either."""

    succeeded: bool
    reason: str
    message: str = ""

    @property
    def deadline_exceeded(self) -> bool:
        return self.reason == "DeadlineExceeded"


DELETED = JobEnd(succeeded=False, reason="Deleted", message="deleted before it finished")


@dataclass(frozen=True, slots=True)
class JobState:
    """What the operator needs to know about one Job."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    owner_uid: str | None
    """The uid of the Job's controller (the ScheduledJob), if any."""
    slot_id: str | None
    scheduled_time: datetime | None
    end: JobEnd | None
    """``None`` while the Job runs."""
    deleting: bool = False
    """Its deletion has begun (``metadata.deletionTimestamp``)."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> "JobState":
        metadata = body.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        owner = next(
            (ref for ref in metadata.get("ownerReferences") or [] if ref.get("controller")), None
        )
        scheduled = annotations.get(SCHEDULED_TIME_ANNOTATION)
        try:
            scheduled_time = timeline.parse_rfc3339(scheduled) if scheduled else None
        except ValueError:
            scheduled_time = None
        return cls(
            namespace=metadata.get("namespace", ""),
            name=metadata.get("name", ""),
            uid=metadata.get("uid", ""),
            resource_version=metadata.get("resourceVersion", ""),
            owner_uid=owner.get("uid") if owner else None,
            slot_id=annotations.get(SLOT_ID_ANNOTATION),
            scheduled_time=scheduled_time,
            end=_end_of(body.get("status") or {}),
            deleting=bool(metadata.get("deletionTimestamp")),
        )


def _end_of(status: Mapping[str, Any]) -> JobEnd | None:
    for condition in status.get("conditions") or []:
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            return JobEnd(succeeded=True, reason="Complete", message=condition.get("message", ""))
        # FailureTarget (Kubernetes 1.31+) comes first: the Job is failed, its pods are still
        # terminating (Failed follows when they are gone, up to their grace period later).
        if condition.get("type") in ("Failed", "FailureTarget"):
            return JobEnd(
                succeeded=False,
                reason=condition.get("reason") or "Failed",
                message=condition.get("message") or "",
            )
    return None


# -- names and manifests ---------------------------------------------------------------------


def base_name(name: str) -> str:
    """``name`` if it has at most 52 characters, else a stable 52-character abbreviation."""
    if len(name) <= MAX_BASE_LENGTH:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_LENGTH]
    # A DNS subdomain may have "-" or "." where the cut falls; a name must not end in either.
    prefix = name[: MAX_BASE_LENGTH - _HASH_LENGTH - 1].rstrip("-.")
    return f"{prefix}-{digest}"


def job_name(scheduled_job: str, slot: datetime) -> str:
    """``<name>-<unix seconds of the slot>``, the name being ``base_name(scheduled_job)``."""
    return f"{base_name(scheduled_job)}-{timeline.unix_millis(slot) // 1000}"


def label_value(scheduled_job: str) -> str:
    """The ``punctual.dev/scheduled-job`` label: the name, or its abbreviation past 63 chars."""
    return scheduled_job if len(scheduled_job) <= MAX_LABEL_VALUE else base_name(scheduled_job)


def job_manifest(
    template: Mapping[str, Any],
    *,
    owner: slots.JobRef,
    slot: datetime,
    slot_id: str,
    scheduled_time: datetime,
    active_deadline: timedelta,
) -> dict[str, Any]:
    """The Job for one slot, from a CronJob-style ``jobTemplate`` ({metadata, spec}).

    The template's labels and annotations are kept, ours added on top; its ``spec`` is used
    as is, with ``activeDeadlineSeconds`` set to ``active_deadline`` (rounded up to whole
    seconds), or kept when the template sets a shorter one.
    """
    metadata = template.get("metadata") or {}
    spec = copy.deepcopy(dict(template.get("spec") or {}))
    deadline = max(1, math.ceil(active_deadline.total_seconds()))
    given = spec.get("activeDeadlineSeconds")
    if isinstance(given, int) and not isinstance(given, bool) and 0 < given < deadline:
        deadline = given
    spec["activeDeadlineSeconds"] = deadline
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(owner.name, slot),
            "namespace": owner.namespace,
            "labels": {
                **dict(metadata.get("labels") or {}),
                SCHEDULED_JOB_LABEL: label_value(owner.name),
            },
            "annotations": {
                **dict(metadata.get("annotations") or {}),
                SCHEDULED_TIME_ANNOTATION: timeline.rfc3339(scheduled_time),
                SLOT_ID_ANNOTATION: slot_id,
            },
            "ownerReferences": [
                {
                    "apiVersion": f"{resources.GROUP}/{resources.VERSION}",
                    "kind": resources.KIND,
                    "name": owner.name,
                    "uid": owner.uid,
                    # The garbage collector deletes the Jobs with the ScheduledJob; deleting
                    # the ScheduledJob does not wait for them (nor need the right to).
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": spec,
    }


@dataclass(frozen=True, slots=True)
class JobRequest:
    """The creation of one slot's Job, ready to send: its manifest, serialised."""

    namespace: str
    name: str
    body: bytes
    """The manifest as compact JSON."""

    @classmethod
    def of(cls, manifest: Mapping[str, Any]) -> "JobRequest":
        metadata = manifest["metadata"]
        body = json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode()
        return cls(namespace=metadata["namespace"], name=metadata["name"], body=body)


# -- requests --------------------------------------------------------------------------------


class JobsApi:
    """Job requests, on the operator's API client.

    Responses are read as plain JSON (``_preload_content=False``): the generated client's
    model classes cost milliseconds of CPU per Job, at the very instant many slots fire. For
    the same reason a creation sends a ``JobRequest`` serialised beforehand as it is, not
    through the generated client (which would check, walk and serialise the manifest again).
    """

    def __init__(self, api: client.ApiClient) -> None:
        self._api = api
        self._batch = client.BatchV1Api(api)

    async def create(self, request: JobRequest) -> tuple[JobState, bool]:
        """Create the Job; ``(state, True)`` when this call created it.

        When it exists already, ``(its state, False)``: the caller decides whether it is the
        same slot's (see ``JobState.slot_id``) and follows it if so.
        """
        namespace, name = request.namespace, request.name
        doing = f"creating Job {name}"
        path = f"/apis/batch/v1/namespaces/{urllib.parse.quote(namespace, safe='')}/jobs"
        try:
            status, body = await kube_client.post_json(self._api, path, request.body)
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise JobApiError(f"{doing}: {_describe(error)}") from None
        if status in (200, 201, 202):
            return JobState.from_body(body), True
        if status != 409:
            raise _refused(doing, status, body)
        existing = await self.read(namespace, name)
        if existing is None:  # created and deleted in between: tell it as it is
            raise JobApiError(f"{doing}: AlreadyExists, then gone")
        return existing, False

    async def read(self, namespace: str, name: str) -> JobState | None:
        doing = f"reading Job {name}"
        status, body = await _call(doing, self._batch.read_namespaced_job, name, namespace)
        if status == 404:
            return None
        if status != 200:
            raise _refused(doing, status, body)
        return JobState.from_body(body)

    async def delete(self, namespace: str, name: str, *, uid: str | None = None) -> bool:
        """Delete with background propagation (its pods follow); False if it was gone.

        With ``uid``, only that incarnation of the name is deleted.
        """
        options: dict[str, Any] = {"propagationPolicy": "Background"}
        if uid:
            options["preconditions"] = {"uid": uid}
        doing = f"deleting Job {name}"
        status, body = await _call(
            doing, self._batch.delete_namespaced_job, name, namespace, body=options
        )
        if status in (404, 409):  # gone, or another Job by that name now
            return False
        if status not in (200, 202):
            raise _refused(doing, status, body)
        return True

    async def list(self, namespace: str | None) -> tuple[list[dict[str, Any]], str]:
        """The labelled Jobs of ``namespace`` (``None``: all), and the list's resourceVersion."""
        doing = f"listing Jobs in {namespace or 'all namespaces'}"
        if namespace is None:
            status, body = await _call(
                doing, self._batch.list_job_for_all_namespaces, label_selector=SCHEDULED_JOB_LABEL
            )
        else:
            status, body = await _call(
                doing,
                self._batch.list_namespaced_job,
                namespace,
                label_selector=SCHEDULED_JOB_LABEL,
            )
        if status != 200:
            raise _refused(doing, status, body)
        return list(body.get("items") or []), str(body["metadata"]["resourceVersion"])

    def watch_function(self, namespace: str | None) -> tuple[Any, tuple[str, ...]]:
        """The list function a watch of ``namespace`` (``None``: all) streams, with its args."""
        if namespace is None:
            return self._batch.list_job_for_all_namespaces, ()
        return self._batch.list_namespaced_job, (namespace,)


async def _call(doing: str, function: Any, *arguments: Any, **options: Any) -> tuple[int, Any]:
    """``function(*arguments, **options)`` answered as ``(HTTP status, JSON body)``."""
    try:
        response = await function(*arguments, _preload_content=False, **options)
        try:
            text = await response.text()
        finally:
            response.release()
    except (aiohttp.ClientError, OSError, TimeoutError) as error:
        raise JobApiError(f"{doing}: {_describe(error)}") from None
    try:
        body = json.loads(text) if text else {}
    except ValueError:
        body = {}
    return int(response.status), body if isinstance(body, dict) else {}


def _refused(doing: str, status: int, body: Mapping[str, Any]) -> JobApiError:
    reason = body.get("reason") or ""
    detail = body.get("message") or ""
    text = f"{doing}: HTTP {status}" + (f" {reason}" if reason else "")
    text += f": {detail}" if detail else ""
    return JobApiError(text[:_MESSAGE_LIMIT])


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


# -- the shared watch ------------------------------------------------------------------------


@dataclass(slots=True)
class _Waiter:
    uid: str
    resource_version: str
    future: "asyncio.Future[JobEnd]"


class JobWatcher:
    """Follows every labelled Job in scope through one watch, and tells runs how theirs ended.

    Started on first use (an operator without job targets never lists Jobs); ``close``
    stops it.
    """

    def __init__(
        self,
        jobs: JobsApi,
        *,
        namespaces: Sequence[str] = (),
        recheck: timedelta = RECHECK,
    ) -> None:
        self._jobs_api = jobs
        self._recheck = recheck
        self._scopes: tuple[str | None, ...] = tuple(namespaces) or (None,)
        self._jobs: dict[tuple[str, str], JobState] = {}
        self._by_owner: collections.defaultdict[str | None, dict[tuple[str, str], JobState]] = (
            collections.defaultdict(dict)
        )
        """The same states, by the uid of their controller: a slot asks for its own Jobs."""
        self._gone: collections.OrderedDict[tuple[str, str], str] = collections.OrderedDict()
        self._waiters: collections.defaultdict[tuple[str, str], list[_Waiter]] = (
            collections.defaultdict(list)
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._listed: dict[str | None, asyncio.Event] = {}

    def start(self) -> None:
        if self._tasks:
            return
        for scope in self._scopes:
            self._listed[scope] = asyncio.Event()
            self._tasks.append(
                asyncio.create_task(self._follow_scope(scope), name=f"watch Jobs in {scope or '*'}")
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

    def known(self, namespace: str, name: str) -> JobState | None:
        return self._jobs.get((namespace, name))

    def jobs_of(self, owner: slots.JobRef) -> list[JobState]:
        """The Jobs in the cache whose controller is the ScheduledJob ``owner``.

        In ``owner``'s namespace only: an owner reference is a uid anyone who may create Jobs
        can write, and a Job in another namespace naming ``owner`` is not ``owner``'s (counting
        it, or deleting it as history, would let one tenant act on another's schedule).
        """
        owned = self._by_owner.get(owner.uid, {}).values()
        return [state for state in owned if state.namespace == owner.namespace]

    async def ended(self, job: JobState) -> JobEnd:
        """Wait until ``job`` (this incarnation of its name) completes, fails or is deleted."""
        self.start()
        if job.end is not None:
            return job.end
        key = job.key
        known = self._jobs.get(key)
        if known is not None and known.uid == job.uid and known.end is not None:
            return known.end
        if self._gone.get(key) == job.uid:
            return DELETED
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

    async def _read_end(self, job: JobState) -> JobEnd | None:
        try:
            state = await self._jobs_api.read(job.namespace, job.name)
        except JobApiError as error:
            logger.debug("Job %s/%s not read: %s", job.namespace, job.name, error)
            return None
        if state is None or state.uid != job.uid:
            return DELETED
        return state.end

    # -- following one scope --

    async def _follow_scope(self, scope: str | None) -> None:
        resource_version: str | None = None
        failures = 0
        while True:
            try:
                if resource_version is None:
                    resource_version = await self._relist(scope)
                    self._listed[scope].set()
                resource_version = await self._watch(scope, resource_version)
                failures = 0
            except ApiException as error:
                if error.status == 410:  # our resourceVersion is too old: list again
                    logger.info("Job watch in %s expired (410 Gone): listing again", scope or "*")
                    resource_version = None
                    continue
                failures += 1
                await self._pause(scope, f"HTTP {error.status} {error.reason}", failures)
            except Exception as error:  # whatever it was, the watch must go on
                failures += 1
                await self._pause(scope, _describe(error), failures)

    async def _pause(self, scope: str | None, problem: str, failures: int) -> None:
        delay = RETRY_DELAYS[min(failures, len(RETRY_DELAYS)) - 1]
        log = logger.warning if failures in (1, len(RETRY_DELAYS)) else logger.debug
        log("watching Jobs in %s failed (%s); again in %.1fs", scope or "*", problem, delay)
        await asyncio.sleep(delay)

    async def _relist(self, scope: str | None) -> str:
        items, resource_version = await self._jobs_api.list(scope)
        listed = {state.key: state for state in map(JobState.from_body, items)}
        for key in [key for key in self._jobs if _in_scope(key, scope) and key not in listed]:
            self._forget(key, self._jobs[key].uid, DELETED)
        for state in listed.values():
            self._remember(state)
        # A run waiting for a Job the list does not have: deleted while we were not watching,
        # unless the Job is newer than the list.
        for key in [key for key in self._waiters if _in_scope(key, scope) and key not in listed]:
            for waiter in list(self._waiters[key]):
                if _not_newer(waiter.resource_version, than=resource_version):
                    _resolve(waiter, DELETED)
        return resource_version

    async def _watch(self, scope: str | None, resource_version: str) -> str:
        function, arguments = self._jobs_api.watch_function(scope)
        # return_type "object": events keep their JSON dicts, no model classes on the way.
        async with watch.Watch(return_type="object") as stream:
            async for event in stream.stream(
                function,
                *arguments,
                label_selector=SCHEDULED_JOB_LABEL,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=WATCH_SECONDS,
                _request_timeout=WATCH_SECONDS + 30,
            ):
                kind = event.get("type")
                body = event.get("raw_object") or {}
                if kind in ("ADDED", "MODIFIED"):
                    self._remember(JobState.from_body(body))
                elif kind == "DELETED":
                    state = JobState.from_body(body)
                    self._forget(state.key, state.uid, state.end or DELETED)
                resource_version = stream.resource_version or resource_version
        return resource_version

    def _remember(self, state: JobState) -> None:
        known = self._jobs.get(state.key)
        if known is not None and known.uid == state.uid and _older(state, than=known):
            return
        if known is not None and known.owner_uid != state.owner_uid:
            self._unindex(known)
        self._jobs[state.key] = state
        self._by_owner[state.owner_uid][state.key] = state
        if state.end is not None:
            self._resolve_all(state.key, state.uid, state.end)

    def _forget(self, key: tuple[str, str], uid: str, end: JobEnd) -> None:
        known = self._jobs.get(key)
        if known is not None and known.uid == uid:
            del self._jobs[key]
            self._unindex(known)
        self._gone[key] = uid
        self._gone.move_to_end(key)
        while len(self._gone) > _GONE_MEMORY:
            self._gone.popitem(last=False)
        self._resolve_all(key, uid, end)

    def _unindex(self, state: JobState) -> None:
        owned = self._by_owner.get(state.owner_uid)
        if owned is not None:
            owned.pop(state.key, None)
            if not owned:
                del self._by_owner[state.owner_uid]

    def _resolve_all(self, key: tuple[str, str], uid: str, end: JobEnd) -> None:
        for waiter in list(self._waiters.get(key, ())):
            if waiter.uid == uid:
                _resolve(waiter, end)


def _resolve(waiter: _Waiter, end: JobEnd) -> None:
    if not waiter.future.done():
        waiter.future.set_result(end)


def _in_scope(key: tuple[str, str], scope: str | None) -> bool:
    return scope is None or key[0] == scope


def _older(state: JobState, *, than: JobState) -> bool:
    mine, theirs = state.resource_version, than.resource_version
    return mine.isdigit() and theirs.isdigit() and int(mine) < int(theirs)


def _not_newer(resource_version: str, *, than: str) -> bool:
    """Whether an object at ``resource_version`` must be in a list at ``than``.

    resourceVersions are opaque by contract but etcd revisions in practice; when either is
    not numeric, nothing can be concluded.
    """
    return resource_version.isdigit() and than.isdigit() and int(resource_version) <= int(than)


def sorted_by_slot(states: Iterable[JobState]) -> list[JobState]:
    """Newest slot first (by scheduled time, then name)."""
    return sorted(
        states,
        key=lambda state: (state.scheduled_time or timeline.EPOCH, state.name),
        reverse=True,
    )
