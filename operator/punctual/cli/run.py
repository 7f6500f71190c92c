"""``punctual run``: the operator, one replica of it."""

import argparse
import asyncio
import contextlib
import enum
import gc
import logging
import os
import socket
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta

import kopf
import prometheus_client
import uvloop

from punctual import metrics
from punctual.contracts import protocols
from punctual.controller import handlers, reconciler, targets
from punctual.kube import client, objects, secrets, status_api
from punctual.locks import (
    health,
    kubernetes,
    memory,
    metered,
    redis,
    redis_leases,
)
from punctual.runtime import clocks, leases, supervisor
from punctual.scheduling import durations
from punctual.scheduling.errors import InvalidSpecError
from punctual.stores import events as event_store
from punctual.stores import fanout
from punctual.stores import metered as metered_store
from punctual.stores import status as status_store
from punctual.targets.http import allowlist
from punctual.targets.http import connections as http_connections
from punctual.targets.job import requests as batch_job_requests
from punctual.targets.job import watcher as batch_job_watcher
from punctual.targets.queue import stream as queue_stream

logger = logging.getLogger(__name__)


class EventLoop(enum.StrEnum):
    UVLOOP = "uvloop"
    ASYNCIO = "asyncio"


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = commands.add_parser(
        "run",
        help="run the operator",
        description="Run one replica of the operator. Every replica schedules every "
        "ScheduledJob in its scope; slot locks make each slot run exactly once.",
    )
    parser.add_argument(
        "--namespace",
        action="append",
        default=[],
        metavar="NS",
        help="watch only this namespace (repeatable; default: all namespaces)",
    )
    parser.add_argument(
        "--lock-backend", choices=["redis", "kubernetes", "memory"], default="kubernetes"
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("PUNCTUAL_REDIS_URL"),
        metavar="URL",
        help="redis:// or rediss:// URL (default: $PUNCTUAL_REDIS_URL)",
    )
    parser.add_argument(
        "--replica-id",
        default=f"{socket.gethostname()}-{os.getpid()}",
        metavar="ID",
        help="this replica's name in locks and status (default: host-pid)",
    )
    parser.add_argument(
        "--replica-stagger",
        default=None,
        metavar="DURATION",
        help="a fixed offset added to this replica's lock attempts (default: none)",
    )
    parser.add_argument(
        "--bind-address",
        default="0.0.0.0",
        metavar="ADDRESS",
        help="where /metrics and /healthz listen (default: all interfaces)",
    )
    parser.add_argument("--metrics-port", type=int, default=8080, metavar="N", help="0: off")
    parser.add_argument("--health-port", type=int, default=8081, metavar="N", help="0: off")
    parser.add_argument(
        "--status-interval",
        default="5s",
        metavar="DURATION",
        help="the most often one replica writes one job's status (default: 5s)",
    )
    parser.add_argument(
        "--status-writes-per-second",
        type=int,
        default=100,
        metavar="N",
        help="the most statuses one replica writes per second, whatever the number of jobs "
        "(default: 100); with more jobs, each job's status is written less often",
    )
    parser.add_argument(
        "--http-allowed-hosts",
        action="append",
        default=[],
        metavar="PATTERNS",
        help="HTTP targets may call only these hosts: host names, '*.suffix', IP addresses or "
        "networks, each optionally with :PORT; comma-separated or repeated (default: any host "
        "but link-local addresses, cloud metadata endpoints and the API server, which are "
        "refused unless an address or network pattern here names them)",
    )
    parser.add_argument(
        "--event-loop",
        choices=[loop.value for loop in EventLoop],
        default=EventLoop.UVLOOP.value,
        help="uvloop (default: the same asyncio API, its loop written in C) or the standard "
        "library's asyncio loop",
    )
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # kopf logs every handler call at INFO: a line per watch event is noise at our scale.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    try:
        stagger = (
            durations.parse(arguments.replica_stagger, field="--replica-stagger")
            if arguments.replica_stagger
            else timedelta()
        )
        interval = durations.parse(arguments.status_interval, field="--status-interval")
        if arguments.lock_backend == "redis" and not arguments.redis_url:
            raise InvalidSpecError("--redis-url", "required with --lock-backend redis")
        if arguments.status_writes_per_second < 1:
            raise InvalidSpecError("--status-writes-per-second", "must be at least 1")
        allowed_hosts = (
            allowlist.HostAllowlist.parse(arguments.http_allowed_hosts)
            if arguments.http_allowed_hosts
            else None
        )
    except (InvalidSpecError, ValueError) as error:
        print(f"punctual run: {error}")
        return 2
    # What is loaded by now (kopf, the generated Kubernetes client: ~100k objects) lives as long
    # as the process: take it out of the garbage collector's sight. A full collection would
    # otherwise walk all of it (300-700 ms on two busy cores), stalling the event loop, and
    # every slot due meanwhile, whenever the allocations of a burst of runs trigger one.
    gc.collect()
    gc.freeze()
    loop_factory = uvloop.new_event_loop if arguments.event_loop == EventLoop.UVLOOP else None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(
            _operate(
                arguments, stagger=stagger, status_interval=interval, allowed_hosts=allowed_hosts
            )
        )
    return 0


async def _operate(
    arguments: argparse.Namespace,
    *,
    stagger: timedelta,
    status_interval: timedelta,
    allowed_hosts: allowlist.HostAllowlist | None = None,
) -> None:
    registry = prometheus_client.CollectorRegistry()
    meters = metrics.Metrics(registry)
    if arguments.metrics_port:
        prometheus_client.start_http_server(
            arguments.metrics_port, addr=arguments.bind_address, registry=registry
        )
    async with contextlib.AsyncExitStack() as stack:
        api = await client.connect()
        stack.push_async_callback(api.close)
        cache = objects.ObjectCache()
        kube_status = status_api.StatusApi(api)
        statuses = status_store.StatusStore(
            api=kube_status,
            cache=cache,
            replica=arguments.replica_id,
            wall=clocks.system_wall,
            interval=status_interval,
            writes_per_second=arguments.status_writes_per_second,
        )
        lock = await stack.enter_async_context(
            _lock(arguments, api=kube_status, cache=cache, carrier=statuses)
        )
        tracked = health.HealthTrackingLock(lock, backend=arguments.lock_backend)
        durable = await stack.enter_async_context(_durable_runs(arguments))
        stores: list[protocols.RunStore] = [
            statuses,
            event_store.EventStore(cache=cache),
            metered_store.MeteredStore(meters),
        ]
        stores += [durable.heartbeat] if durable is not None else []
        scheduler = supervisor.Supervisor(
            wall=clocks.system_wall,
            lock=metered.MeteredLock(tracked, meters=meters, backend=arguments.lock_backend),
            store=fanout.FanoutStore(*stores),
            replica=arguments.replica_id,
            stagger=stagger,
        )
        meters.scheduled_jobs.set_function(lambda: len(scheduler.armed))
        guard = allowlist.AddressGuard.default(
            api_server=await _api_server(api.configuration.host), allowed=allowed_hosts
        )
        connections = await stack.enter_async_context(
            http_connections.HttpConnections(refuse=guard.refusal)
        )
        batch_jobs = batch_job_requests.BatchJobsApi(api)
        # One watch of our Jobs for the whole operator, started by the first job-target run.
        batch_watcher = batch_job_watcher.BatchJobWatcher(
            batch_jobs, namespaces=arguments.namespace
        )
        stack.push_async_callback(batch_watcher.close)
        streams = await stack.enter_async_context(_streams(arguments))
        scheduled_jobs = reconciler.Reconciler(
            scheduler=scheduler,
            store=statuses,
            cache=cache,
            targets=targets.Targets(
                connections=connections,
                secrets=secrets.SecretReader(api),
                allowed_hosts=allowed_hosts,
                guard=guard,
                batch_jobs=batch_jobs,
                batch_job_watcher=batch_watcher,
                streams=streams,
                meter_lock=lambda lock: metered.MeteredLock(
                    lock, meters=meters, backend="redis-stream"
                ),
            ),
            wall=clocks.system_wall,
            # Only Redis is a backend of its own: the kubernetes lock fails exactly when status
            # cannot be written either, and the memory lock always answers.
            lock_health=tracked if arguments.lock_backend == "redis" else None,
        )
        # Started before kopf, so not among the tasks kopf cancels when it stops (those it
        # finds started after it): they end in ``_Stopping.stop``.
        stopping = _Stopping(
            scheduler=scheduler,
            statuses=statuses,
            flusher=asyncio.create_task(statuses.run(), name="status writer"),
            prober=asyncio.create_task(tracked.watch(), name="lock health"),
            durable=durable,
            durable_tasks=durable.start(scheduler) if durable is not None else [],
        )
        kopf_registry = kopf.OperatorRegistry()
        handlers.register(kopf_registry, scheduled_jobs, stopping)
        settings = kopf.OperatorSettings()
        settings.posting.level = logging.WARNING  # our Events are explicit, not log lines
        # on.event handlers only: kopf's deep copy of every body to diff it is for nothing.
        settings.persistence.diffbase_storage = handlers.NoDiffBase()
        # The initial listing in pages: 10,000 objects are not one response held at once.
        settings.watching.chunk_size = 500
        try:
            await kopf.operator(
                registry=kopf_registry,
                settings=settings,
                standalone=True,
                clusterwide=not arguments.namespace,
                namespaces=arguments.namespace,
                liveness_endpoint=(
                    f"http://{arguments.bind_address}:{arguments.health_port}/healthz"
                    if arguments.health_port
                    else None
                ),
            )
        finally:
            # Done already by kopf's cleanup on a normal stop; not when kopf failed to start,
            # was cancelled, or its cleanup was cut short.
            await stopping.stop()


async def _api_server(url: str) -> list[tuple[str, int]]:
    """Each (address, port) the API server is reached at: HTTP targets are refused there."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or allowlist.DEFAULT_PORTS.get(parts.scheme, 443)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            parts.hostname, port, type=socket.SOCK_STREAM
        )
    except OSError:
        return []  # the API client will say why it cannot reach it
    return sorted({(str(info[4][0]), port) for info in infos})


@dataclass
class _Stopping:
    """The replica's stop, in order: every run ended and recorded, run leases released, every
    status written (the API client, Redis and the HTTP connections still open). Idempotent: called
    by kopf's cleanup handler, and again by ``_operate`` as a safety net."""

    scheduler: supervisor.Supervisor
    statuses: status_store.StatusStore
    flusher: asyncio.Task[None]
    prober: asyncio.Task[None]
    durable: "_DurableRuns | None"
    durable_tasks: list[asyncio.Task[None]]
    _done: bool = field(default=False, init=False)

    async def stop(self) -> None:
        if self._done:
            return
        self.prober.cancel()  # no Ready changes any more: they would come after the last write
        await self.scheduler.shutdown()  # runs cancelled, recorded Failed ("operator stopping")
        if self.durable is not None:
            await self.durable.stop(self.durable_tasks)
        self.statuses.close()  # the writes in flight finish, then everything left is written
        await asyncio.wait([self.flusher, self.prober])
        if not self.flusher.cancelled() and self.flusher.exception() is not None:
            logger.error("the status writer failed", exc_info=self.flusher.exception())
        self._done = True


@contextlib.asynccontextmanager
async def _lock(
    arguments: argparse.Namespace,
    *,
    api: status_api.StatusApi,
    cache: objects.ObjectCache,
    carrier: protocols.StatusCarrier,
) -> AsyncIterator[protocols.SlotLock]:
    match arguments.lock_backend:
        case "redis":
            lock = redis.RedisLock.from_url(arguments.redis_url)
            try:
                yield lock
            finally:
                await lock.close()
        case "kubernetes":
            # The claim is a status write: the status this replica has pending rides along.
            yield kubernetes.KubernetesLock(api=api, cache=cache, carrier=carrier)
        case _:
            yield memory.MemoryLock()


@contextlib.asynccontextmanager
async def _streams(
    arguments: argparse.Namespace,
) -> AsyncIterator[queue_stream.StreamClaims | None]:
    """The Redis of queue targets: the operator's --redis-url, whatever the lock backend."""
    if not arguments.redis_url:
        yield None
        return
    streams = queue_stream.StreamClaims.from_url(arguments.redis_url)
    try:
        yield streams
    finally:
        await streams.close()


@dataclass(frozen=True)
class _DurableRuns:
    """Durable runs (redis backend): a lease per run in flight, renewed by a heartbeat; a
    replica that dies mid-run leaves an expiring lease, which another replica takes over."""

    backend: redis_leases.RedisRunLeases
    heartbeat: leases.Heartbeat

    def start(self, scheduler: supervisor.Supervisor) -> list[asyncio.Task[None]]:
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

    async def stop(self, tasks: list[asyncio.Task[None]]) -> None:
        """After the scheduler's shutdown: runs it cancelled are recorded (Failed, "operator
        stopping"), so their leases go too, or another replica would record them Lost."""
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(protocols.LockUnavailableError):
            await self.heartbeat.close()


@contextlib.asynccontextmanager
async def _durable_runs(arguments: argparse.Namespace) -> AsyncIterator[_DurableRuns | None]:
    if arguments.lock_backend != "redis":
        yield None
        return
    run_leases = redis_leases.RedisRunLeases.from_url(arguments.redis_url)
    try:
        yield _DurableRuns(run_leases, leases.Heartbeat(run_leases, replica=arguments.replica_id))
    finally:
        await run_leases.close()
