"""What a target kind is to the rest of the operator: one plug-in per package under
``targets/``, listed once in ``targets.kinds``.

A kind checks its part of a spec (whatever it refuses is ``InvalidSpec`` in status and a refusal
at admission), starts its targets on what the replica shares with every kind (each closing what
it opens on the replica's exit stack), names the API access it needs (the chart grants it), and
goes by its key under ``spec.target``, which is also the ``target`` label of its metrics.
"""

import contextlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from punctual.api import models
from punctual.contracts import protocols
from punctual.kube import client, secrets
from punctual.redis_io import connections, replication
from punctual.scheduling import slots
from punctual.targets import addresses
from punctual.targets import problems as target_problems


@dataclass(frozen=True, slots=True)
class Wiring:
    """One job's executor, as its kind wired it."""

    executor: protocols.Executor
    lock: protocols.SlotLock | None = None
    """The job's own slot lock; ``None``: the operator's."""
    destination: str = ""
    """Where the runs' work goes that users could not tell from the spec (the queue target's
    stream key), said in the Ready condition's message; empty: nothing to say."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessRule:
    """One rule of the operator's RBAC a kind needs: the chart's Role or ClusterRole grants it
    when the kind is enabled."""

    api_group: str
    """``""``: the core group."""
    resource: str
    verbs: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Resources:
    """What the replica shares with every kind, and the operator's options of each."""

    api: client.ApiClient
    """The operator's Kubernetes API client."""
    namespaces: tuple[str, ...] = ()
    """The namespaces watched; none: all of them."""
    secrets: secrets.SecretReader
    guard: addresses.AddressGuard
    """The addresses no target reaches (the API server's among them) and the allowlist."""
    redis: connections.Connection | None = None
    """The operator's one Redis client (``--redis-url``), shared; ``None``: it has none."""
    acknowledgement: replication.Acknowledgement = replication.NO_WAIT
    """The Redis replicas that must have a claim before it counts."""
    warm_start_reports: protocols.WarmStartReports | None = None
    """Where a warm start's check at each slot goes (the status and Event writers)."""
    problems: target_problems.TargetProblems | None = None
    """Where runs tell what they found wrong with a job's destination (Ready False)."""
    http_connections_per_namespace: int
    queue_max_len: int
    max_stream_bytes: int
    stream_idle_expiry: timedelta
    """How long a queue target's stream lives after its last append; zero: forever."""
    warm_start_gate_image: str | None = None


class Targets(Protocol):
    """A kind's targets, started: one job's spec to its wiring."""

    def wire(self, job: slots.JobRef, spec: models.ScheduledJobSpec) -> Wiring:
        """Raises ``InvalidSpecError`` for what cannot run, ``TargetUnavailableError``
        (``punctual.targets.errors``) for what this operator cannot run."""
        ...


class TargetKind(Protocol):
    """One target kind: see the module's docstring."""

    @property
    def name(self) -> str:
        """The kind's key under ``spec.target`` (a field of ``models.Target``)."""
        ...

    @property
    def access(self) -> tuple[AccessRule, ...]:
        """The API access the kind's targets need beyond the operator's own."""
        ...

    def check(self, spec: models.ScheduledJobSpec) -> None:
        """Raise ``InvalidSpecError`` for a target of this kind that can never run, whatever
        the operator's configuration."""
        ...

    async def start(self, resources: Resources, exit_stack: contextlib.AsyncExitStack) -> Targets:
        """This kind's targets on ``resources``; what they open is closed by ``exit_stack``."""
        ...
