"""From ``spec.target`` to an executor, and to the lock that claims the job's slots: each kind's
own wiring (``punctual.targets.<kind>.wiring``) does the work, this only picks the kind."""

from collections.abc import Callable
from dataclasses import dataclass

from punctual.api import models
from punctual.contracts import protocols
from punctual.kube import secrets
from punctual.scheduling import slots
from punctual.targets import addresses
from punctual.targets.http import connections as http_connections
from punctual.targets.http import wiring as http_wiring
from punctual.targets.job import requests as batch_job_requests
from punctual.targets.job import watcher as batch_job_watcher
from punctual.targets.job import wiring as batch_job_wiring
from punctual.targets.queue import brokers as queue_brokers
from punctual.targets.queue import stream as queue_stream
from punctual.targets.queue import wiring as queue_wiring


@dataclass(frozen=True, slots=True)
class Wiring:
    executor: protocols.Executor
    lock: protocols.SlotLock | None = None
    """The job's own slot lock; ``None``: the operator's."""
    destination: str = ""
    """Where the runs' work goes that users could not tell from the spec (the queue target's
    stream key), said in the Ready condition's message; empty: nothing to say."""


class Targets:
    def __init__(
        self,
        *,
        meter_lock: Callable[[protocols.SlotLock], protocols.SlotLock] = lambda lock: lock,
        connections: http_connections.HttpConnections,
        secrets: secrets.SecretReader,
        guard: addresses.AddressGuard | None = None,
        batch_jobs: batch_job_requests.BatchJobsApi | None = None,
        batch_job_watcher: batch_job_watcher.BatchJobWatcher | None = None,
        streams: queue_stream.StreamClaims | None = None,
        brokers: queue_brokers.Brokers | None = None,
        queue_max_len: int = queue_wiring.DEFAULT_MAX_LEN_LIMIT,
        warm_start_gate_image: str | None = None,
        warm_start_reports: protocols.WarmStartReports | None = None,
    ) -> None:
        """``meter_lock`` wraps the slot locks of the kinds that bring their own (the queue's);
        the rest, kind by kind, is what each kind's wiring needs. Without ``batch_jobs`` (or
        its watcher) or ``streams``, job or stream targets are unavailable on this operator,
        without ``brokers`` tasks on the tenants' brokers (every format but stream) are;
        ``queue_max_len`` bounds a queue target's ``maxLen``; ``warm_start_gate_image`` is the
        gate's image of a warm job target that names none (``punctual run
        --warm-start-gate-image``), ``warm_start_reports`` where its check at each slot goes
        (the status and Event writers)."""
        self._http = http_wiring.HttpTargets(connections=connections, secrets=secrets, guard=guard)
        self._batch_jobs = batch_job_wiring.BatchJobTargets(
            api=batch_jobs,
            watcher=batch_job_watcher,
            gate_image=warm_start_gate_image,
            warm_start_reports=warm_start_reports,
        )
        self._queues = queue_wiring.QueueTargets(
            streams, max_len_limit=queue_max_len, brokers=brokers, secrets=secrets
        )
        self._meter_lock = meter_lock

    def wire(self, job: slots.JobRef, spec: models.ScheduledJobSpec) -> Wiring:
        """An executor (and lock) for ``spec.target``.

        Raises ``InvalidSpecError`` for what cannot run, ``TargetUnavailableError``
        (``punctual.targets.errors``) for what this operator cannot run.
        """
        target = spec.target
        if target.http is not None:
            return Wiring(self._http.wire(job, target.http))
        if target.queue is not None:
            queue = self._queues.wire(job, target.queue)
            return Wiring(
                queue.executor,
                None if queue.lock is None else self._meter_lock(queue.lock),
                destination=queue.destination,
            )
        assert target.job is not None  # the model allows exactly one target
        return Wiring(self._batch_jobs.wire(job, target.job, spec))
