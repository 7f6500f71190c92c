"""A Celery task message as Celery 5's ``send_task`` writes it into kombu's Redis transport.

The message is protocol 2 (``celery.app.amqp.AMQP.as_task_v2``): the headers name the task and
its id, the body is the JSON array ``[args, kwargs, embed]``. Kombu's Redis transport wraps it
in its envelope (``kombu.transport.virtual.Channel.prepare_message`` and
``_inplace_augment_message``: the body base64-encoded, ``delivery_info``, ``delivery_tag``) and
``LPUSH``es the envelope's JSON onto the queue's list, or for a priority above 0 onto the list of
its priority step (``<queue>\\x06\\x16<step>``, steps 0, 3, 6 and 9: ``_q_for_pri``). The message is
published to the default exchange with the queue as its routing key, so it needs no binding of
an exchange: a worker consuming the queue receives it.

JSON only: the content type is ``application/json``, which a worker accepts by default
(``accept_content``). The task id is the slot's ``message_id``, and the headers carry
``punctual_slot`` and ``punctual_scheduled_time`` (RFC 3339), which a task reads from
``self.request``.
"""

import base64
import bisect
from datetime import datetime

from punctual.api import task_models
from punctual.scheduling import durations, timeline
from punctual.targets.queue import pushes

PRIORITY_STEPS = (0, 3, 6, 9)
"""Kombu's Redis transport's default ``priority_steps``: one list per step."""
PRIORITY_SEPARATOR = "\x06\x16"
"""Between a queue's name and its priority step, in the key of that step's list."""
REPR_LIMIT = 1024
"""Celery's ``argsrepr_maxsize`` and ``kwargsrepr_maxsize``: what monitoring shows of the
arguments."""
ORIGIN = "punctual"
"""The ``origin`` header: who sent the task (Celery puts the sender's node name there)."""


def queue_key(queue: str, priority: int) -> str:
    """The list a message of ``priority`` on ``queue`` goes to (kombu's ``_q_for_pri``)."""
    step = PRIORITY_STEPS[bisect.bisect(PRIORITY_STEPS, priority) - 1]
    return f"{queue}{PRIORITY_SEPARATOR}{step}" if step else queue


def celery_push(
    task: task_models.CeleryTask, *, slot_id: str, scheduled_time: datetime
) -> pushes.Push:
    """The ``LPUSH`` of ``task``'s message for the slot ``slot_id``, due at ``scheduled_time``
    (from which ``expires`` counts)."""
    task_id = pushes.message_id(slot_id)
    args, kwargs = task_models.split_arguments(task.arguments)
    expires = None
    if task.expires is not None:
        expires = (scheduled_time + durations.parse(task.expires, field="expires")).isoformat()
    headers: dict[str, object] = {
        "lang": "py",
        "task": task.task,
        "id": task_id,
        "shadow": None,
        "eta": None,
        "expires": expires,
        "group": None,
        "group_index": None,
        "retries": 0,
        "timelimit": [None, None],
        "root_id": task_id,
        "parent_id": None,
        "argsrepr": pushes.json_text(args)[:REPR_LIMIT],
        "kwargsrepr": pushes.json_text(kwargs)[:REPR_LIMIT],
        "origin": ORIGIN,
        "ignore_result": False,
        "replaced_task_nesting": 0,
        "stamped_headers": None,
        "stamps": {},
        "punctual_slot": slot_id,
        "punctual_scheduled_time": timeline.rfc3339(scheduled_time),
    }
    embed = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
    body = pushes.json_text([args, kwargs, embed]).encode()
    priority = task.priority or 0
    envelope = {
        "body": base64.b64encode(body).decode(),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": headers,
        "properties": {
            "correlation_id": task_id,
            "reply_to": "",
            "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": task.queue},
            "priority": priority,
            "body_encoding": "base64",
            "delivery_tag": task_id,
        },
    }
    key = queue_key(task.queue, priority)
    return pushes.Push(
        message_id=task_id,
        commands=(pushes.Command("list", "LPUSH", key, (pushes.json_text(envelope),)),),
        description=f"celery task {task_id} on list {key!r}",
    )
