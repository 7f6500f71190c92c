"""From ``spec.target.queue`` to its executor, and for a stream to the lock that claims its
slots.

A stream is the job's namespace's (``redis_io.namespace_keys.stream_key``), and it is always
bounded, by entries and by bytes, each entry measured as written (``stream.entry_bytes``):
entries alone cannot bound the memory of a Redis every tenant shares, when each may carry a
payload of ``--max-queue-payload-bytes``. ``maxLen`` unset is
``queue_models.DEFAULT_STREAM_MAX_LEN``, cut to the operator's limit (``--queue-max-len``) and to
as many entries as ``--max-stream-bytes`` holds; a ``maxLen`` the spec sets past either limit is
not scheduled. A task of every other format (``task_models.TASK_FORMATS``) goes to the tenant's
broker (``brokerFrom``), claimed by the operator's slot lock.
"""

from datetime import datetime

from punctual.api import models, queue_models, task_models
from punctual.contracts import records
from punctual.kube import secrets
from punctual.redis_io import namespace_keys
from punctual.scheduling import slots
from punctual.targets import errors, plugin
from punctual.targets import problems as target_problems
from punctual.targets.queue import (
    arq_jobs,
    brokers,
    bullmq_jobs,
    celery_messages,
    dramatiq_messages,
    executor,
    pushes,
    rq_jobs,
    sidekiq_jobs,
    stream,
    taskiq_messages,
)

DEFAULT_MAX_LEN_LIMIT = 100_000
"""The most entries a queue job's stream may keep (``--queue-max-len``)."""
DEFAULT_MAX_STREAM_BYTES = 8 * 1024 * 1024
"""The most bytes a queue job's stream may keep (``--max-stream-bytes``): 32 jobs at it fill
the chart's bundled Redis (docs/queue-messages.md)."""


class QueueTargets:
    """The queue targets of this operator: the stream claims on its Redis (``None``: it has
    none), the longest stream a job may ask for, the tenants' brokers with the Secrets
    that name them (``None``: no broker tasks), and where their runs tell a broker that cannot
    work (``problems``: a Redis Cluster node)."""

    def __init__(
        self,
        streams: stream.StreamClaims | None = None,
        *,
        max_len_limit: int = DEFAULT_MAX_LEN_LIMIT,
        max_stream_bytes: int = DEFAULT_MAX_STREAM_BYTES,
        brokers: brokers.Brokers | None = None,
        secrets: secrets.SecretReader | None = None,
        problems: target_problems.TargetProblems | None = None,
    ) -> None:
        self._streams = streams
        self._max_len_limit = max_len_limit
        self._max_stream_bytes = max_stream_bytes
        self._brokers = brokers
        self._secrets = secrets
        self._problems = problems

    def wire(self, job: slots.JobRef, spec: models.ScheduledJobSpec) -> plugin.Wiring:
        """The job's executor, and a stream's own slot lock, which appends the slot's entry to
        the namespace's stream as it claims it. Raises ``TargetUnavailableError`` when this
        operator has no Redis (a stream) or no brokers (a task), or the stream would be longer
        or larger than its limits."""
        target = spec.target.queue
        assert target is not None  # the registry wires a spec with its own kind
        if target.stream is None:
            return self._wire_task(job, target)
        if self._streams is None:
            raise errors.TargetUnavailableError(
                errors.QUEUE_UNAVAILABLE,
                "spec.target.queue: the queue target needs the operator's Redis, and this "
                "operator has none: run it with --redis-url (or $PUNCTUAL_REDIS_URL)",
            )
        key = namespace_keys.stream_key(namespace=job.namespace, stream=target.stream)
        lock = self._streams.lock_for(
            stream=key, payload=target.payload, max_len=self._bounded_max_len(job, target)
        )
        return plugin.Wiring(
            executor.QueueExecutor(lock, stream=key),
            lock,
            f"entries go to the Redis stream {key}",
        )

    def _wire_task(self, job: slots.JobRef, target: queue_models.QueueTarget) -> plugin.Wiring:
        assert target.broker_from is not None  # the model requires it without a stream
        if self._brokers is None or self._secrets is None:
            raise errors.TargetUnavailableError(
                errors.QUEUE_UNAVAILABLE,
                "spec.target.queue.brokerFrom: this operator pushes to no tenant's broker",
            )
        build, what = _message_builder(target)
        source = target.broker_from
        return plugin.Wiring(
            executor.BrokerExecutor(
                build,
                brokers=self._brokers,
                reader=self._secrets,
                namespace=job.namespace,
                source=source,
                problems=self._problems,
            ),
            None,
            f"{what}, on the broker of Secret {job.namespace}/{source.secret_name} "
            f"key {source.key}",
        )

    def _bounded_max_len(self, job: slots.JobRef, target: queue_models.QueueTarget) -> int:
        """The job's effective ``maxLen``, within both the entries and the bytes allowed. An
        unset ``maxLen`` is the default cut to what the bytes allow, so a large payload shortens
        the stream instead of refusing a job that never asked for a length; a ``maxLen`` the
        spec sets is the tenant's promise, and one past either limit is refused."""
        entry = stream.entry_bytes(job, payload=stream.payload_json(target.payload))
        if target.max_len is None:
            return max(
                1,
                min(
                    queue_models.DEFAULT_STREAM_MAX_LEN,
                    self._max_len_limit,
                    self._max_stream_bytes // entry,
                ),
            )
        if target.max_len > self._max_len_limit:
            raise errors.TargetUnavailableError(
                errors.MAX_LEN_ABOVE_LIMIT,
                f"spec.target.queue.maxLen: {target.max_len} is above this operator's limit "
                f"of {self._max_len_limit} entries per stream (--queue-max-len)",
            )
        if target.max_len * entry > self._max_stream_bytes:
            raise errors.TargetUnavailableError(
                errors.STREAM_BYTES_ABOVE_LIMIT,
                f"spec.target.queue.maxLen: {target.max_len} entries of {entry} bytes each (the "
                f"envelope and spec.target.queue.payload) is {target.max_len * entry} bytes, "
                f"above this operator's limit of {self._max_stream_bytes} per stream "
                "(--max-stream-bytes): lower maxLen or the payload, or leave maxLen unset",
            )
        return target.max_len


def _message_builder(target: queue_models.QueueTarget) -> tuple[executor.MessageBuilder, str]:
    """The message of a run's slot in the target's format, and what it is, for users."""
    found = target.task()
    assert found is not None  # the model requires a task without a stream
    match found[1]:
        case task_models.CeleryTask() as celery_task:

            def celery(context: records.RunContext, _now: datetime) -> pushes.Push:
                return celery_messages.celery_push(
                    celery_task, slot_id=context.slot_id, scheduled_time=context.scheduled_time
                )

            return celery, f"celery task {celery_task.task} on queue {celery_task.queue}"
        case task_models.RqJob() as rq_job:

            def rq(context: records.RunContext, now: datetime) -> pushes.Push:
                return rq_jobs.rq_push(
                    rq_job, slot_id=context.slot_id, scheduled_time=context.scheduled_time, now=now
                )

            return rq, f"rq job {rq_job.function} on queue {rq_job.queue}"
        case task_models.ArqJob() as arq_job:

            def arq(context: records.RunContext, now: datetime) -> pushes.Push:
                return arq_jobs.arq_push(
                    arq_job, slot_id=context.slot_id, scheduled_time=context.scheduled_time, now=now
                )

            return arq, f"arq job {arq_job.function} on queue {arq_job.queue}"
        case task_models.DramatiqMessage() as message:

            def dramatiq(context: records.RunContext, now: datetime) -> pushes.Push:
                return dramatiq_messages.dramatiq_push(
                    message, slot_id=context.slot_id, scheduled_time=context.scheduled_time, now=now
                )

            return dramatiq, f"dramatiq actor {message.actor} on queue {message.queue}"
        case task_models.TaskiqTask() as taskiq_task:

            def taskiq(context: records.RunContext, _now: datetime) -> pushes.Push:
                return taskiq_messages.taskiq_push(
                    taskiq_task, slot_id=context.slot_id, scheduled_time=context.scheduled_time
                )

            return taskiq, (
                f"taskiq task {taskiq_task.task} on queue {taskiq_task.queue} "
                f"({taskiq_task.broker_class})"
            )
        case task_models.SidekiqJob() as sidekiq_job:

            def sidekiq(context: records.RunContext, now: datetime) -> pushes.Push:
                return sidekiq_jobs.sidekiq_push(
                    sidekiq_job,
                    slot_id=context.slot_id,
                    scheduled_time=context.scheduled_time,
                    now=now,
                )

            return sidekiq, f"sidekiq job {sidekiq_job.job_class} on queue {sidekiq_job.queue}"
        case task_models.BullmqJob() as bullmq_job:

            def bullmq(context: records.RunContext, now: datetime) -> pushes.Push:
                return bullmq_jobs.bullmq_push(
                    bullmq_job,
                    slot_id=context.slot_id,
                    scheduled_time=context.scheduled_time,
                    now=now,
                )

            return bullmq, f"bullmq job {bullmq_job.name} on queue {bullmq_job.queue}"
