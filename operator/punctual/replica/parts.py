"""The parts of a replica, each started on the replica's exit stack, which closes what the part
opened: ``Replica.start`` starts them in order, benchmarks start the few they measure."""

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import prometheus_client

from punctual import metrics
from punctual.contracts import protocols
from punctual.kube import client, events, membership, objects, status_api
from punctual.locks import health, kubernetes, memory, metered, redis, redis_leases
from punctual.redis_io import claim_notices
from punctual.redis_io import connections as redis_connections
from punctual.replica import settings as replica_settings
from punctual.runtime import clocks, leases, sharding, supervisor
from punctual.stores import events as event_store
from punctual.stores import fanout
from punctual.stores import logs as log_store
from punctual.stores import metered as metered_store
from punctual.stores import status as status_store

logger = logging.getLogger(__name__)

Settings = replica_settings.ReplicaSettings


def background(
    exit_stack: contextlib.AsyncExitStack, work: Coroutine[Any, Any, None], *, name: str
) -> None:
    """Run ``work`` until ``exit_stack`` closes, which cancels it and waits for it."""
    task = asyncio.create_task(work, name=name)

    async def cancel() -> None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    exit_stack.push_async_callback(cancel)


def serve_metrics(settings: Settings, meters: metrics.Metrics) -> None:
    """``/metrics`` on ``metrics_port`` (none with 0), left running: it lives as long as the
    process."""
    if settings.metrics_port:
        prometheus_client.start_http_server(
            settings.metrics_port, addr=settings.bind_address, registry=meters.registry
        )


async def connect_kubernetes(exit_stack: contextlib.AsyncExitStack) -> client.ApiClient:
    api = await client.connect()
    exit_stack.push_async_callback(api.close)
    return api


@dataclass(frozen=True, slots=True)
class Stores:
    """Where the scheduler's reports go, and how the replica reads and writes ScheduledJobs
    (the kubernetes lock backend's too)."""

    api: status_api.StatusApi
    cache: objects.ObjectCache
    statuses: status_store.StatusStore
    warnings: event_store.EventStore
    run_logs: log_store.LogStore

    @property
    def reports(self) -> list[protocols.RunStore]:
        return [self.statuses, self.warnings, self.run_logs]


def open_stores(
    settings: Settings,
    exit_stack: contextlib.AsyncExitStack,
    *,
    api: client.ApiClient,
    meters: metrics.Metrics,
) -> Stores:
    """The object cache, the status store (its backlog and lag metered), the Event store and
    the log line per run, their writers running until ``exit_stack`` closes (the status
    writer's last flush is the stop's)."""
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
    meters.watch_status_writer(backlog=lambda: statuses.backlog, lag=lambda: statuses.lag)
    warnings = event_store.EventStore(
        cache=cache,
        api=events.EventsApi(api, replica=settings.replica_id),
        wall=clocks.system_wall,
        writes_per_second=settings.event_writes_per_second,
    )
    background(exit_stack, warnings.run(), name="event writer")
    run_logs = log_store.LogStore(lines_per_second=settings.run_log_lines_per_second)
    background(exit_stack, run_logs.run(), name="run log summaries")
    return Stores(kube_status, cache, statuses, warnings, run_logs)


async def discover_members(
    settings: Settings, exit_stack: contextlib.AsyncExitStack
) -> membership.Membership | None:
    """With ``sharding``, the other replicas' membership Leases, listed before any job is armed
    so that it is armed with its share; this replica's own Lease left when ``exit_stack``
    closes, should the stop not have run.

    The Leases go through an API client of their own, its connections for them alone: on the
    replica's shared client, a renewal waited for a connection behind every claim and Job
    being written (the start's arming and a burst of slots hold all of them), and a replica
    whose Lease is not renewed in time is taken for gone by the others, its jobs moved away."""
    if not settings.sharding:
        return None
    api = await connect_kubernetes(exit_stack)
    members = membership.Membership(
        api,
        namespace=settings.membership_namespace,
        member=settings.replica_id,
        group=membership.group_of(settings.namespaces),
    )
    exit_stack.push_async_callback(members.leave)
    await members.discover()
    return members


def connect_redis(
    settings: Settings, exit_stack: contextlib.AsyncExitStack
) -> redis_connections.Connection | None:
    """The one client for ``redis_url`` (none without one), shared by the slot lock, the run
    leases and the queue targets' stream claims, its pool sized for the three at once; closed
    after them, as it is opened before them."""
    if not settings.redis_url:
        return None
    shared = redis_connections.connect(
        settings.redis_url, max_connections=redis_connections.SHARED_MAX_CONNECTIONS
    )
    exit_stack.push_async_callback(shared.client.aclose)
    return shared


@dataclass(frozen=True, slots=True)
class Lock:
    tracked: health.HealthTrackingLock
    """The slot lock, its health tracked (and metered)."""
    tells_backups: protocols.TellsBackups | None
    """With sharding and the redis backend: where an owner's claims tell the job's backup."""


def open_lock(
    settings: Settings,
    exit_stack: contextlib.AsyncExitStack,
    *,
    meters: metrics.Metrics,
    redis_connection: redis_connections.Connection | None,
    stores: Stores | None = None,
) -> Lock:
    """The slot lock of ``lock_backend``; the kubernetes backend claims through ``stores`` (the
    status this replica has pending rides along)."""
    lock: protocols.SlotLock
    tells_backups: protocols.TellsBackups | None = None
    match settings.lock_backend:
        case "redis":
            if redis_connection is None:  # the settings refuse the redis backend without a URL
                raise ValueError("no Redis URL")
            redis_lock = redis.RedisLock(
                redis_connection.client,
                description=redis_connection.description,
                password=redis_connection.password,
                owns_client=False,
                scope=_notice_scope(settings),
                acknowledgement=settings.acknowledgement,
                fails_over=redis_connection.fails_over,
            )
            exit_stack.push_async_callback(redis_lock.close)
            tells_backups = redis_lock if settings.sharding else None
            lock = redis_lock
        case "kubernetes":
            if stores is None:
                raise ValueError("the kubernetes lock backend needs the Kubernetes API")
            lock = kubernetes.KubernetesLock(
                api=stores.api, cache=stores.cache, carrier=stores.statuses
            )
        case _:
            lock = memory.MemoryLock()
    tracked = health.HealthTrackingLock(lock, backend=settings.lock_backend)
    meters.watch_lock_backend(settings.lock_backend, up=lambda: tracked.available)
    return Lock(tracked, tells_backups)


def _notice_scope(settings: Settings) -> str | None:
    """Where this installation's owners tell its backups (with sharding): scoped as its
    membership Leases are, so that installations sharing a Redis never hear each other."""
    if not settings.sharding:
        return None
    return claim_notices.scope(
        namespace=settings.membership_namespace,
        group=membership.group_of(settings.namespaces),
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


def open_durable_runs(
    settings: Settings,
    exit_stack: contextlib.AsyncExitStack,
    *,
    redis_connection: redis_connections.Connection | None,
) -> DurableRuns | None:
    """Run leases and their heartbeat (redis backend only), on the shared Redis client."""
    if settings.lock_backend != "redis":
        return None
    if redis_connection is None:  # the settings refuse the redis backend without a URL
        raise ValueError("no Redis URL")
    run_leases = redis_leases.RedisRunLeases(redis_connection, owns_client=False)
    exit_stack.push_async_callback(run_leases.close)
    return DurableRuns(run_leases, leases.Heartbeat(run_leases, replica=settings.replica_id))


def start_scheduler(
    settings: Settings,
    exit_stack: contextlib.AsyncExitStack,
    lock: protocols.SlotLock,
    *,
    meters: metrics.Metrics,
    stores: Iterable[protocols.RunStore] = (),
    durable: DurableRuns | None = None,
    cache: objects.ObjectCache | None = None,
) -> supervisor.Supervisor:
    """The scheduler on ``lock`` (metered), reporting to ``stores`` and the metrics (the
    target kind of each job read from ``cache``), its runs' leases held by the heartbeat of
    ``durable``; with ``sharding``,
    it arms only the jobs this replica owns or backs up. Its shutdown is the stop's; should the
    stop not have run (a start that failed half-way), ``exit_stack`` shuts it down."""
    reports = [*stores, metered_store.MeteredStore(meters, cache=cache)]
    scheduler = supervisor.Supervisor(
        wall=clocks.system_wall,
        lock=metered.MeteredLock(lock, meters=meters, backend=settings.lock_backend),
        store=fanout.FanoutStore(*reports),
        replica=settings.replica_id,
        stagger=settings.stagger,
        sharding=(
            sharding.Sharding(member=settings.replica_id, backup_delay=settings.backup_delay)
            if settings.sharding
            else None
        ),
        max_runs_in_flight_per_namespace=settings.max_runs_in_flight_per_namespace,
        max_queued_runs_per_namespace=settings.max_queued_runs_per_namespace,
        max_backfills_per_namespace=settings.max_backfills_per_namespace,
        leases=durable.heartbeat if durable is not None else None,
    )
    meters.scheduled_jobs.set_function(lambda: len(scheduler.armed))
    exit_stack.push_async_callback(scheduler.shutdown)
    return scheduler
