"""The function RQ's worker runs (``rq worker --serializer rq.serializers.JSONSerializer``)."""

from typing import Any

from rq import get_current_job

from queue_workers import record


def record_slot(*args: Any, **kwargs: Any) -> None:
    job = get_current_job()
    assert job is not None
    record.record(
        "rq",
        job.meta.get("punctual_slot", ""),
        job.meta.get("punctual_scheduled_time", ""),
        [list(args), kwargs, job.id],
    )
