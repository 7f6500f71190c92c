"""What one replica is told: ``punctual run``'s options, parsed and checked."""

import importlib.metadata
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Literal, get_args

from punctual.api import spec_bounds
from punctual.redis_io import connections as redis_connections
from punctual.redis_io import replication
from punctual.runtime import sharding as sharding_
from punctual.scheduling import backfill, durations, overlap
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets import addresses
from punctual.targets.http import connections as http_connections
from punctual.targets.queue import stream as queue_stream
from punctual.targets.queue import wiring as queue_wiring

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
    redis_wait_timeout: timedelta = replication.NO_WAIT.timeout
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
    max_stream_bytes: int = queue_wiring.DEFAULT_MAX_STREAM_BYTES
    """The most bytes a queue target's stream keeps: its ``maxLen`` times one entry's."""
    stream_idle_expiry: timedelta = queue_stream.DEFAULT_IDLE_EXPIRY
    """How long a queue target's stream lives after its last append; zero: forever."""
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
    backup_delay: timedelta = sharding_.BACKUP_DELAY
    """How long after a slot its backup claims it, if the owner left it free."""
    membership_namespace: str = "default"
    """Where the replicas' membership Leases are (the operator's namespace)."""
    bounds: spec_bounds.Bounds = spec_bounds.DEFAULT_BOUNDS
    """What the platform allows one job: checked at admission and before a job is armed."""
    max_runs_in_flight_per_namespace: int = overlap.MAX_RUNS_IN_FLIGHT_PER_NAMESPACE
    """The most runs of one namespace's jobs in flight at once on this replica."""
    max_queued_runs_per_namespace: int = overlap.MAX_QUEUED_RUNS_PER_NAMESPACE
    """The most runs of one namespace's jobs queued at once on this replica."""
    max_backfills_per_namespace: int = backfill.MAX_BACKFILLS_PER_NAMESPACE
    """The most backfills of one namespace's jobs going at once on this replica."""
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
            ("--max-stream-bytes", self.max_stream_bytes),
            ("--max-runs-in-flight-per-namespace", self.max_runs_in_flight_per_namespace),
            ("--max-queued-runs-per-namespace", self.max_queued_runs_per_namespace),
            ("--max-backfills-per-namespace", self.max_backfills_per_namespace),
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
    def acknowledgement(self) -> replication.Acknowledgement:
        return replication.Acknowledgement(
            replicas=self.redis_wait_replicas, timeout=self.redis_wait_timeout
        )

    @property
    def liveness_endpoint(self) -> str | None:
        if not self.health_port:
            return None
        return f"http://{self.bind_address}:{self.health_port}/healthz"
