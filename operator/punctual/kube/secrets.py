"""Reading the Secrets that ``headersFrom`` names: the one module that reads Secrets.

Values are cached for a short while, so a 1-second job does not read its Secret every second,
and a rotated Secret is picked up within ``ttl``. Values never leave this module except as
headers handed to an executor: never logged, never in status or Events.
"""

import asyncio
import base64
from collections.abc import Callable, Mapping

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException


class SecretUnavailableError(Exception):
    """A Secret a job needs could not be read (missing, forbidden, API down)."""


class SecretReader:
    def __init__(
        self,
        api: client.ApiClient,
        *,
        ttl: float = 30.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._core = client.CoreV1Api(api)
        self._ttl = ttl
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self._cache: dict[tuple[str, str], tuple[float, Mapping[str, str]]] = {}

    async def read(self, *, namespace: str, name: str) -> Mapping[str, str]:
        """The Secret's data, decoded: key → value."""
        key = (namespace, name)
        cached = self._cache.get(key)
        if cached is not None and self._clock() - cached[0] < self._ttl:
            return cached[1]
        try:
            secret = await self._core.read_namespaced_secret(name, namespace)
        except ApiException as error:
            raise SecretUnavailableError(
                f"Secret {namespace}/{name}: HTTP {error.status} {error.reason}"
            ) from None
        data = {
            item: base64.b64decode(value).decode() for item, value in (secret.data or {}).items()
        }
        self._cache[key] = (self._clock(), data)
        return data
