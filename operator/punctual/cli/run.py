"""``punctual run``: the operator, one replica of it (``punctual.replica``) run by kopf.

This parses and checks the options, sets up logging, the garbage collector and the event loop;
the replica builds and tears down everything it runs on."""

import argparse
import asyncio
import contextlib
import dataclasses
import enum
import gc
import logging
import os
import socket
from datetime import timedelta
from pathlib import Path

import kopf
import uvloop

from punctual import replica
from punctual.controller import handlers
from punctual.scheduling import durations
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets.http import allowlist


class EventLoop(enum.StrEnum):
    UVLOOP = "uvloop"
    ASYNCIO = "asyncio"


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = commands.add_parser(
        "run",
        help="run the operator",
        description="Run one replica of the operator. Each ScheduledJob in its scope is "
        "scheduled by its owner and its backup among the live replicas (or by every replica, "
        "--sharding off); slot locks make each slot run exactly once.",
    )
    parser.add_argument(
        "--namespace",
        action="append",
        default=[],
        metavar="NS",
        help="watch only this namespace (repeatable; default: all namespaces)",
    )
    parser.add_argument("--lock-backend", choices=replica.LOCK_BACKENDS, default="kubernetes")
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
        "--sharding",
        choices=["on", "off"],
        default="on",
        help="on (default): each job is scheduled by its owner, and by a backup --backup-delay "
        "later, among the replicas holding a Lease in --membership-namespace; off: every "
        "replica schedules every job",
    )
    parser.add_argument(
        "--backup-delay",
        default="250ms",
        metavar="DURATION",
        help="how long after a slot a job's backup claims it, if its owner did not (default: "
        "250ms)",
    )
    parser.add_argument(
        "--membership-namespace",
        default=None,
        metavar="NS",
        help="where the replicas' Leases are (default: $POD_NAMESPACE, else the service "
        "account's namespace, else the first --namespace, else default)",
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
        settings = _settings(arguments)
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
        runner.run(_operate(settings))
    return 0


def _settings(arguments: argparse.Namespace) -> replica.ReplicaSettings:
    """Raises ``InvalidSpecError`` or ``ValueError`` naming the option, in the options' order."""
    settings = replica.ReplicaSettings(
        replica_id=arguments.replica_id,
        namespaces=tuple(arguments.namespace),
        lock_backend=arguments.lock_backend,
        redis_url=arguments.redis_url,
        stagger=(
            durations.parse(arguments.replica_stagger, field="--replica-stagger")
            if arguments.replica_stagger
            else timedelta()
        ),
        status_interval=durations.parse(arguments.status_interval, field="--status-interval"),
        status_writes_per_second=arguments.status_writes_per_second,
        bind_address=arguments.bind_address,
        metrics_port=arguments.metrics_port,
        health_port=arguments.health_port,
        sharding=arguments.sharding == "on",
        backup_delay=durations.parse(arguments.backup_delay, field="--backup-delay"),
        membership_namespace=_membership_namespace(arguments),
    )
    if not arguments.http_allowed_hosts:
        return settings
    allowed = allowlist.HostAllowlist.parse(arguments.http_allowed_hosts)
    return dataclasses.replace(settings, allowed_hosts=allowed)


SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _membership_namespace(arguments: argparse.Namespace) -> str:
    if arguments.membership_namespace:
        return str(arguments.membership_namespace)
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    with contextlib.suppress(OSError):
        if namespace := SERVICE_ACCOUNT_NAMESPACE.read_text().strip():
            return namespace
    return str(arguments.namespace[0]) if arguments.namespace else "default"


async def _operate(settings: replica.ReplicaSettings) -> None:
    async with replica.Replica(settings) as operator:
        await operator.start()
        kopf_registry = kopf.OperatorRegistry()
        handlers.register(kopf_registry, operator.reconciler, operator)
        kopf_settings = kopf.OperatorSettings()
        kopf_settings.posting.level = logging.WARNING  # our Events are explicit, not log lines
        # on.event handlers only: kopf's deep copy of every body to diff it is for nothing.
        kopf_settings.persistence.diffbase_storage = handlers.NoDiffBase()
        # The initial listing in pages: 10,000 objects are not one response held at once.
        kopf_settings.watching.chunk_size = 500
        # Leaving the block stops the replica again (a safety net: kopf's cleanup handler has
        # stopped it on a normal stop), then closes its wiring.
        await kopf.operator(
            registry=kopf_registry,
            settings=kopf_settings,
            standalone=True,
            clusterwide=not settings.namespaces,
            namespaces=list(settings.namespaces),
            liveness_endpoint=settings.liveness_endpoint,
        )
