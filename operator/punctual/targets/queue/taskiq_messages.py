"""A taskiq task message as a taskiq-redis broker's ``kick`` writes it, with taskiq's default
formatter and JSON serializer.

``AsyncKicker._prepare_message`` (``taskiq/kicker.py``) builds ``TaskiqMessage``: ``task_id``,
``task_name``, ``labels`` (each value as a string) with ``labels_types`` (its type, from
``taskiq.labels.prepare_label``: 2 an int, 3 a string, 5 a boolean), ``args`` and ``kwargs``;
``ProxyFormatter`` serializes its ``model_dump`` as JSON. ``ListQueueBroker.kick`` then
``LPUSH``es it onto the list named by the broker's ``queue_name``, and ``RedisStreamBroker.kick``
``XADD``s it as the entry's ``data`` field to the stream of that name (without trimming, the
broker's default ``maxlen``).

The task id is the slot's ``message_id``; the labels carry ``punctual_slot`` and
``punctual_scheduled_time`` (RFC 3339), which a task reads from ``Context.message.labels``.
"""

from datetime import datetime

from punctual.api import task_models
from punctual.scheduling import timeline
from punctual.targets.queue import pushes

LABEL_INT, LABEL_STR, LABEL_BOOL = 2, 3, 5
"""``taskiq.labels.LabelType``'s values of the label types a spec can hold."""


def _label(value: object) -> tuple[str, int]:
    """A label's text and type, as ``prepare_label`` makes them."""
    if isinstance(value, bool):
        return str(value), LABEL_BOOL
    if isinstance(value, int):
        return str(value), LABEL_INT
    return str(value), LABEL_STR


def taskiq_push(
    task: task_models.TaskiqTask, *, slot_id: str, scheduled_time: datetime
) -> pushes.Push:
    """The kick of ``task`` for the slot ``slot_id``, due at ``scheduled_time``, onto the list
    or the stream its broker class reads."""
    task_id = pushes.message_id(slot_id)
    args, kwargs = task_models.split_arguments(task.arguments)
    given = {
        **(task.labels or {}),
        "punctual_slot": slot_id,
        "punctual_scheduled_time": timeline.rfc3339(scheduled_time),
    }
    typed = {name: _label(value) for name, value in given.items()}
    message = pushes.json_text(
        {
            "task_id": task_id,
            "task_name": task.task,
            "labels": {name: text for name, (text, _) in typed.items()},
            "labels_types": {name: kind for name, (_, kind) in typed.items()},
            "args": args,
            "kwargs": kwargs,
        }
    )
    if task.broker_class is task_models.TaskiqBrokerClass.REDIS_STREAM_BROKER:
        command = pushes.Command("stream", "XADD", task.queue, ("*", "data", message))
        where = "stream"
    else:
        command = pushes.Command("list", "LPUSH", task.queue, (message,))
        where = "list"
    return pushes.Push(
        message_id=task_id,
        commands=(command,),
        description=f"taskiq task {task_id} on {where} {task.queue!r}",
    )
