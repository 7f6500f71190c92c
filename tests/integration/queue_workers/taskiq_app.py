"""A taskiq broker and task as a user would declare them for Punctual's messages: taskiq-redis's
list or stream broker on ``$BROKER_URL`` (``$WORKER_FRAMEWORK``: ``taskiq-list`` or
``taskiq-stream``), taskiq's default JSON serializer, and a task reading its labels from its
``Context`` (``taskiq worker queue_workers.taskiq_app:broker``)."""

import os
from typing import Annotated

from taskiq import Context, TaskiqDepends
from taskiq_redis import ListQueueBroker, RedisStreamBroker

from queue_workers import record

_URL = os.environ.get("BROKER_URL", "redis://127.0.0.1:1/0")
broker = (
    RedisStreamBroker(_URL)
    if os.environ.get("WORKER_FRAMEWORK") == "taskiq-stream"
    else ListQueueBroker(_URL)
)


@broker.task(task_name="tests.record")
async def record_slot(name: str, context: Annotated[Context, TaskiqDepends()]) -> None:
    labels = context.message.labels
    assert labels["team"] == "reports"
    record.record(
        os.environ.get("WORKER_FRAMEWORK", "taskiq"),
        labels["punctual_slot"],
        labels["punctual_scheduled_time"],
        [[name], context.message.kwargs, context.message.task_id],
    )
