"""One replica of the operator: its whole wiring, built in order and torn down in reverse.

A ``Replica`` owns, once ``start`` has built them in this order:

1. the metrics (``meters``) and, with a ``metrics_port``, their HTTP server (left running: it
   lives as long as the process);
2. the Kubernetes API client, the object cache, the status API and the status store (its
   backlog and lag metered), and the Event store with its writer (a task until ``aclose``); with
   ``sharding``, the other replicas' membership Leases listed before any job is armed
   (``kube.membership``);
3. one Redis client for the ``redis_url`` (when given), shared by the slot lock, the run
   leases and the queue targets' stream claims, its pool sized for the three at once
   (``redis_io.connections.SHARED_MAX_CONNECTIONS``), and, with sharding and the redis
   backend, one connection of it listening for claim notices (until ``aclose``);
4. the slot lock (``lock_backend``: redis, kubernetes or memory), its health tracked (and
   metered);
5. durable runs (redis backend): the run leases and their heartbeat;
6. the scheduler (``runtime.supervisor``), on the metered lock, reporting to every store (status,
   Events, the log line per run, metrics); with ``sharding``, it arms only the jobs this replica
   owns or backs up among the members;
7. the HTTP targets' connections, behind the address guard (the API server's addresses);
8. the batch-Job API and its one watcher;
9. the queue targets' stream claims (with a ``redis_url``, whatever the lock backend), and the
   clients of the tenants' brokers (behind the same address guard);
10. the reconciler and its targets, and the admission webhook's reviews (with a
    ``webhook_port``; kopf serves them); every ScheduledJob armed from one paged LIST (this
    replica's share, with sharding), and only then this replica's own Lease held;
11. the background tasks: the status writer, the lock's health probe, the membership (renewal,
    watch) and, for durable runs, the lease heartbeat and the lost-run detector.

``stop`` (kopf's cleanup handler; ``aclose`` again as a safety net) ends, in order: the
membership (its Lease deleted first, so that the other replicas take its jobs at once); the
health probe; every run (cancelled, recorded Failed "operator stopping"); the heartbeat and the
detector, then the leases of the runs the scheduler cancelled; last, every pending status is
written (for ``stores.status.writer.LAST_FLUSH`` at most, what matters most first), while the
API client, Redis and the HTTP connections are still open; a line logs how long each part took.
Only then does ``aclose`` close what ``start`` opened, in reverse: the stream claims, the Job
watcher, the HTTP connections, the run leases, the slot lock, the shared Redis client (once,
after the three that use it) and the API client.

The parts that need no Kubernetes can be built on their own (``connect_redis``, ``open_lock``,
``start_scheduler``, ``open_http_connections``), as ``bench/hot_path.py`` does; ``aclose``
(or leaving ``async with Replica(settings)``) closes whatever was built.
"""

import asyncio
import contextlib
import importlib.metadata
import logging
import os
import socket
import urllib.parse
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, Self, get_args

import prometheus_client

from punctual import metrics
from punctual.api import planning
from punctual.contracts import protocols
from punctual.controller import admission, failures, reconciler, targets
from punctual.kube import client, events, membership, objects, secrets, spec_api, status_api
from punctual.locks import health, kubernetes, memory, metered, redis, redis_leases
from punctual.redis_io import claim_notices, pipelines
from punctual.redis_io import connections as redis_connections
from punctual.runtime import clocks, leases, supervisor
from punctual.scheduling import durations, overlap
from punctual.scheduling.errors import InvalidSpecError
from punctual.stores import events as event_store
from punctual.stores import fanout
from punctual.stores import logs as log_store
from punctual.stores import metered as metered_store
from punctual.stores import status as status_store
from punctual.targets import addresses
from punctual.targets.http import connections as http_connections
from punctual.targets.job import requests as batch_job_requests
from punctual.targets.job import watcher as batch_job_watcher
from punctual.targets.queue import brokers as queue_brokers
from punctual.targets.queue import stream as queue_stream
from punctual.targets.queue import wiring as queue_wiring

logger = logging.getLogger(__name__)

MOST_WAIT_TIMEOUT = timedelta(seconds=redis_connections.DEFAULT_SOCKET_TIMEOUT)
"""A ``WAIT`` longer than a reply may take would time its connection out."""

LockBackend = Literal["redis", "kubernetes", "memory"]
LOCK_BACKENDS: tuple[LockBackend, ...] = get_args(LockBackend)
DEFAULT_WARM_START_GATE_IMAGE = f"punctual-gate:{importlib.metadata.version('punctual-operator')}"
"""The gate image of the operator's own version (``make image`` builds it beside the operator's):
the gate a warm Job runs must understand the command line this operator writes."""


@dataclass(frozen=True, kw_only=True)
class ReplicaSettings:
    """What one replica is told (``punctual run``'s options, parsed). Raises
    ``InvalidSpecError`` naming the option for settings no replica can run with."""

    replica_id: str
    """This replica's name in locks and status."""
    namespaces: tuple[str, ...] = ()
    """The namespaces watched; none: all of them."""
    lock_backend: LockBackend = "kubernetes"
    redis_url: str | None = None
    """The Redis of the redis lock backend and of queue targets."""
    redis_wait_replicas: int = 0
    """The replicas that must have a claim (``WAIT``) before it counts; 0: none (a standalone
    Redis)."""
    redis_wait_timeout: timedelta = pipelines.NO_WAIT.timeout
    """How long the primary waits for them; a claim they did not acknowledge is checked again."""
    stagger: timedelta = timedelta()
    """A fixed offset added to this replica's lock attempts."""
    bind_address: str = "0.0.0.0"
    metrics_port: int = 8080
    """Where ``/metrics`` listens; 0: nowhere."""
    health_port: int = 8081
    """Where kopf's ``/healthz`` listens; 0: nowhere."""
    status_interval: timedelta = timedelta(seconds=5)
    status_writes_per_second: int = 100
    event_writes_per_second: int = 10
    run_log_lines_per_second: int = 1
    """Per job, after a burst; above it, the job's runs are summarized once a minute."""
    queue_max_len: int = queue_wiring.DEFAULT_MAX_LEN_LIMIT
    """The most entries a queue target's stream keeps: its ``maxLen`` at most."""
    allowed_hosts: addresses.HostAllowlist | None = None
    """The only hosts HTTP targets may call; ``None``: any but those refused by default."""
    refused_addresses: tuple[addresses.RefusedAddresses, ...] = ()
    """Addresses HTTP targets never reach, beside those refused by default."""
    http_connections_per_namespace: int = http_connections.LIMIT_PER_NAMESPACE
    """Connections to one origin busy at once for one namespace's HTTP targets."""
    webhook_port: int = 0
    """Where the validating admission webhook listens (HTTPS); 0: no webhook."""
    webhook_cert_dir: Path | None = None
    """The webhook's serving certificate and key, ``tls.crt`` and ``tls.key`` (a Secret of type
    kubernetes.io/tls mounted as a volume); loaded again when they change."""
    webhook_client_ca: Path | None = None
    """The CA that signs the API server's client certificate for webhooks: with it, the webhook
    answers only a client presenting a certificate it signed (refused at TLS otherwise);
    ``None``: any client (a NetworkPolicy must keep others out)."""
    sharding: bool = True
    """Each job scheduled by its owner and backup among the live replicas; False: by every
    replica (the slot lock alone picks the one that runs a slot)."""
    backup_delay: timedelta = supervisor.BACKUP_DELAY
    """How long after a slot its backup claims it, if the owner left it free."""
    membership_namespace: str = "default"
    """Where the replicas' membership Leases are (the operator's namespace)."""
    bounds: planning.Bounds = planning.DEFAULT_BOUNDS
    """What the platform allows one job: checked at admission and before a job is armed."""
    max_runs_in_flight_per_namespace: int = overlap.MAX_RUNS_IN_FLIGHT_PER_NAMESPACE
    """The most runs of one namespace's jobs in flight at once on this replica."""
    warm_start_gate_image: str = DEFAULT_WARM_START_GATE_IMAGE
    """The image warm Jobs copy the gate from, pulled in the Job's namespace with its template's
    imagePullSecrets; a ScheduledJob's own ``warmStart.gateImage`` wins over it."""

    def __post_init__(self) -> None:
        if self.webhook_port and self.webhook_cert_dir is None:
            raise InvalidSpecError("--webhook-cert-dir", "required with --webhook-port")
        if self.webhook_client_ca is not None and not self.webhook_port:
            raise InvalidSpecError("--webhook-client-ca", "only with --webhook-port")
        if self.lock_backend == "redis" and not self.redis_url:
            raise InvalidSpecError("--redis-url", "required with --lock-backend redis")
        for flag, value in (
            ("--status-writes-per-second", self.status_writes_per_second),
            ("--event-writes-per-second", self.event_writes_per_second),
            ("--run-log-lines-per-second", self.run_log_lines_per_second),
            ("--http-connections-per-namespace", self.http_connections_per_namespace),
            ("--queue-max-len", self.queue_max_len),
            ("--max-runs-in-flight-per-namespace", self.max_runs_in_flight_per_namespace),
        ):
            if value < 1:
                raise InvalidSpecError(flag, "must be at least 1")
        if self.backup_delay <= timedelta():
            raise InvalidSpecError("--backup-delay", "must be more than 0")
        if self.redis_wait_replicas < 0:
            raise InvalidSpecError("--redis-wait-replicas", "must be at least 0")
        if not timedelta() < self.redis_wait_timeout < MOST_WAIT_TIMEOUT:
            raise InvalidSpecError(
                "--redis-wait-timeout",
                f"must be more than 0 and less than {durations.format(MOST_WAIT_TIMEOUT)} (the "
                "reply's own timeout)",
            )
        if not self.warm_start_gate_image.strip():
            raise InvalidSpecError("--warm-start-gate-image", "must name an image")

    @property
    def acknowledgement(self) -> pipelines.Acknowledgement:
        return pipelines.Acknowledgement(
            replicas=self.redis_wait_replicas, timeout=self.redis_wait_timeout
        )

    @property
    def liveness_endpoint(self) -> str | None:
        if not self.health_port:
            return None
        return f"http://{self.bind_address}:{self.health_port}/healthz"


@dataclass(frozen=True, slots=True)
class ScheduledJobsApi:
    """How the replica reads and writes ScheduledJobs (the kubernetes lock backend's too)."""

    api: status_api.StatusApi
    cache: objects.ObjectCache
    statuses: status_store.StatusStore


class Replica:
    """One operator replica; see the module's docstring for what it owns and in which order."""

    def __init__(self, settings: ReplicaSettings) -> None:
        self.settings = settings
        self.meters = metrics.Metrics(prometheus_client.CollectorRegistry())
        self._stack = contextlib.AsyncExitStack()
        self._redis: redis_connections.Connection | None = None
        self._scheduler: supervisor.Supervisor | None = None
        self._reconciler: reconciler.Reconciler | None = None
        self._admission: admission.Admission | None = None
        self._stopping: Stopping | None = None
        self._tells_backups: protocols.TellsBackups | None = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    @property
    def reconciler(self) -> reconciler.Reconciler:
        """What kopf's handlers call (once ``start`` has returned)."""
        if self._reconciler is None:
            raise RuntimeError("the replica is not started")
        return self._reconciler

    @property
    def admission(self) -> admission.Admission | None:
        """The webhook's reviews (once ``start`` has returned); ``None`` without a webhook."""
        return self._admission

    async def start(self) -> None:
        """Build the whole wiring, in the order of the module's docstring."""
        settings = self.settings
        if settings.metrics_port:
            prometheus_client.start_http_server(
                settings.metrics_port, addr=settings.bind_address, registry=self.meters.registry
            )
        api = await client.connect()
        self._stack.push_async_callback(api.close)
        cache = objects.ObjectCache()
        kube_status = status_api.StatusApi(api)
        statuses = status_store.StatusStore(
            api=kube_status,
            cache=cache,
            replica=settings.replica_id,
            wall=clocks.system_wall,
            interval=settings.status_interval,
            writes_per_second=settings.status_writes_per_second,
        )
        self.meters.watch_status_writer(backlog=lambda: statuses.backlog, lag=lambda: statuses.lag)
        warnings = event_store.EventStore(
            cache=cache,
            api=events.EventsApi(api, replica=settings.replica_id),
            wall=clocks.system_wall,
            writes_per_second=settings.event_writes_per_second,
        )
        self._background(warnings.run(), name="event writer")
        run_logs = log_store.LogStore(lines_per_second=settings.run_log_lines_per_second)
        self._background(run_logs.run(), name="run log summaries")
        members: membership.Membership | None = None
        if settings.sharding:  # joined before any job is armed, so it is armed with its share
            members = membership.Membership(
                api,
                namespace=settings.membership_namespace,
                member=settings.replica_id,
                group=membership.group_of(settings.namespaces),
            )
            self._stack.push_async_callback(members.leave)  # should the stop not have run
            await members.discover()
        self.connect_redis()
        tracked = await self.open_lock(ScheduledJobsApi(kube_status, cache, statuses))
        durable = self.open_durable_runs()
        scheduler = self.start_scheduler(
            tracked, stores=[statuses, warnings, run_logs], durable=durable, cache=cache
        )
        if members is not None:
            scheduler.members_changed(members.members)
        if self._tells_backups is not None:
            self._background(
                self._tells_backups.hear(
                    settings.replica_id, metered.MeteredNotices(scheduler, meters=self.meters)
                ),
                name="claim notices",
            )
        guard = addresses.AddressGuard.default(
            api_server=await _api_server(api_server_urls(api.configuration.host, os.environ)),
            allowed=settings.allowed_hosts,
            refused=settings.refused_addresses,
        )
        http = await self.open_http_connections(guard)
        batch_jobs = batch_job_requests.BatchJobsApi(api)
        # One watch of our Jobs for the whole operator, started by the first job-target run.
        batch_watcher = batch_job_watcher.BatchJobWatcher(
            batch_jobs, namespaces=settings.namespaces
        )
        self._stack.push_async_callback(batch_watcher.close)
        streams = self._open_streams()
        brokers = queue_brokers.Brokers(guard=guard)
        self._stack.push_async_callback(brokers.close)
        if settings.webhook_port:
            self._admission = admission.Admission(
                batch_jobs=batch_jobs,
                wall=clocks.system_wall,
                bounds=settings.bounds,
                warm_start_gate_image=settings.warm_start_gate_image,
            )
        self._reconciler = reconciler.Reconciler(
            scheduler=scheduler,
            store=statuses,
            cache=cache,
            targets=targets.Targets(
                connections=http,
                secrets=secrets.SecretReader(api),
                guard=guard,
                batch_jobs=batch_jobs,
                batch_job_watcher=batch_watcher,
                warm_start_gate_image=settings.warm_start_gate_image,
                # Told by the job target itself, at the slot: the scheduler does not see pods.
                warm_start_reports=fanout.FanoutStore(statuses, warnings),
                streams=streams,
                brokers=brokers,
                queue_max_len=settings.queue_max_len,
                meter_lock=lambda lock: metered.MeteredLock(
                    lock, meters=self.meters, backend="redis-stream"
                ),
            ),
            wall=clocks.system_wall,
            warnings=warnings,
            # Only Redis is a backend of its own: the kubernetes lock fails exactly when status
            # cannot be written either, and the memory lock always answers.
            lock_health=tracked if settings.lock_backend == "redis" else None,
            pause=failures.FailurePause(api=spec_api.SpecApi(api), warnings=warnings),
            bounds=settings.bounds,
        )
        await self._arm_listed(kube_status)
        if members is not None:
            await members.join()
            members.on_change = self._reconciler.members_changed
        # Started before kopf, so not among the tasks kopf cancels when it stops (those it
        # finds started after it): they end in ``stop``.
        self._stopping = Stopping(
            members=members,
            members_task=(
                asyncio.create_task(members.run(), name="membership")
                if members is not None
                else None
            ),
            scheduler=scheduler,
            statuses=statuses,
            flusher=asyncio.create_task(statuses.run(), name="status writer"),
            prober=asyncio.create_task(tracked.watch(), name="lock health"),
            durable=durable,
            durable_tasks=durable.start(scheduler) if durable is not None else [],
        )

    async def _arm_listed(self, kube_status: status_api.StatusApi) -> None:
        """Arm every ScheduledJob from one paged LIST, before kopf's stream (whose events
        for the same generations then change nothing): a restarted replica schedules again
        without waiting for kopf to deliver each object, and a new one has its share armed
        before it joins the members."""
        reconciler = self.reconciler
        async for page in kube_status.pages(namespaces=self.settings.namespaces):
            for body in page:
                await reconciler.observe(body)
            await asyncio.sleep(0)  # the runs of the jobs armed so far go on meanwhile

    def connect_redis(self) -> redis_connections.Connection | None:
        """The one client for ``redis_url`` (none without one), made at the first call; closed
        by ``aclose`` after the slot lock, the run leases and the stream claims on it."""
        if self._redis is None and self.settings.redis_url:
            self._redis = redis_connections.connect(
                self.settings.redis_url, max_connections=redis_connections.SHARED_MAX_CONNECTIONS
            )
            self._stack.push_async_callback(self._redis.client.aclose)
        return self._redis

    async def open_lock(
        self, scheduled_jobs: ScheduledJobsApi | None = None
    ) -> health.HealthTrackingLock:
        """The slot lock of ``lock_backend``, its health tracked; the kubernetes backend claims
        through ``scheduled_jobs`` (the status this replica has pending rides along)."""
        lock: protocols.SlotLock
        match self.settings.lock_backend:
            case "redis":
                shared = self._shared_redis()
                lock = redis.RedisLock(
                    shared.client,
                    description=shared.description,
                    password=shared.password,
                    owns_client=False,
                    scope=self._notice_scope(),
                    acknowledgement=self.settings.acknowledgement,
                )
                self._stack.push_async_callback(lock.close)
                if self.settings.sharding:
                    self._tells_backups = lock
            case "kubernetes":
                if scheduled_jobs is None:
                    raise ValueError("the kubernetes lock backend needs the Kubernetes API")
                lock = kubernetes.KubernetesLock(
                    api=scheduled_jobs.api,
                    cache=scheduled_jobs.cache,
                    carrier=scheduled_jobs.statuses,
                )
            case _:
                lock = memory.MemoryLock()
        tracked = health.HealthTrackingLock(lock, backend=self.settings.lock_backend)
        self.meters.watch_lock_backend(self.settings.lock_backend, up=lambda: tracked.available)
        return tracked

    def open_durable_runs(self) -> "DurableRuns | None":
        """Run leases and their heartbeat (redis backend only), on the shared Redis client."""
        if self.settings.lock_backend != "redis":
            return None
        run_leases = redis_leases.RedisRunLeases(self._shared_redis(), owns_client=False)
        self._stack.push_async_callback(run_leases.close)
        return DurableRuns(
            run_leases, leases.Heartbeat(run_leases, replica=self.settings.replica_id)
        )

    def start_scheduler(
        self,
        lock: protocols.SlotLock,
        *,
        stores: Iterable[protocols.RunStore] = (),
        durable: "DurableRuns | None" = None,
        cache: objects.ObjectCache | None = None,
    ) -> supervisor.Supervisor:
        """The scheduler on ``lock`` (metered), reporting to ``stores`` and the metrics (the
        target kind of each job read from ``cache``), its runs' leases held by the heartbeat of
        ``durable``; ``stop`` shuts it down."""
        reports = [*stores, metered_store.MeteredStore(self.meters, cache=cache)]
        backend = self.settings.lock_backend
        scheduler = supervisor.Supervisor(
            wall=clocks.system_wall,
            lock=metered.MeteredLock(lock, meters=self.meters, backend=backend),
            store=fanout.FanoutStore(*reports),
            replica=self.settings.replica_id,
            stagger=self.settings.stagger,
            sharding=(
                supervisor.Sharding(
                    member=self.settings.replica_id, backup_delay=self.settings.backup_delay
                )
                if self.settings.sharding
                else None
            ),
            max_runs_in_flight_per_namespace=self.settings.max_runs_in_flight_per_namespace,
            leases=durable.heartbeat if durable is not None else None,
        )
        self.meters.scheduled_jobs.set_function(lambda: len(scheduler.armed))
        self._scheduler = scheduler
        return scheduler

    async def open_http_connections(
        self, guard: addresses.AddressGuard | None = None
    ) -> http_connections.HttpConnections:
        """The HTTP targets' connections, refusing what ``guard`` refuses (by default: the
        addresses refused without an API server to add, and what ``allowed_hosts`` leaves)."""
        if guard is None:
            guard = addresses.AddressGuard.default(
                api_server=[],
                allowed=self.settings.allowed_hosts,
                refused=self.settings.refused_addresses,
            )
        return await self._stack.enter_async_context(
            http_connections.HttpConnections(
                refuse=guard.refusal,
                limit_per_namespace=self.settings.http_connections_per_namespace,
            )
        )

    async def stop(self) -> None:
        """End every run, record its fate and write the pending statuses (``Stopping``);
        idempotent. Of a replica built in parts, only the scheduler is shut down."""
        if self._stopping is not None:
            await self._stopping.stop()
        elif self._scheduler is not None:
            await self._scheduler.shutdown()

    async def aclose(self) -> None:
        """``stop``, then close everything opened, in reverse. The stop is done already by
        kopf's cleanup on a normal stop; not when kopf failed to start, was cancelled, or its
        cleanup was cut short."""
        try:
            await self.stop()
        finally:
            await self._stack.aclose()

    def _background(self, work: Coroutine[Any, Any, None], *, name: str) -> None:
        """Run ``work`` until ``aclose``, which cancels it first."""
        task = asyncio.create_task(work, name=name)

        async def cancel() -> None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

        self._stack.push_async_callback(cancel)

    def _notice_scope(self) -> str | None:
        """Where this installation's owners tell its backups (with sharding): scoped as its
        membership Leases are, so that installations sharing a Redis never hear each other."""
        if not self.settings.sharding:
            return None
        return claim_notices.scope(
            namespace=self.settings.membership_namespace,
            group=membership.group_of(self.settings.namespaces),
        )

    def _shared_redis(self) -> redis_connections.Connection:
        shared = self.connect_redis()
        if shared is None:  # the settings refuse the redis backend without a URL
            raise ValueError("no Redis URL")
        return shared

    def _open_streams(self) -> queue_stream.StreamClaims | None:
        """The Redis of queue targets: the operator's --redis-url, whatever the lock backend."""
        shared = self.connect_redis()
        if shared is None:
            return None
        streams = queue_stream.StreamClaims(
            shared, owns_client=False, acknowledgement=self.settings.acknowledgement
        )
        self._stack.push_async_callback(streams.close)
        return streams


def api_server_urls(configured: str, environ: Mapping[str, str]) -> list[str]:
    """Each URL the API server is reached at: the client's (its kubeconfig, or in-cluster the
    ``kubernetes`` Service) and, in a pod, that Service as its environment names it, which a
    kubeconfig pointing elsewhere would leave out."""
    urls = [configured]
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    if host:
        bracketed = f"[{host}]" if ":" in host else host
        urls.append(f"https://{bracketed}:{port or 443}")
    return urls


async def _api_server(urls: Iterable[str]) -> list[tuple[str, int]]:
    """Each (address, port) the API server is reached at: HTTP targets are refused there."""
    reached: set[tuple[str, int]] = set()
    for url in urls:
        parts = urllib.parse.urlsplit(url)
        try:
            port = parts.port or addresses.DEFAULT_PORTS.get(parts.scheme, 443)
            infos = await asyncio.get_running_loop().getaddrinfo(
                parts.hostname, port, type=socket.SOCK_STREAM
            )
        except (OSError, ValueError):
            continue  # the API client will say why it cannot reach it
        reached |= {(str(info[4][0]), port) for info in infos}
    return sorted(reached)


@dataclass
class Stopping:
    """The replica's stop, in order: its membership Lease released, every run ended and
    recorded, run leases released, every status written (the API client, Redis and the HTTP
    connections still open). Idempotent: called by kopf's cleanup handler, and again by
    ``Replica.aclose`` as a safety net."""

    scheduler: supervisor.Supervisor
    statuses: status_store.StatusStore
    flusher: asyncio.Task[None]
    prober: asyncio.Task[None]
    durable: "DurableRuns | None"
    durable_tasks: list[asyncio.Task[None]]
    members: membership.Membership | None = None
    members_task: asyncio.Task[None] | None = None
    _done: bool = field(default=False, init=False)

    async def stop(self) -> None:
        if self._done:
            return
        clock = asyncio.get_running_loop().time
        started = clock()
        logger.info("replica stopping: ending every run, then writing the last statuses")
        if self.members_task is not None:
            # First, deaf to members that come and go: when every replica stops at once (a
            # rollout, a scale-down), re-arming the shares of those that left before this one
            # cost seconds of the stop at 30,000 jobs.
            self.members_task.cancel()
            await asyncio.gather(self.members_task, return_exceptions=True)
        if self.members is not None:
            await self.members.leave()  # then at once: the others take this replica's jobs now
        self.prober.cancel()  # no Ready changes any more: they would come after the last write
        # Runs cancelled, recorded Cancelled ("operator stopping"); with run leases, a Job that
        # goes on is left to the replica that takes its lease over, unrecorded here.
        await self.scheduler.shutdown(hand_over=self.durable is not None)
        if self.durable is not None:
            await self.durable.stop(self.durable_tasks)
        runs_ended = clock()
        self.statuses.close()  # the writes in flight finish, then what is left (bounded)
        await asyncio.wait([self.flusher, self.prober])
        if not self.flusher.cancelled() and self.flusher.exception() is not None:
            logger.error("the status writer failed", exc_info=self.flusher.exception())
        self._done = True
        logger.info(
            "replica stopped in %.1fs: runs ended in %.1fs, the last statuses written in %.1fs",
            clock() - started,
            runs_ended - started,
            clock() - runs_ended,
        )


DURABLE_STOP = timedelta(seconds=1)
"""How long a stop waits for the heartbeat's round trip on the wire and the detector."""


@dataclass(frozen=True)
class DurableRuns:
    """Durable runs (redis backend): a lease per run in flight, renewed by a heartbeat; a
    replica that dies mid-run leaves an expiring lease, which another replica takes over."""

    backend: redis_leases.RedisRunLeases
    heartbeat: leases.Heartbeat

    def start(self, scheduler: supervisor.Supervisor) -> list[asyncio.Task[None]]:
        """The heartbeat's task, then the lost-run detector's (``stop`` takes them so)."""
        detector = leases.LossDetector(
            self.backend,
            jobs=lambda: scheduler.armed,
            on_lost=scheduler.lost,
            held=lambda: self.heartbeat.held,
        )
        return [
            asyncio.create_task(self.heartbeat.run(), name="run lease heartbeat"),
            asyncio.create_task(detector.run(), name="lost run detector"),
        ]

    async def stop(self, tasks: Sequence[asyncio.Task[None]]) -> None:
        """After the scheduler's shutdown: runs it cancelled are recorded (Failed, "operator
        stopping"), so their leases go too, or another replica would record them Lost. The
        heartbeat ends its round trip on the wire, the detector is cancelled; a second at
        most, then the last releases go out whatever is left."""
        self.heartbeat.stop()
        for task in tasks[1:]:
            task.cancel()
        _, left = await asyncio.wait(tasks, timeout=DURABLE_STOP.total_seconds())
        for task in left:
            logger.warning("%s did not stop within %s", task.get_name(), DURABLE_STOP)
            task.cancel()
        with contextlib.suppress(protocols.LockUnavailableError):
            await self.heartbeat.close()
