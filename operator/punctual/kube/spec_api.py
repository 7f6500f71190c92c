"""Writes to a ScheduledJob itself (not its status): the operator's own ``spec.suspend``
(``spec.suspendAfterFailures``), and the annotations the ``punctual`` command sets to ask for
runs (``punctual.dev/run-now``).

Like status patches, each write is a JSON merge patch; the operator's carries
``metadata.resourceVersion`` as a precondition, so of the replicas that decide the same thing
on the same version, exactly one write lands (the others get ``ConflictError``).
"""

from collections.abc import Mapping
from typing import Any, cast

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.api import day_models, models
from punctual.kube import resources, status_api
from punctual.scheduling import slots

_MERGE_PATCH = "application/merge-patch+json"


class SpecApi:
    def __init__(self, api: client.ApiClient) -> None:
        self._objects = client.CustomObjectsApi(api)

    async def suspend(self, ref: slots.JobRef, *, resource_version: str) -> resources.Body:
        """Set ``spec.suspend: true`` on the version ``resource_version`` of ``ref``."""
        patch = {
            "metadata": {"resourceVersion": resource_version, "uid": ref.uid},
            "spec": {"suspend": True},
        }
        return await self._patch(ref.namespace, ref.name, patch)

    async def read(self, namespace: str, name: str) -> resources.Body:
        try:
            body = await self._objects.get_namespaced_custom_object(
                models.GROUP, models.VERSION, namespace, models.PLURAL, name
            )
        except ApiException as error:
            raise status_api.translate(error) from error
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise status_api.UnavailableError(str(error) or type(error).__name__) from error
        return cast(resources.Body, body)

    async def read_calendars(
        self, namespace: str, names: tuple[str, ...]
    ) -> dict[str, Mapping[str, object]]:
        """The specs of the Calendars of ``namespace`` named (a job names a bounded few), by
        name; those that do not exist are left out."""
        found: dict[str, Mapping[str, object]] = {}
        for name in dict.fromkeys(names):
            try:
                body = await self._objects.get_namespaced_custom_object(
                    models.GROUP, models.VERSION, namespace, day_models.CALENDAR_PLURAL, name
                )
            except ApiException as error:
                translated = status_api.translate(error)
                if isinstance(translated, status_api.GoneError):
                    continue
                raise translated from error
            except (aiohttp.ClientError, OSError, TimeoutError) as error:
                raise status_api.UnavailableError(str(error) or type(error).__name__) from error
            spec = body.get("spec") if isinstance(body, Mapping) else None
            found[name] = spec if isinstance(spec, Mapping) else {}
        return found

    async def annotate(
        self,
        namespace: str,
        name: str,
        annotations: Mapping[str, str | None],
        *,
        resource_version: str | None = None,
    ) -> resources.Body:
        """Set ``annotations`` on ScheduledJob ``namespace/name`` (others are left; None
        removes one); with ``resource_version``, only on that version (else ``ConflictError``):
        an edit of a value read before."""
        metadata: dict[str, Any] = {"annotations": dict(annotations)}
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        return await self._patch(namespace, name, {"metadata": metadata})

    async def _patch(self, namespace: str, name: str, patch: Mapping[str, Any]) -> resources.Body:
        try:
            body = await self._objects.patch_namespaced_custom_object(
                models.GROUP,
                models.VERSION,
                namespace,
                models.PLURAL,
                name,
                patch,
                _content_type=_MERGE_PATCH,
            )
        except ApiException as error:
            raise status_api.translate(error) from error
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise status_api.UnavailableError(str(error) or type(error).__name__) from error
        return cast(resources.Body, body)
