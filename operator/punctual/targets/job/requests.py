"""Requests about the job target's batch Jobs, on the operator's API client: create (an
existing batch Job of the same slot is adopted), read, delete, list, and the list function a
watch streams (``watcher``)."""

import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

import aiohttp
from kubernetes_asyncio import client

from punctual.contracts import records
from punctual.kube import client as kube_client
from punctual.targets.job import manifests, states

_MESSAGE_LIMIT = 500


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
        label = manifests.SCHEDULED_JOB_LABEL
        if namespace is None:
            status, body = await _call(
                doing, self._batch.list_job_for_all_namespaces, label_selector=label
            )
        else:
            status, body = await _call(
                doing, self._batch.list_namespaced_job, namespace, label_selector=label
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
        raise BatchJobApiError(f"{doing}: {records.describe_error(error)}") from None
    try:
        body = json.loads(text) if text else {}
    except ValueError:
        body = {}
    return int(response.status), body if isinstance(body, dict) else {}


def _refused(doing: str, status: int, body: Mapping[str, Any]) -> BatchJobApiError:
    reason = body.get("reason") or ""
    detail = body.get("message") or ""
    text = f"{doing}: HTTP {status}" + (f" {reason}" if reason else "")
    text += f": {detail}" if detail else ""
    return BatchJobApiError(text[:_MESSAGE_LIMIT])
