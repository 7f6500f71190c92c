"""An RQ job as RQ's ``Queue.enqueue_job`` writes it, with RQ's JSON serializer.

``enqueue_job`` saves the job's hash (``rq:job:<id>``, the fields of ``Job.to_dict``), adds the
queue's key to the set of queues (``rq:queues``) and pushes the job's id onto the queue's list
(``rq:queue:<name>``, ``RPUSH``). The hash's ``data`` is the zlib-compressed serialization of
``[function, instance, args, kwargs]`` (``Job.data``), and its ``meta`` the serialization of the
job's meta: both JSON here, so the worker must use ``rq.serializers.JSONSerializer``
(``rq worker --serializer rq.serializers.JSONSerializer``); a worker on RQ's default, pickle,
fails each job with a ``DeserializationError`` rather than unpickle anything. The job id is the
slot's ``message_id``; the meta carries ``punctual_slot`` and ``punctual_scheduled_time`` (RFC
3339), which the job reads with ``rq.get_current_job().meta``.
"""

import math
import zlib
from datetime import datetime

from punctual.api import task_models
from punctual.scheduling import durations, timeline
from punctual.targets.queue import pushes

JOB_PREFIX = "rq:job:"
QUEUE_PREFIX = "rq:queue:"
QUEUES = "rq:queues"
"""RQ's keys, with its default prefix (``RQ_KEY_PREFIX`` unset)."""
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
"""RQ's ``utcformat``."""


def rq_push(
    job: task_models.RqJob, *, slot_id: str, scheduled_time: datetime, now: datetime
) -> pushes.Push:
    """The writes that enqueue ``job`` for the slot ``slot_id``, due at ``scheduled_time``,
    enqueued at ``now`` (UTC)."""
    job_id = pushes.message_id(slot_id)
    args, kwargs = task_models.split_arguments(job.arguments)
    data = zlib.compress(pushes.json_text([job.function, None, args, kwargs]).encode())
    call = ", ".join(
        [pushes.json_text(argument) for argument in args]
        + sorted(f"{name}={pushes.json_text(value)}" for name, value in kwargs.items())
    )
    meta = {
        "punctual_slot": slot_id,
        "punctual_scheduled_time": timeline.rfc3339(scheduled_time),
    }
    stamp = now.strftime(TIMESTAMP_FORMAT)
    fields: list[str | bytes | int] = [
        "created_at", stamp,
        "data", data,
        "success_callback_name", "",
        "failure_callback_name", "",
        "stopped_callback_name", "",
        "started_at", "",
        "ended_at", "",
        "last_heartbeat", "",
        "worker_name", "",
        "group_id", "",
        "origin", job.queue,
        "description", f"{job.function}({call})",
        "enqueued_at", stamp,
    ]  # fmt: skip
    if job.timeout is not None:
        seconds = math.ceil(durations.parse(job.timeout, field="timeout").total_seconds())
        fields += ["timeout", seconds]
    fields += ["status", "queued", "meta", pushes.json_text(meta)]
    queue = f"{QUEUE_PREFIX}{job.queue}"
    return pushes.Push(
        message_id=job_id,
        commands=(
            pushes.Command("hash", "HSET", f"{JOB_PREFIX}{job_id}", tuple(fields)),
            pushes.Command("set", "SADD", QUEUES, (queue,)),
            pushes.Command("list", "RPUSH", queue, (job_id,)),
        ),
        description=f"rq job {job_id} on list {queue!r}",
    )
