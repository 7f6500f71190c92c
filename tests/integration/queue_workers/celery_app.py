"""A Celery app as a user would configure it for Punctual's messages: protocol 2 (the default)
and JSON only. Its broker is ``$BROKER_URL``."""

import os
from typing import Any

from celery import Celery, Task

from queue_workers import record

app = Celery("punctual_tests", broker=os.environ.get("BROKER_URL", "redis://127.0.0.1:1/0"))
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_protocol=2,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)


@app.task(bind=True, name="tests.record")
def record_slot(self: Task, *args: Any, **kwargs: Any) -> None:
    request = self.request
    record.record(
        "celery",
        getattr(request, "punctual_slot", None) or "",
        getattr(request, "punctual_scheduled_time", None) or "",
        [list(args), kwargs, request.id],
    )
