"""A Sidekiq job as Sidekiq 6 and 7's client pushes it (``Sidekiq::Client#push``).

The client normalizes the job (``Sidekiq::JobUtil#normalize_item``: the default options
``retry`` and ``queue`` merged under the given ones, ``jid`` and ``created_at`` added), then
``atomic_push`` stamps ``enqueued_at``, adds the queue's name to the set ``queues`` and
``LPUSH``es the job's JSON onto the list ``queue:<name>``, which the worker's fetch pops from
the other end (``BRPOP``): first in, first out. Both times are Unix seconds as floats, as
Sidekiq 6 and 7 write them.

JSON only, as Sidekiq's own. The jid is the slot's ``message_id``; the job's own fields
``punctual_slot`` and ``punctual_scheduled_time`` (RFC 3339) carry the slot, which a server
middleware (or ``Sidekiq::Job#jid`` for the id) reads: Sidekiq keeps unknown fields of a job as
they are, through retries.
"""

from datetime import datetime

from punctual.api import task_models
from punctual.scheduling import timeline
from punctual.targets.queue import pushes

QUEUES = "queues"
QUEUE_PREFIX = "queue:"
"""Sidekiq's keys, without a namespace (``redis-namespace`` is not supported by Sidekiq 7)."""


def sidekiq_push(
    job: task_models.SidekiqJob, *, slot_id: str, scheduled_time: datetime, now: datetime
) -> pushes.Push:
    """The writes that enqueue ``job`` for the slot ``slot_id``, due at ``scheduled_time``,
    pushed at ``now``."""
    jid = pushes.message_id(slot_id)
    args, _ = task_models.split_arguments(job.arguments)
    stamp = now.timestamp()
    item = {
        "retry": True if job.retry is None else job.retry,
        "queue": job.queue,
        "class": job.job_class,
        "args": args,
        "jid": jid,
        "created_at": stamp,
        "punctual_slot": slot_id,
        "punctual_scheduled_time": timeline.rfc3339(scheduled_time),
        "enqueued_at": stamp,
    }
    queue = f"{QUEUE_PREFIX}{job.queue}"
    return pushes.Push(
        message_id=jid,
        commands=(
            pushes.Command("set", "SADD", QUEUES, (job.queue,)),
            pushes.Command("list", "LPUSH", queue, (pushes.json_text(item),)),
        ),
        description=f"sidekiq job {jid} on list {queue!r}",
    )
