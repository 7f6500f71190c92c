"""An arq job as arq's ``ArqRedis.enqueue_job`` writes it, with a JSON job serializer.

``enqueue_job`` (``arq/connections.py``) stores the serialized job under ``arq:job:<id>`` with
an expiry (``PSETEX``: a day past the job's score, ``expires_extra_ms``) and adds the id to the
queue's sorted set (``ZADD <queue> <score> <id>``), where the score is when the job is due, in
ms. The job is ``{"t": job try, "f": function, "a": args, "k": kwargs, "et": enqueue time ms}``
(``arq.jobs.serialize_job``), JSON here: the worker must set ``job_serializer`` and
``job_deserializer`` to JSON; a worker on arq's default, pickle, fails the job with a
``DeserializationError`` rather than unpickle anything.

The job id is the slot's ``message_id``: arq refuses to enqueue a job whose id has a job or a
result key, and a sorted set holds an id once, so arq itself drops a second job of the slot.
The score is the slot's scheduled time, which the task reads as ``ctx["score"]``; arq's job has
no field for metadata, so the slot id and scheduled time (RFC 3339) ride in the stored job as
``punctual_slot`` and ``punctual_scheduled_time``, keys arq's deserializer ignores, which the
task reads from the job's key while it runs.
"""

from datetime import datetime

from punctual.api import task_models
from punctual.scheduling import timeline
from punctual.targets.queue import pushes

JOB_PREFIX = "arq:job:"
"""arq's ``job_key_prefix``."""
EXPIRES_EXTRA_MS = 24 * 60 * 60 * 1000
"""arq's default ``expires_extra_ms``: how long past its score a job may still start."""


def _ms(instant: datetime) -> int:
    return round(instant.timestamp() * 1000)


def arq_push(
    job: task_models.ArqJob, *, slot_id: str, scheduled_time: datetime, now: datetime
) -> pushes.Push:
    """The writes that enqueue ``job`` for the slot ``slot_id``, due at ``scheduled_time``,
    enqueued at ``now``."""
    job_id = pushes.message_id(slot_id)
    args, kwargs = task_models.split_arguments(job.arguments)
    score, enqueued = _ms(scheduled_time), _ms(now)
    data = {
        "t": None,
        "f": job.function,
        "a": args,
        "k": kwargs,
        "et": enqueued,
        "punctual_slot": slot_id,
        "punctual_scheduled_time": timeline.rfc3339(scheduled_time),
    }
    expires = max(score - enqueued, 0) + EXPIRES_EXTRA_MS
    return pushes.Push(
        message_id=job_id,
        commands=(
            pushes.Command(
                "string", "SET", f"{JOB_PREFIX}{job_id}", (pushes.json_text(data), "PX", expires)
            ),
            pushes.Command("zset", "ZADD", job.queue, (score, job_id)),
        ),
        description=f"arq job {job_id} on sorted set {job.queue!r}",
    )
