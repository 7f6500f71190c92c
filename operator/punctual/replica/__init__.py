"""One replica of the operator: its parts started in order, each on the replica's exit stack,
which closes them in reverse; its stop, named steps in order, before anything closes.

``start`` starts (``replica.parts``), in this order:

1. the metrics and, with a ``metrics_port``, their HTTP server (left running: it lives as long
   as the process);
2. the Kubernetes API client;
3. the object cache, the status store (its backlog and lag metered), the Event store and the
   log line per run, with their writers;
4. with ``sharding``, the other replicas' membership Leases, listed before any job is armed
   (``kube.membership``), on an API client of their own;
5. one Redis client for the ``redis_url`` (when given), shared by the slot lock, the run leases
   and the queue targets' stream claims, its pool sized for the three at once
   (``redis_io.connections.SHARED_MAX_CONNECTIONS``);
6. the slot lock (``lock_backend``: redis, kubernetes or memory), its health tracked (and
   metered);
7. durable runs (redis backend): the run leases and their heartbeat;
8. the scheduler (``runtime.supervisor``), on the metered lock, reporting to every store (status,
   Events, the log line per run, metrics); with ``sharding``, it arms only the jobs this replica
   owns or backs up among the members, and, with the redis backend, hears the owners' claim
   notices;
9. the target kinds (``targets.kinds``: the HTTP connections behind the address guard, the
   batch-Job API and its one watcher, the queue's stream claims and the tenants' brokers);
10. the reconciler, and the admission webhook's reviews (with a ``webhook_port``; kopf serves
    them); every ScheduledJob armed from one paged LIST (this replica's share, with sharding),
    and only then this replica's own Lease held;
11. the tasks the stop ends (``replica.stopping``): the ScheduledJob watch, resumed from that
    LIST (``controller.job_events``, beside kopf), the status writer, the lock's health probe,
    the membership (renewal, watch) and, for durable runs, the lease heartbeat and the lost-run
    detector.

``stop`` (kopf's cleanup handler; ``aclose`` again as a safety net) is ``Stopping.stop``: the
membership left, every run ended and recorded, the run leases released, every pending status
written (for ``stores.status.writer.LAST_FLUSH`` at most, what matters most first), while the
API client, Redis and the HTTP connections are still open; a line logs how long each part took.
Only then does ``aclose`` close what ``start`` opened, in reverse.
"""

import asyncio
import contextlib
import os
import socket
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Self

import prometheus_client

from punctual import metrics
from punctual.controller import admission, failures, job_events, reconciler
from punctual.kube import secrets, spec_api
from punctual.locks import metered
from punctual.replica import parts, stopping
from punctual.replica import settings as replica_settings
from punctual.runtime import clocks
from punctual.stores import fanout
from punctual.targets import addresses, kinds, plugin
from punctual.targets import problems as target_problems
from punctual.targets.job import requests as batch_job_requests

SETTLE_AFTER_MEMBERS_CHANGE = timedelta(seconds=10)
"""How long after the fleet's last change the replica's memory is settled: by then the loops of
the jobs it let go have ended, and a rollout's changes, seconds apart, are past."""


class Replica:
    """One operator replica; see the module's docstring for what it owns and in which order."""

    def __init__(
        self,
        settings: replica_settings.ReplicaSettings,
        *,
        settle_memory: Callable[[], None] | None = None,
    ) -> None:
        """``settle_memory`` is what the process does once a change of the fleet has moved
        jobs to or from this replica, ``SETTLE_AFTER_MEMBERS_CHANGE`` after the last change
        (``punctual run``: ``replica.memory.settle``)."""
        self.settings = settings
        self._settle_memory = settle_memory
        self._settling: asyncio.TimerHandle | None = None
        self.meters = metrics.Metrics(
            prometheus_client.CollectorRegistry(), target_kinds=kinds.NAMES
        )
        self._stack = contextlib.AsyncExitStack()
        self._reconciler: reconciler.Reconciler | None = None
        self._admission: admission.Admission | None = None
        self._stopping: stopping.Stopping | None = None

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
        """Start every part, in the order of the module's docstring."""
        settings, stack, meters = self.settings, self._stack, self.meters
        parts.serve_metrics(settings, meters)
        api = await parts.connect_kubernetes(stack)
        stores = parts.open_stores(settings, stack, api=api, meters=meters)
        members = await parts.discover_members(settings, stack)
        shared_redis = parts.connect_redis(settings, stack)
        lock = parts.open_lock(
            settings, stack, meters=meters, redis_connection=shared_redis, stores=stores
        )
        durable = parts.open_durable_runs(settings, stack, redis_connection=shared_redis)
        scheduler = parts.start_scheduler(
            settings,
            stack,
            lock.tracked,
            meters=meters,
            stores=stores.reports,
            durable=durable,
            cache=stores.cache,
        )
        if members is not None:
            scheduler.members_changed(members.members)
        if lock.tells_backups is not None:
            notices = metered.MeteredNotices(scheduler, meters=meters)
            parts.background(
                stack, lock.tells_backups.hear(settings.replica_id, notices), name="claim notices"
            )
        guard = addresses.AddressGuard.default(
            api_server=await _api_server(api_server_urls(api.configuration.host, os.environ)),
            allowed=settings.allowed_hosts,
            refused=settings.refused_addresses,
        )
        if settings.webhook_port:
            self._admission = admission.Admission(
                batch_jobs=batch_job_requests.BatchJobsApi(api),
                wall=clocks.system_wall,
                bounds=settings.bounds,
                warm_start_gate_image=settings.warm_start_gate_image,
            )
        problems = target_problems.TargetProblems()
        targets = await kinds.Targets.start(
            plugin.Resources(
                api=api,
                namespaces=settings.namespaces,
                secrets=secrets.SecretReader(api),
                guard=guard,
                redis=shared_redis,
                acknowledgement=settings.acknowledgement,
                # Told by the job target itself, at the slot: the scheduler does not see pods.
                warm_start_reports=fanout.FanoutStore(stores.statuses, stores.warnings),
                http_connections_per_namespace=settings.http_connections_per_namespace,
                queue_max_len=settings.queue_max_len,
                max_stream_bytes=settings.max_stream_bytes,
                stream_idle_expiry=settings.stream_idle_expiry,
                warm_start_gate_image=settings.warm_start_gate_image,
                problems=problems,
            ),
            stack,
            meter_lock=lambda lock: metered.MeteredLock(
                lock, meters=meters, backend="redis-stream"
            ),
        )
        self._reconciler = reconciler.Reconciler(
            scheduler=scheduler,
            store=stores.statuses,
            cache=stores.cache,
            targets=targets,
            wall=clocks.system_wall,
            warnings=stores.warnings,
            # Only Redis is a backend of its own: the kubernetes lock fails exactly when status
            # cannot be written either, and the memory lock always answers.
            lock_health=lock.tracked if settings.lock_backend == "redis" else None,
            pause=failures.FailurePause(api=spec_api.SpecApi(api), warnings=stores.warnings),
            bounds=settings.bounds,
            problems=problems,
        )
        jobs = job_events.JobEvents(self._reconciler)
        scopes: list[str | None] = [*settings.namespaces] or [None]
        # Every ScheduledJob armed from one paged LIST per scope, before the watch: a
        # restarted replica schedules again at once, and a new one has its share armed before
        # it joins the members. The watch resumes from each listing.
        listed_at = [await jobs.take_in_listing(stores.api, scope) for scope in scopes]
        if members is not None:
            await members.join()
            members.on_change = self.members_changed
        # Started before kopf, so not among the tasks kopf cancels when it stops (those it
        # finds started after it): they end in ``stop``.
        self._stopping = stopping.Stopping(
            members=members,
            members_task=(
                asyncio.create_task(members.run(), name="membership")
                if members is not None
                else None
            ),
            scheduler=scheduler,
            statuses=stores.statuses,
            flusher=asyncio.create_task(stores.statuses.run(), name="status writer"),
            prober=asyncio.create_task(lock.tracked.watch(), name="lock health"),
            durable=durable,
            durable_tasks=durable.start(scheduler) if durable is not None else [],
            jobs=jobs,
            watches=[
                asyncio.create_task(
                    jobs.follow(stores.api, scope, listed_at=resource_version),
                    name=f"ScheduledJobs in {scope or 'every namespace'}",
                )
                for scope, resource_version in zip(scopes, listed_at, strict=True)
            ],
        )

    def members_changed(self, members: frozenset[str]) -> None:
        """The fleet changed (what the membership tells the replica): the reconciler moves the
        jobs, and the memory settles once the changes are past."""
        self.reconciler.members_changed(members)
        if self._settle_memory is None:
            return
        if self._settling is not None:
            self._settling.cancel()
        self._settling = asyncio.get_running_loop().call_later(
            SETTLE_AFTER_MEMBERS_CHANGE.total_seconds(), self._settle_memory
        )

    async def stop(self) -> None:
        """End every run, record its fate and write the pending statuses (``Stopping``);
        idempotent, and nothing to do before ``start`` has returned."""
        if self._settling is not None:
            self._settling.cancel()
        if self._stopping is not None:
            await self._stopping.stop()

    async def aclose(self) -> None:
        """``stop``, then close everything opened, in reverse. The stop is done already by
        kopf's cleanup on a normal stop; not when kopf failed to start, was cancelled, or its
        cleanup was cut short."""
        try:
            await self.stop()
        finally:
            await self._stack.aclose()


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
