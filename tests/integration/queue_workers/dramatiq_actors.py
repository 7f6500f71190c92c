"""A Dramatiq broker and actor as a user would declare them for Punctual's messages: the Redis
broker ``$BROKER_URL``, Dramatiq's default JSON encoder, and the ``CurrentMessage`` middleware
through which the actor reads the message's options
(``dramatiq queue_workers.dramatiq_actors``)."""

import os
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import CurrentMessage

from queue_workers import record

broker = RedisBroker(url=os.environ.get("BROKER_URL", "redis://127.0.0.1:1/0"))
broker.add_middleware(CurrentMessage())
dramatiq.set_broker(broker)


@dramatiq.actor(actor_name="record_slot", max_retries=0)
def record_slot(*args: Any, **kwargs: Any) -> None:
    message = CurrentMessage.get_current_message()
    assert message is not None
    record.record(
        "dramatiq",
        message.options["punctual_slot"],
        message.options["punctual_scheduled_time"],
        [list(args), kwargs, message.message_id],
    )
