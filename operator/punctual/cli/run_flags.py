"""The options of ``punctual run``: declared with their defaults and help, and read into the
replica's settings (``ReplicaSettings``), each checked and named in the error when wrong.

A new operator flag is added here, beside the field of ``ReplicaSettings`` it fills; the bounds
per job and per namespace are ``run_bounds``'. Apart from the command (``run``), which only
sets up the process and runs the replica on what this reads."""

import argparse
import contextlib
import dataclasses
import enum
import os
import pathlib
import socket
from datetime import timedelta
from pathlib import Path

from punctual.api import queue_models
from punctual.cli import log_format, run_bounds
from punctual.controller import admission
from punctual.replica import settings as replica_settings
from punctual.scheduling import durations
from punctual.stores import logs as log_store
from punctual.targets import addresses
from punctual.targets.http import connections as http_connections
from punctual.targets.queue import stream as queue_stream
from punctual.targets.queue import wiring as queue_wiring


class EventLoop(enum.StrEnum):
    UVLOOP = "uvloop"
    ASYNCIO = "asyncio"


def add(parser: argparse.ArgumentParser) -> None:
    """Declare every option of ``punctual run`` on ``parser``."""
    parser.add_argument(
        "--namespace",
        action="append",
        default=[],
        metavar="NS",
        help="watch only this namespace (repeatable; default: all namespaces)",
    )
    parser.add_argument(
        "--lock-backend", choices=replica_settings.LOCK_BACKENDS, default="kubernetes"
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("PUNCTUAL_REDIS_URL"),
        metavar="URL",
        help="redis:// or rediss:// URL, or redis+sentinel://[user:password@]host:port[,host:"
        "port...]/service (rediss+sentinel:// for TLS) for a primary behind Sentinel, followed "
        "through failovers (default: $PUNCTUAL_REDIS_URL)",
    )
    parser.add_argument(
        "--redis-wait-replicas",
        type=int,
        default=0,
        metavar="N",
        help="after each round trip of slot claims, WAIT until N replicas of the Redis primary "
        "have them (default: 0, no WAIT: a standalone Redis); a claim they did not acknowledge "
        "is not run until it is checked again after the failover (docs/replicas-and-locks.md)",
    )
    parser.add_argument(
        "--redis-wait-timeout",
        default=durations.format(replica_settings.ReplicaSettings.redis_wait_timeout),
        metavar="DURATION",
        help="how long the primary waits for those replicas (default: "
        f"{durations.format(replica_settings.ReplicaSettings.redis_wait_timeout)}; less than "
        f"{durations.format(replica_settings.MOST_WAIT_TIMEOUT)})",
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
        "--event-writes-per-second",
        type=int,
        default=10,
        metavar="N",
        help="the most Event writes one replica starts per second, whatever the number of jobs "
        "(default: 10); each job's Events are aggregated per reason, written at most once a "
        "minute after the first",
    )
    parser.add_argument(
        "--run-log-lines-per-second",
        type=int,
        default=1,
        metavar="N",
        help="the most run log lines one job writes per second, after a burst of "
        f"{log_store.BURST} (default: 1); above it, the job's runs are one summary line a minute",
    )
    parser.add_argument(
        "--queue-max-len",
        type=int,
        default=queue_wiring.DEFAULT_MAX_LEN_LIMIT,
        metavar="N",
        help="the most entries a queue target's stream keeps (default: "
        f"{queue_wiring.DEFAULT_MAX_LEN_LIMIT}): a spec.target.queue.maxLen above it is not "
        f"scheduled; unset, maxLen is {queue_models.DEFAULT_STREAM_MAX_LEN} or this, if lower",
    )
    parser.add_argument(
        "--max-stream-bytes",
        type=int,
        default=queue_wiring.DEFAULT_MAX_STREAM_BYTES,
        metavar="BYTES",
        help="the most bytes a queue target's stream keeps: its maxLen times one entry, the "
        "payload as JSON and the fields around it (default: "
        f"{queue_wiring.DEFAULT_MAX_STREAM_BYTES}); a job above it is not scheduled "
        "(StreamBytesAboveLimit)",
    )
    parser.add_argument(
        "--stream-idle-expiry",
        default=durations.format(queue_stream.DEFAULT_IDLE_EXPIRY),
        metavar="DURATION",
        help="how long a queue target's stream lives after its last entry: each append sets "
        "its expiry, so the stream of a deleted or stopped job goes away (default: "
        f"{durations.format(queue_stream.DEFAULT_IDLE_EXPIRY)}; 0: never)",
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
    run_bounds.add(parser)
    parser.add_argument(
        "--http-connections-per-namespace",
        type=int,
        default=http_connections.LIMIT_PER_NAMESPACE,
        metavar="N",
        help="the most connections to one host the HTTP targets of one namespace keep busy at "
        f"once (default: {http_connections.LIMIT_PER_NAMESPACE}, of the "
        f"{http_connections.LIMIT_PER_ORIGIN} per host for all namespaces); a freed one goes to "
        "the waiting namespace holding the fewest, so one namespace never makes another wait",
    )
    parser.add_argument(
        "--http-refused-addresses",
        action="append",
        default=[],
        metavar="NETWORKS",
        help="HTTP targets never call these IP addresses or networks either, each optionally "
        "with :PORT; comma-separated or repeated, added to those refused by default (e.g. the "
        "control plane nodes' addresses at the API server's port)",
    )
    parser.add_argument(
        "--webhook-port",
        type=int,
        default=0,
        metavar="N",
        help="serve the validating admission webhook for ScheduledJobs here, over HTTPS, at "
        f"/{admission.WEBHOOK_ID} (default 0: off); needs --webhook-cert-dir",
    )
    parser.add_argument(
        "--webhook-cert-dir",
        type=pathlib.Path,
        default=None,
        metavar="DIR",
        help="the webhook's serving certificate and key: DIR/tls.crt and DIR/tls.key (a "
        "kubernetes.io/tls Secret as a volume); read again within a minute of a change",
    )
    parser.add_argument(
        "--webhook-client-ca",
        type=pathlib.Path,
        default=None,
        metavar="FILE",
        help="answer only clients presenting a certificate this CA (PEM) signed: the one the "
        "API server presents to webhooks (its AdmissionConfiguration's kubeconfig); others "
        "are refused at TLS; read at start and with each renewed serving certificate "
        "(default: none, any client, so a NetworkPolicy must let only the API server reach "
        "--webhook-port)",
    )
    parser.add_argument(
        "--sharding",
        choices=["on", "off"],
        default="on",
        help="on (default): each job is scheduled by its owner, and by a backup --backup-delay "
        "later, among the replicas holding a Lease in --membership-namespace (which needs "
        "get, list, watch, create, update and delete on leases there); off: every replica "
        "schedules every job",
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
        "--warm-start-gate-image",
        default=replica_settings.DEFAULT_WARM_START_GATE_IMAGE,
        metavar="IMAGE",
        help="the image a warm Job's first init container copies the gate from, pulled in the "
        "Job's namespace with its template's imagePullSecrets (mirror it to a registry the "
        "tenants reach); a ScheduledJob's warmStart.gateImage wins over it (default: "
        f"{replica_settings.DEFAULT_WARM_START_GATE_IMAGE}, built beside the operator's image)",
    )
    parser.add_argument(
        "--event-loop",
        choices=[loop.value for loop in EventLoop],
        default=EventLoop.UVLOOP.value,
        help="uvloop (default: the same asyncio API, its loop written in C) or the standard "
        "library's asyncio loop",
    )
    parser.add_argument(
        "--log-format",
        choices=log_format.LOG_FORMATS,
        default="text",
        help="text (default) or json: one JSON object a line, with time, level, logger, "
        "message and the line's fields (kopf's lines too)",
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=log_format.LOG_LEVELS,
        default="INFO",
        help="the least level logged (default: INFO)",
    )


def settings(arguments: argparse.Namespace) -> replica_settings.ReplicaSettings:
    """Raises ``InvalidSpecError`` or ``ValueError`` naming the option, in the options' order."""
    settings = replica_settings.ReplicaSettings(
        replica_id=arguments.replica_id,
        namespaces=tuple(arguments.namespace),
        lock_backend=arguments.lock_backend,
        redis_url=arguments.redis_url,
        redis_wait_replicas=arguments.redis_wait_replicas,
        redis_wait_timeout=durations.parse(
            arguments.redis_wait_timeout, field="--redis-wait-timeout"
        ),
        stagger=(
            durations.parse(arguments.replica_stagger, field="--replica-stagger")
            if arguments.replica_stagger
            else timedelta()
        ),
        status_interval=durations.parse(arguments.status_interval, field="--status-interval"),
        status_writes_per_second=arguments.status_writes_per_second,
        event_writes_per_second=arguments.event_writes_per_second,
        run_log_lines_per_second=arguments.run_log_lines_per_second,
        http_connections_per_namespace=arguments.http_connections_per_namespace,
        queue_max_len=arguments.queue_max_len,
        max_stream_bytes=arguments.max_stream_bytes,
        stream_idle_expiry=_idle_expiry(arguments.stream_idle_expiry),
        bind_address=arguments.bind_address,
        metrics_port=arguments.metrics_port,
        health_port=arguments.health_port,
        webhook_port=arguments.webhook_port,
        webhook_cert_dir=arguments.webhook_cert_dir,
        webhook_client_ca=arguments.webhook_client_ca,
        sharding=arguments.sharding == "on",
        backup_delay=durations.parse(arguments.backup_delay, field="--backup-delay"),
        membership_namespace=_membership_namespace(arguments),
        max_runs_in_flight_per_namespace=arguments.max_runs_in_flight_per_namespace,
        max_queued_runs_per_namespace=arguments.max_queued_runs_per_namespace,
        max_backfills_per_namespace=arguments.max_backfills_per_namespace,
        warm_start_gate_image=arguments.warm_start_gate_image,
        bounds=run_bounds.read(arguments),
    )
    settings = dataclasses.replace(
        settings, refused_addresses=addresses.parse_refused(arguments.http_refused_addresses)
    )
    if not arguments.http_allowed_hosts:
        return settings
    allowed = addresses.HostAllowlist.parse(arguments.http_allowed_hosts)
    return dataclasses.replace(settings, allowed_hosts=allowed)


def _idle_expiry(text: str) -> timedelta:
    """``0`` turns the expiry off; anything else is a positive duration."""
    if text == "0":
        return timedelta()
    return durations.parse(text, field="--stream-idle-expiry")


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
