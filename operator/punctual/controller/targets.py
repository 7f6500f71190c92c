"""From ``spec.target`` to an executor, and to the lock that claims the job's slots."""

import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from punctual.api import models
from punctual.contracts import protocols, records
from punctual.executors import allowlist, http, http_connections, job, queue
from punctual.kube import jobs, secrets
from punctual.locks import redis_stream
from punctual.scheduling import durations, slots
from punctual.scheduling.errors import InvalidSpecError

QUEUE_UNAVAILABLE = "QueueUnavailable"
HOST_NOT_ALLOWED = "HostNotAllowed"


class TargetUnavailableError(Exception):
    """The spec is valid, but this operator lacks what its target needs (``reason`` says what).

    Reported like an invalid spec (Ready False, a Warning Event), with its own reason.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Wiring:
    executor: protocols.Executor
    lock: protocols.SlotLock | None = None
    """The job's own slot lock; ``None``: the operator's."""


class Targets:
    def __init__(
        self,
        *,
        connections: http_connections.HttpConnections,
        secrets: secrets.SecretReader,
        jobs: jobs.JobsApi | None = None,
        job_watcher: jobs.JobWatcher | None = None,
        streams: redis_stream.StreamClaims | None = None,
        meter_lock: Callable[[protocols.SlotLock], protocols.SlotLock] = lambda lock: lock,
        allowed_hosts: allowlist.HostAllowlist | None = None,
        guard: allowlist.AddressGuard | None = None,
    ) -> None:
        self._connections = connections
        self._secrets = secrets
        self._jobs = jobs
        self._job_watcher = job_watcher
        self._streams = streams
        self._meter_lock = meter_lock
        self._allowed_hosts = allowed_hosts
        self._guard = guard or allowlist.AddressGuard(allowed=allowed_hosts)

    def wire(self, job: slots.JobRef, spec: models.ScheduledJobSpec) -> Wiring:
        """An executor (and lock) for ``spec.target``.

        Raises ``InvalidSpecError`` for what cannot run, ``TargetUnavailableError`` for what
        this operator cannot run.
        """
        target = spec.target
        if target.http is not None:
            return Wiring(self._http(job, target.http))
        if target.queue is not None:
            return self._queue(target.queue)
        assert target.job is not None  # the model allows exactly one target
        return Wiring(self._job(job, target.job, spec))

    def _queue(self, target: models.QueueTarget) -> Wiring:
        if self._streams is None:
            raise TargetUnavailableError(
                QUEUE_UNAVAILABLE,
                "spec.target.queue: the queue target needs the operator's Redis, and this "
                "operator has none: run it with --redis-url (or $PUNCTUAL_REDIS_URL)",
            )
        lock = self._streams.lock_for(
            stream=target.stream, payload=target.payload, max_len=target.max_len
        )
        return Wiring(queue.QueueExecutor(lock, stream=target.stream), self._meter_lock(lock))

    def _job(
        self, owner: slots.JobRef, target: models.JobTarget, spec: models.ScheduledJobSpec
    ) -> protocols.Executor:
        if self._jobs is None or self._job_watcher is None:
            raise TargetUnavailableError(
                "JobsUnavailable", "spec.target.job: this operator does not create Jobs"
            )
        template: Mapping[str, object] = target.template
        if not isinstance(template.get("spec"), Mapping):
            raise InvalidSpecError(
                "spec.target.job.template.spec", "required: a batch/v1 JobSpec (as in a CronJob)"
            )
        metadata = template.get("metadata")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidSpecError("spec.target.job.template.metadata", "must be an object")
        timeout: timedelta = durations.parse(spec.timeout, field="spec.timeout")
        # The watch of Jobs starts with the first job target: the concurrency policy of the
        # first slot already counts the Jobs an earlier operator process or replica left.
        self._job_watcher.start()
        return job.JobExecutor(
            api=self._jobs,
            watcher=self._job_watcher,
            owner=owner,
            template=template,
            active_deadline=timeout,
            history=job.JobHistory(succeeded=spec.history.succeeded, failed=spec.history.failed),
        )

    def _http(self, job: slots.JobRef, target: models.HttpTarget) -> protocols.Executor:
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
        if self._allowed_hosts is not None and not self._allowed_hosts.admits(target.url):
            # The operator's policy, not the spec's fault: a reason of its own, and the job is
            # never armed, so its URL is never called.
            raise TargetUnavailableError(
                HOST_NOT_ALLOWED,
                f"spec.target.http.url: {http.redact_url(target.url)} is not a host this "
                f"operator may call (--http-allowed-hosts {self._allowed_hosts})",
            )
        url = urllib.parse.urlsplit(target.url)
        port = url.port or allowlist.DEFAULT_PORTS[url.scheme.lower()]
        refusal = self._guard.refusal(url.hostname or "", port)
        if refusal is not None:  # an IP literal; names are checked on each address they resolve to
            raise TargetUnavailableError(
                HOST_NOT_ALLOWED,
                f"spec.target.http.url: {url.hostname} is {refusal}: this operator calls it only "
                "if --http-allowed-hosts names it",
            )
        secret_names = [source.secret_ref.name for source in target.headers_from or []]
        if not secret_names:
            return http.HttpExecutor(request, connections=self._connections)
        return _WithSecretHeaders(
            request,
            connections=self._connections,
            reader=self._secrets,
            namespace=job.namespace,
            secret_names=secret_names,
        )


class _WithSecretHeaders:
    """Reads the Secrets at each run (cached by the reader), so rotation is picked up; the
    executor is built again only when their values changed (its request bytes are built once)."""

    def __init__(
        self,
        request: http.HttpRequest,
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
        self._executor: tuple[dict[str, str], http.HttpExecutor] | None = None

    async def __call__(self, context: records.RunContext) -> records.Outcome:
        headers: dict[str, str] = {}
        for name in self._secret_names:
            values: Mapping[str, str] = await self._reader.read(
                namespace=self._namespace, name=name
            )
            headers.update(values)
        if self._executor is None or self._executor[0] != headers:
            executor = http.HttpExecutor(
                self._request, connections=self._connections, secret_headers=headers
            )
            self._executor = (headers, executor)
        return await self._executor[1](context)
