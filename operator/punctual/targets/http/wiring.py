"""From ``spec.target.http`` to its executor: the request checked, the operator's allowlist and
address guard consulted, and the headers of the Secrets it names read at each run."""

import urllib.parse
from collections.abc import Mapping

from punctual.api import http_models, models
from punctual.contracts import protocols, records
from punctual.kube import secrets
from punctual.scheduling import slots
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets import addresses, errors, plugin
from punctual.targets.http import connections as http_connections
from punctual.targets.http import executor as http_executor


class HttpTargets:
    """The HTTP targets of this operator: its connections, the Secrets it reads headers from,
    and what it may call (``guard``: the addresses refused by default, and the operator's
    allowlist, ``guard.allowed``: any host when ``None``)."""

    def __init__(
        self,
        *,
        connections: http_connections.HttpConnections,
        secrets: secrets.SecretReader,
        guard: addresses.AddressGuard | None = None,
    ) -> None:
        self._connections = connections
        self._secrets = secrets
        self._guard = guard or addresses.AddressGuard()

    def wire(self, job: slots.JobRef, spec: models.ScheduledJobSpec) -> plugin.Wiring:
        """Raises ``InvalidSpecError`` for a request that cannot be sent (``request_for``),
        ``TargetUnavailableError`` for a host this operator may not call."""
        target = spec.target.http
        assert target is not None  # the registry wires a spec with its own kind
        return plugin.Wiring(self._executor(job, target))

    def _executor(self, job: slots.JobRef, target: http_models.HttpTarget) -> protocols.Executor:
        request = request_for(target)
        allowed = self._guard.allowed
        if allowed is not None and not allowed.admits(target.url):
            # The operator's policy, not the spec's fault: a reason of its own, and the job is
            # never armed, so its URL is never called.
            raise errors.TargetUnavailableError(
                errors.HOST_NOT_ALLOWED,
                f"spec.target.http.url: {http_executor.redact_url(target.url)} is not a host "
                f"this operator may call (--http-allowed-hosts {allowed})",
            )
        url = urllib.parse.urlsplit(target.url)
        port = url.port or addresses.DEFAULT_PORTS[url.scheme.lower()]
        refusal = self._guard.refusal(url.hostname or "", port)
        if refusal is not None:  # an IP literal; names are checked on each address they resolve to
            raise errors.TargetUnavailableError(
                errors.HOST_NOT_ALLOWED,
                f"spec.target.http.url: {url.hostname} is {refusal}: this operator calls it only "
                "if --http-allowed-hosts names it",
            )
        secret_names = [source.secret_ref.name for source in target.headers_from or []]
        if not secret_names:
            return http_executor.HttpExecutor(request, connections=self._connections)
        return _WithSecretHeaders(
            request,
            connections=self._connections,
            reader=self._secrets,
            namespace=job.namespace,
            secret_names=secret_names,
        )


def request_for(target: http_models.HttpTarget) -> http_executor.HttpRequest:
    """The request ``target`` asks for; raises ``InvalidSpecError`` when it cannot be sent.

    Part of the operator's check of a spec (``punctual.controller.validation``): whatever this
    refuses is ``InvalidSpec`` in status, and refused at admission by the webhook.
    """
    try:
        return http_executor.HttpRequest(
            url=target.url,
            method=target.method,
            headers=dict(target.headers or {}),
            body=target.body,
            success_codes=frozenset(target.success_codes) if target.success_codes else None,
        )
    except http_executor.InvalidHeaderError as error:
        raise InvalidSpecError(f"spec.target.http.headers[{error.key}]", error.problem) from None
    except ValueError as error:
        raise InvalidSpecError("spec.target.http", str(error)) from None


class SecretHeaderRefusedError(Exception):
    """A Secret of ``headersFrom`` holds a header this operator never sends: the run fails
    before anything is sent, its message naming the Secret and the key, never the value."""


class _WithSecretHeaders:
    """Reads the Secrets at each run (cached by the reader), so rotation is picked up; the
    executor is built again only when their values changed (its request bytes are built once)."""

    def __init__(
        self,
        request: http_executor.HttpRequest,
        *,
        connections: http_connections.HttpConnections,
        reader: secrets.SecretReader,
        namespace: str,
        secret_names: list[str],
    ) -> None:
        self._request = request
        self._connections = connections
        self._reader = reader
        self._namespace = namespace
        self._secret_names = secret_names
        self._executor: tuple[dict[str, str], http_executor.HttpExecutor] | None = None

    async def __call__(self, context: records.RunContext) -> records.Outcome:
        read: list[tuple[str, Mapping[str, str]]] = []
        for name in self._secret_names:
            read.append((name, await self._reader.read(namespace=self._namespace, name=name)))
        headers = {key: value for _, values in read for key, value in values.items()}
        if self._executor is None or self._executor[0] != headers:
            # Checked Secret by Secret to name the one to fix; only when the values changed.
            for name, values in read:
                try:
                    http_executor.check_headers(values, what="key")
                except http_executor.InvalidHeaderError as error:
                    raise SecretHeaderRefusedError(
                        f"Secret {self._namespace}/{name}, key {error.name!r}: {error.problem}; "
                        "nothing was sent"
                    ) from None
            executor = http_executor.HttpExecutor(
                self._request, connections=self._connections, secret_headers=headers
            )
            self._executor = (headers, executor)
        return await self._executor[1](context)
