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
import pathlib
import socket
import ssl
from datetime import timedelta
from pathlib import Path

import kopf
import uvloop

from punctual import replica
from punctual.api import queue_models, spec_bounds
from punctual.cli import log_format
from punctual.controller import admission, handlers
from punctual.kube import events, membership
from punctual.replica import settings as replica_settings
from punctual.scheduling import durations, overlap
from punctual.scheduling.errors import InvalidSpecError
from punctual.stores import logs as log_store
from punctual.targets import addresses
from punctual.targets.http import connections as http_connections
from punctual.targets.queue import wiring as queue_wiring


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
        "--http-allowed-hosts",
        action="append",
        default=[],
        metavar="PATTERNS",
        help="HTTP targets may call only these hosts: host names, '*.suffix', IP addresses or "
        "networks, each optionally with :PORT; comma-separated or repeated (default: any host "
        "but link-local addresses, cloud metadata endpoints and the API server, which are "
        "refused unless an address or network pattern here names them)",
    )
    _add_bounds(parser)
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
    parser.set_defaults(handler=run)


def _add_bounds(parser: argparse.ArgumentParser) -> None:
    """What the platform allows one job (``spec_bounds.Bounds``): a spec past them is refused at
    admission and ``InvalidSpec`` in status, the flag named in the message. With them, the one
    bound on a namespace's jobs together (not a spec's: applied to runs as they come due)."""
    bounds = spec_bounds.DEFAULT_BOUNDS
    group = parser.add_argument_group(
        "bounds per job and per namespace",
        "what one ScheduledJob, and one namespace's jobs together, may ask of this shared "
        "operator; a spec past them is refused by the webhook and reported InvalidSpec, naming "
        "the field",
    )
    group.add_argument(
        "--min-period",
        default=durations.format(bounds.min_period),
        metavar="DURATION",
        help="the shortest time allowed between two slots of a schedule, every: or cron "
        f"(default: {durations.format(bounds.min_period)}; lower it to allow sub-second "
        "schedules)",
    )
    group.add_argument(
        "--max-timeout",
        default=durations.format(bounds.max_timeout),
        metavar="DURATION",
        help=f"the longest spec.timeout (default: {durations.format(bounds.max_timeout)})",
    )
    group.add_argument(
        "--max-runs-in-flight-per-job",
        type=int,
        default=bounds.max_runs_in_flight,
        metavar="N",
        help="the most runs of one job in flight at once, whatever its concurrencyPolicy; a "
        "slot due at that many is skipped and counted SkippedInFlightLimit (default: "
        f"{bounds.max_runs_in_flight})",
    )
    group.add_argument(
        "--max-runs-in-flight-per-namespace",
        type=int,
        default=overlap.MAX_RUNS_IN_FLIGHT_PER_NAMESPACE,
        metavar="N",
        help="the most runs of one namespace's jobs in flight at once on this replica; a slot "
        "that would add one more is skipped and counted SkippedInFlightLimit (default: "
        f"{overlap.MAX_RUNS_IN_FLIGHT_PER_NAMESPACE}); per replica: with sharding, a "
        "namespace's jobs are spread over the replicas",
    )
    group.add_argument(
        "--max-queued-runs-per-job",
        type=int,
        default=bounds.max_queued,
        metavar="N",
        help=f"the largest spec.maxQueued (default: {bounds.max_queued})",
    )
    group.add_argument(
        "--schedule-horizon-years",
        type=int,
        default=bounds.schedule_horizon_years,
        metavar="N",
        help="a schedule must fire within the next N years, or its spec is invalid; 1 to "
        f"{spec_bounds.LONGEST_SCHEDULE_HORIZON_YEARS} (default: {bounds.schedule_horizon_years}, "
        "which accepts every yearly schedule and 29 February)",
    )
    for flag, default, field in (
        ("--max-job-template-bytes", bounds.max_job_template_bytes, "job.template, as JSON"),
        ("--max-http-body-bytes", bounds.max_http_body_bytes, "http.body, in UTF-8"),
        (
            "--max-http-headers-bytes",
            bounds.max_http_headers_bytes,
            "http.headers, as sent ('Name: value' and a line break each)",
        ),
        ("--max-queue-payload-bytes", bounds.max_queue_payload_bytes, "queue.payload, as JSON"),
    ):
        group.add_argument(
            flag,
            type=int,
            default=default,
            metavar="BYTES",
            help=f"the largest spec.target.{field} (default: {default})",
        )


def run(arguments: argparse.Namespace) -> int:
    log_format.configure(format=arguments.log_format, level=arguments.log_level)
    logging.getLogger("kopf.objects").addFilter(handlers.RefusalsAreNotErrors())
    try:
        settings = _settings(arguments)
    except (InvalidSpecError, ValueError) as error:
        print(f"punctual run: {error}")
        return 2
    # What is loaded by now (kopf, the generated Kubernetes client: ~100k objects) lives as long
    # as the process: take it out of the garbage collector's sight (and again once the jobs
    # are armed, in ``_operate``). A full collection would otherwise walk all of it, stalling
    # the event loop, and every slot due meanwhile.
    _freeze_what_lives_on()
    gc.set_threshold(*GC_THRESHOLDS)
    loop_factory = uvloop.new_event_loop if arguments.event_loop == EventLoop.UVLOOP else None
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_operate(settings))
    except membership.ForbiddenError as error:
        print(f"punctual run: {error}")
        return 1
    return 0


GC_THRESHOLDS = (700, 10, 1000)
"""The collector's thresholds: Python's own for the young generations; a full collection only
after 1,000 collections of the middle one (Python's: 10). At 10,000 jobs the objects that live
beyond two young collections (each slot's wait, a job's pending status, the newest body of each
object) reach the oldest generation at thousands a second: with Python's threshold a full
collection walked the whole heap every few seconds, each taking long enough that the slots due
meanwhile were late (docs/benchmarks.md). Each full collection finds few objects in cycles:
keeping them longer costs little memory."""


def _freeze_what_lives_on() -> None:
    """Collect, then move every object left out of the collector's sight for good (it still
    frees them when unreferenced, but no longer walks them)."""
    gc.collect()
    gc.freeze()


def _settings(arguments: argparse.Namespace) -> replica_settings.ReplicaSettings:
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
        warm_start_gate_image=arguments.warm_start_gate_image,
        bounds=spec_bounds.Bounds(
            min_period=durations.parse(arguments.min_period, field="--min-period"),
            max_timeout=durations.parse(arguments.max_timeout, field="--max-timeout"),
            max_runs_in_flight=arguments.max_runs_in_flight_per_job,
            max_queued=arguments.max_queued_runs_per_job,
            max_job_template_bytes=arguments.max_job_template_bytes,
            max_http_body_bytes=arguments.max_http_body_bytes,
            max_http_headers_bytes=arguments.max_http_headers_bytes,
            max_queue_payload_bytes=arguments.max_queue_payload_bytes,
            schedule_horizon_years=arguments.schedule_horizon_years,
        ),
    )
    settings = dataclasses.replace(
        settings, refused_addresses=addresses.parse_refused(arguments.http_refused_addresses)
    )
    if not arguments.http_allowed_hosts:
        return settings
    allowed = addresses.HostAllowlist.parse(arguments.http_allowed_hosts)
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


async def _operate(settings: replica_settings.ReplicaSettings) -> None:
    async with replica.Replica(settings) as operator:
        await operator.start()
        # Every job is armed: its loop, plan, executor and cached body live as long as it does
        # (~35 objects per job, a third of the heap at 10,000 jobs): out of a full collection's
        # walk too.
        _freeze_what_lives_on()
        kopf_registry = kopf.OperatorRegistry()
        handlers.register(kopf_registry, operator.reconciler, operator, reviews=operator.admission)
        kopf_settings = kopf.OperatorSettings()
        # The settings refuse a webhook port without a certificate.
        if settings.webhook_port and settings.webhook_cert_dir is not None:
            kopf_settings.admission.server = _webhook_server(
                addr=settings.bind_address,
                port=settings.webhook_port,
                cert_dir=settings.webhook_cert_dir,
                client_ca=settings.webhook_client_ca,
            )
        kopf_settings.posting.level = logging.WARNING  # our Events are explicit, not log lines
        # What kopf posts (the reconciler's InvalidSpec and the like) is from us too.
        kopf_settings.posting.reporting_component = events.REPORTING_CONTROLLER
        kopf_settings.posting.reporting_instance = settings.replica_id
        kopf_settings.posting.event_name_prefix = f"{events.REPORTING_CONTROLLER}-"
        # on.event handlers only: kopf's deep copy of every body to diff it is for nothing.
        kopf_settings.persistence.diffbase_storage = handlers.NoDiffBase()
        # The initial listing in pages: 10,000 objects are not one response held at once.
        kopf_settings.watching.chunk_size = 500
        # At a stop, the events still queued only tell of objects the stop lets go (a replica
        # that starts lists them all again): kopf's 2 s for them, of a stop that has 5 s, is
        # more than their worth.
        kopf_settings.queueing.exit_timeout = 0.5
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


def _webhook_server(
    *, addr: str, port: int, cert_dir: pathlib.Path, client_ca: pathlib.Path | None
) -> handlers.ReviewServer:
    """kopf's HTTPS server for the admission webhook, on the certificate in ``cert_dir``; with
    ``client_ca``, a client without a certificate it signed is refused at the TLS handshake.

    kopf's own server does all the webhook needs: a certificate from files, re-read when they
    change (a renewed Secret), client certificates verified, and a bounded body (aiohttp's
    1 MiB). kopf does not manage the webhook configuration (``settings.admission.managed``
    stays unset): that is the chart's.
    """
    return handlers.ReviewServer(
        addr=addr,
        port=port,
        certfile=cert_dir / "tls.crt",
        pkeyfile=cert_dir / "tls.key",
        verify_cafile=client_ca,
        verify_mode=ssl.CERT_REQUIRED if client_ca is not None else None,
    )
