"""From ``spec.target`` to an executor."""

from collections.abc import Mapping

import aiohttp

from punctual.api import models
from punctual.executors import http
from punctual.kube import secrets
from punctual.runtime import seams
from punctual.scheduling import slots
from punctual.scheduling.errors import InvalidSpecError


class Targets:
    def __init__(self, *, session: aiohttp.ClientSession, secrets: secrets.SecretReader) -> None:
        self._session = session
        self._secrets = secrets

    def executor_for(self, job: slots.JobRef, target: models.Target) -> seams.Executor:
        """An executor for ``target``; raises ``InvalidSpecError`` for what cannot run."""
        if target.http is not None:
            return self._http(job, target.http)
        kind = "queue" if target.queue is not None else "job"
        raise InvalidSpecError(
            f"spec.target.{kind}", f"the {kind} target is not supported by this operator yet"
        )

    def _http(self, job: slots.JobRef, target: models.HttpTarget) -> seams.Executor:
        try:
            request = http.HttpRequest(
                url=target.url,
                method=target.method,
                headers=dict(target.headers or {}),
                body=target.body,
                success_codes=frozenset(target.success_codes) if target.success_codes else None,
            )
        except ValueError as error:
            raise InvalidSpecError("spec.target.http", str(error)) from None
        secret_names = [source.secret_ref.name for source in target.headers_from or []]
        if not secret_names:
            return http.HttpExecutor(request, session=self._session)
        return _WithSecretHeaders(
            request,
            session=self._session,
            reader=self._secrets,
            namespace=job.namespace,
            secret_names=secret_names,
        )


class _WithSecretHeaders:
    """Reads the Secrets at each run (cached by the reader), so rotation is picked up."""

    def __init__(
        self,
        request: http.HttpRequest,
        *,
        session: aiohttp.ClientSession,
        reader: secrets.SecretReader,
        namespace: str,
        secret_names: list[str],
    ) -> None:
        self._request = request
        self._session = session
        self._reader = reader
        self._namespace = namespace
        self._secret_names = secret_names

    async def __call__(self, context: seams.RunContext) -> seams.Outcome:
        headers: dict[str, str] = {}
        for name in self._secret_names:
            values: Mapping[str, str] = await self._reader.read(
                namespace=self._namespace, name=name
            )
            headers.update(values)
        executor = http.HttpExecutor(self._request, session=self._session, secret_headers=headers)
        return await executor(context)
