"""A Dramatiq message as Dramatiq's ``RedisBroker.enqueue`` writes it, with its JSON encoder.

``enqueue`` (``dramatiq/brokers/redis.py``) gives the message a ``redis_message_id`` option and
runs the ``enqueue`` command of its ``dispatch.lua``: ``HSET <namespace>:<queue>.msgs <redis
message id> <message>`` and ``RPUSH <namespace>:<queue> <redis message id>``, with the broker's
default namespace ``dramatiq``. The message is ``Message.asdict()`` encoded by
``dramatiq.encoder.JSONEncoder`` (Dramatiq's default): ``queue_name``, ``actor_name``, ``args``,
``kwargs``, ``options``, ``message_id``, ``message_timestamp`` (ms).

The message id, and the first ``redis_message_id`` (a retry gets a new one from the broker), is
the slot's ``message_id``; the options carry ``punctual_slot`` and ``punctual_scheduled_time``
(RFC 3339), which an actor reads with the ``CurrentMessage`` middleware. Dispatching a command
also records the sender's heartbeat and may run maintenance; a push does neither: those belong
to workers.
"""

from datetime import datetime

from punctual.api import task_models
from punctual.scheduling import timeline
from punctual.targets.queue import pushes

NAMESPACE = "dramatiq"
"""The ``RedisBroker``'s default ``namespace``, every key's prefix."""


def dramatiq_push(
    message: task_models.DramatiqMessage, *, slot_id: str, scheduled_time: datetime, now: datetime
) -> pushes.Push:
    """The writes that enqueue ``message`` for the slot ``slot_id``, due at
    ``scheduled_time``, sent at ``now``."""
    message_id = pushes.message_id(slot_id)
    args, kwargs = task_models.split_arguments(message.arguments)
    body = {
        "queue_name": message.queue,
        "actor_name": message.actor,
        "args": args,
        "kwargs": kwargs,
        "options": {
            "redis_message_id": message_id,
            "punctual_slot": slot_id,
            "punctual_scheduled_time": timeline.rfc3339(scheduled_time),
        },
        "message_id": message_id,
        "message_timestamp": round(now.timestamp() * 1000),
    }
    queue = f"{NAMESPACE}:{message.queue}"
    return pushes.Push(
        message_id=message_id,
        commands=(
            pushes.Command("hash", "HSET", f"{queue}.msgs", (message_id, pushes.json_text(body))),
            pushes.Command("list", "RPUSH", queue, (message_id,)),
        ),
        description=f"dramatiq message {message_id} on list {queue!r}",
    )
