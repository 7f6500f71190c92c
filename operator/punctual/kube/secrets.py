"""Reading the Secrets that ``headersFrom`` (HTTP targets) and ``brokerFrom`` (the queue
target's tasks) name: the one module that reads Secrets.

Values are cached for a short while, so a 1-second job does not read its Secret every second,
and a rotated Secret is picked up within ``ttl``. Values never leave this module except as
headers or a broker's URL handed to an executor: never logged, never in status or Events.
"""

import asyncio
import base64
import binascii
import re
from collections.abc import Callable, Mapping

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

_SECRET_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
"""A DNS subdomain, as every Secret's name is (at most 253 characters)."""


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
        """The Secret's data, decoded: key → value.

        Raises ``SecretUnavailableError`` for a name no Secret can have (``.`` or ``..`` would
        make the request path another one: the namespace's Secrets, the namespace), and for a
        value that is not text; its message names the key, never a value.
        """
        if len(name) > 253 or not _SECRET_NAME.fullmatch(name):
            raise SecretUnavailableError(f"Secret {namespace}/{name!r}: not a Secret's name")
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
            item: _text(value, where=f"Secret {namespace}/{name}: key {item!r}")
            for item, value in (secret.data or {}).items()
        }
        self._cache[key] = (self._clock(), data)
        return data


def _text(value: str, *, where: str) -> str:
    # Raised from None: the decoder's own error quotes the offending bytes, a piece of a secret.
    try:
        return base64.b64decode(value, validate=True).decode()
    except binascii.Error:
        raise SecretUnavailableError(f"{where}: not base64") from None
    except UnicodeDecodeError:
        raise SecretUnavailableError(f"{where}: not UTF-8 text") from None
