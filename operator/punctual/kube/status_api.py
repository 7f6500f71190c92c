"""Reading ScheduledJobs and patching their status: the one module that does either.

Every patch is a JSON merge patch carrying ``metadata.resourceVersion`` as a precondition, so
a replica never overwrites what another one wrote in between: it gets ``ConflictError`` and
starts again from a fresh read.
"""

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, cast

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.api import models
from punctual.kube import resources, watching
from punctual.scheduling import slots

_MERGE_PATCH = "application/merge-patch+json"
LIST_PAGE = 500


class ConflictError(Exception):
    """The object changed since the resourceVersion the patch was based on."""


class GoneError(Exception):
    """The object no longer exists (or is another object with the same name now)."""


class UnavailableError(Exception):
    """The API server did not answer usefully."""


class StatusApi:
    def __init__(self, api: client.ApiClient) -> None:
        self._objects = client.CustomObjectsApi(api)

    async def pages(
        self, *, namespace: str | None = None, limit: int = LIST_PAGE
    ) -> AsyncIterator[watching.Page]:
        """Every ScheduledJob in ``namespace`` (None: all), ``limit`` at a time: 10,000
        objects are never one answer held at once. Every page carries the listing's
        resourceVersion, which a watch resumes from. Raises ``UnavailableError``."""
        function, arguments = self.list_function(namespace)
        token: str | None = None
        while True:
            options: dict[str, Any] = {"limit": limit, "_request_timeout": 60}
            if token:
                options["_continue"] = token
            try:
                listing = await function(*arguments, **options)
            except ApiException as error:
                raise translate(error) from error
            except (aiohttp.ClientError, OSError, TimeoutError) as error:
                raise UnavailableError(str(error) or type(error).__name__) from error
            metadata = listing.get("metadata") or {}
            token = metadata.get("continue") or ""
            yield watching.Page(
                items=cast(list[resources.Body], listing.get("items") or []),
                resource_version=str(metadata.get("resourceVersion") or ""),
                continue_token=token,
            )
            if not token:
                return

    def list_function(
        self, namespace: str | None
    ) -> tuple[Callable[..., Awaitable[Any]], tuple[str, ...]]:
        """The generated client's list of ScheduledJobs in ``namespace`` (None: all) and its
        arguments: what a listing calls, and what a watch of the same collection follows."""
        if namespace is None:
            return self._objects.list_cluster_custom_object, (
                models.GROUP,
                models.VERSION,
                models.PLURAL,
            )
        return self._objects.list_namespaced_custom_object, (
            models.GROUP,
            models.VERSION,
            namespace,
            models.PLURAL,
        )

    async def read(self, ref: slots.JobRef) -> resources.Body:
        try:
            body = await self._objects.get_namespaced_custom_object(
                models.GROUP, models.VERSION, ref.namespace, models.PLURAL, ref.name
            )
        except ApiException as error:
            raise translate(error) from error
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise UnavailableError(str(error) or type(error).__name__) from error
        if body["metadata"]["uid"] != ref.uid:
            raise GoneError(f"{ref.namespace}/{ref.name} was re-created")
        return cast(resources.Body, body)

    async def patch(
        self, ref: slots.JobRef, status: Mapping[str, Any], *, resource_version: str
    ) -> resources.Body:
        patch = {
            "metadata": {"resourceVersion": resource_version, "uid": ref.uid},
            "status": status,
        }
        try:
            body = await self._objects.patch_namespaced_custom_object_status(
                models.GROUP,
                models.VERSION,
                ref.namespace,
                models.PLURAL,
                ref.name,
                patch,
                _content_type=_MERGE_PATCH,
            )
        except ApiException as error:
            raise translate(error) from error
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise UnavailableError(str(error) or type(error).__name__) from error
        return cast(resources.Body, body)


def translate(error: ApiException) -> Exception:
    match error.status:
        case 409:
            return ConflictError(error.reason)
        case 404:
            return GoneError(error.reason)
        case _:
            return UnavailableError(f"HTTP {error.status} {error.reason}")
