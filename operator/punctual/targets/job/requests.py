"""Requests about the job target's batch Jobs, on the operator's API client: create (an
existing batch Job of the same slot is adopted), read, delete, list a page, and the list
function a watch streams (``watcher``); and a few pods of one Job, with its status, for a warm
start's check at the slot (``readiness``)."""

import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.contracts import records
from punctual.kube import client as kube_client
from punctual.kube import watching
from punctual.targets.job import manifests, states

_MESSAGE_LIMIT = 500
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""The label the Job controller puts on a Job's pods: its name."""
_UNREAD = frozenset({"spec", "managedFields"})
"""What a listing drops from every Job as it is parsed: nothing read of a Job is there, and it
is most of what a Job weighs."""


class BatchJobApiError(Exception):
    """The API server refused or failed a Job request; the message says why, for status."""


class BatchJobsApi:
    """Batch Job requests, on the operator's API client.

    Responses are read as plain JSON (``_preload_content=False``): the generated client's
    model classes cost milliseconds of CPU per Job, at the very instant many slots fire. For
    the same reason a creation sends a ``BatchJobRequest`` serialised beforehand as it is, not
    through the generated client (which would check, walk and serialise the manifest again).
    """

    def __init__(self, api: client.ApiClient) -> None:
        self._api = api
        self._batch = client.BatchV1Api(api)
        self._core = client.CoreV1Api(api)

    async def create(self, request: manifests.BatchJobRequest) -> tuple[states.BatchJobState, bool]:
        """Create the batch Job; ``(state, True)`` when this call created it.

        When it exists already, ``(its state, False)``: the caller decides whether it is the
        same slot's (see ``BatchJobState.slot_id``) and follows it if so.
        """
        namespace, name = request.namespace, request.name
        doing = f"creating Job {name}"
        path = f"/apis/batch/v1/namespaces/{urllib.parse.quote(namespace, safe='')}/jobs"
        try:
            status, body = await kube_client.post_json(self._api, path, request.body)
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise BatchJobApiError(f"{doing}: {records.describe_error(error)}") from None
        if status in (200, 201, 202):
            return states.BatchJobState.from_body(body), True
        if status != 409:
            raise _refused(doing, status, body)
        existing = await self.read(namespace, name)
        if existing is None:  # created and deleted in between: tell it as it is
            raise BatchJobApiError(f"{doing}: AlreadyExists, then gone")
        return existing, False

    async def dry_run(self, request: manifests.BatchJobRequest) -> tuple[int, dict[str, Any]]:
        """Send the creation with ``dryRun=All``: the API server validates and admits the Job as
        it would for real, and stores nothing. ``(HTTP status, JSON body)`` of its answer;
        raises ``BatchJobApiError`` when there is none. The caller bounds the wait."""
        namespace = urllib.parse.quote(request.namespace, safe="")
        path = f"/apis/batch/v1/namespaces/{namespace}/jobs?dryRun=All"
        try:
            return await kube_client.post_json(self._api, path, request.body)
        except (aiohttp.ClientError, OSError) as error:
            problem = records.describe_error(error)
            raise BatchJobApiError(f"a dry run of Job {request.name}: {problem}") from None

    async def read(self, namespace: str, name: str) -> states.BatchJobState | None:
        doing = f"reading Job {name}"
        status, body = await _call(doing, self._batch.read_namespaced_job, name, namespace)
        if status == 404:
            return None
        if status != 200:
            raise _refused(doing, status, body)
        return states.BatchJobState.from_body(body)

    async def status_of(self, namespace: str, name: str) -> dict[str, Any]:
        """The Job's ``status`` as it is (empty when it is gone)."""
        doing = f"reading Job {name}"
        status, body = await _call(
            doing, self._batch.read_namespaced_job, name, namespace, unread=_UNREAD
        )
        if status == 404:
            return {}
        if status != 200:
            raise _refused(doing, status, body)
        found = body.get("status")
        return found if isinstance(found, dict) else {}

    async def pods_of(self, namespace: str, job_name: str, *, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` pods of the Job ``job_name`` (by the label the Job controller gives
        them), without their ``managedFields``: the spec of each is read (its containers)."""
        doing = f"listing the pods of Job {job_name}"
        status, body = await _call(
            doing,
            self._core.list_namespaced_pod,
            namespace,
            label_selector=f"{JOB_NAME_LABEL}={job_name}",
            limit=limit,
            unread=frozenset({"managedFields"}),
        )
        if status != 200:
            raise _refused(doing, status, body)
        return [item for item in body.get("items") or [] if isinstance(item, dict)]

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

    async def list_page(
        self, namespace: str | None, *, limit: int, continue_token: str | None
    ) -> watching.Page:
        """One page of the labelled Jobs of ``namespace`` (``None``: all), without their
        ``spec`` and ``managedFields``. An expired ``continue_token`` raises ``ApiException``
        410 (``watching.follow`` then lists again from the start)."""
        doing = f"listing Jobs in {namespace or 'all namespaces'}"
        options: dict[str, Any] = {"label_selector": manifests.SCHEDULED_JOB_LABEL, "limit": limit}
        if continue_token:
            options["_continue"] = continue_token
        function, arguments = self.watch_function(namespace)
        status, body = await _call(doing, function, *arguments, unread=_UNREAD, **options)
        if status == 410:
            raise ApiException(status=410, reason=str(body.get("reason") or "Expired"))
        if status != 200:
            raise _refused(doing, status, body)
        metadata = body.get("metadata") or {}
        return watching.Page(
            items=list(body.get("items") or []),
            resource_version=str(metadata.get("resourceVersion") or ""),
            continue_token=str(metadata.get("continue") or ""),
        )

    def watch_function(self, namespace: str | None) -> tuple[Any, tuple[str, ...]]:
        """The list function of ``namespace`` (``None``: all), with its args: what a page is
        listed with, and what a watch streams."""
        if namespace is None:
            return self._batch.list_job_for_all_namespaces, ()
        return self._batch.list_namespaced_job, (namespace,)


async def _call(
    doing: str,
    function: Any,
    *arguments: Any,
    unread: frozenset[str] = frozenset(),
    **options: Any,
) -> tuple[int, Any]:
    """``function(*arguments, **options)`` answered as ``(HTTP status, JSON body)``, every object
    in the body parsed without its keys in ``unread``.

    The answer is read from its stream into one growing buffer, not with ``response.read()``:
    that joins the chunks into a second copy, and keeps it on the response, which the generated
    client keeps as its ``last_response`` until its next call (a whole listing, for as long as
    nothing else is asked).
    """
    try:
        response = await function(*arguments, _preload_content=False, **options)
        try:
            raw = bytearray()
            async for chunk in response.content.iter_any():
                raw += chunk
        finally:
            response.release()
    except (aiohttp.ClientError, OSError, TimeoutError) as error:
        raise BatchJobApiError(f"{doing}: {records.describe_error(error)}") from None
    hook = None if not unread else (lambda pairs: {k: v for k, v in pairs if k not in unread})
    try:
        body = json.loads(raw, object_pairs_hook=hook) if raw else {}
    except ValueError:
        body = {}
    return int(response.status), body if isinstance(body, dict) else {}


def _refused(doing: str, status: int, body: Mapping[str, Any]) -> BatchJobApiError:
    reason = body.get("reason") or ""
    detail = body.get("message") or ""
    text = f"{doing}: HTTP {status}" + (f" {reason}" if reason else "")
    text += f": {detail}" if detail else ""
    return BatchJobApiError(text[:_MESSAGE_LIMIT])
