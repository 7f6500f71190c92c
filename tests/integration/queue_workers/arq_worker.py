"""arq's worker settings as a user would write them for Punctual's jobs: JSON (de)serializer,
the broker ``$BROKER_URL`` (``arq queue_workers.arq_worker.WorkerSettings``).

arq's job has no metadata: the task reads the slot id from the stored job, and its scheduled
time is the job's score, ``ctx["score"]``.
"""

import json
import os
import urllib.parse
from datetime import UTC, datetime
from typing import Any

from arq.connections import RedisSettings
from arq.constants import job_key_prefix

from queue_workers import record


async def record_slot(ctx: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    stored = json.loads(await ctx["redis"].get(f"{job_key_prefix}{ctx['job_id']}"))
    scheduled_time = datetime.fromtimestamp(ctx["score"] / 1000, UTC)
    record.record(
        "arq",
        stored["punctual_slot"],
        scheduled_time.isoformat(),
        [list(args), kwargs, ctx["job_id"]],
    )


def redis_settings_of(url: str) -> RedisSettings:
    """arq's ``RedisSettings.from_dsn`` leaves a URL's password percent-encoded."""
    parts = urllib.parse.urlsplit(url)
    return RedisSettings(
        host=parts.hostname or "localhost",
        port=parts.port or 6379,
        password=urllib.parse.unquote(parts.password) if parts.password else None,
        database=int(parts.path.lstrip("/") or 0),
    )


class WorkerSettings:
    functions = (record_slot,)
    redis_settings = redis_settings_of(os.environ.get("BROKER_URL", "redis://127.0.0.1:1/0"))
    job_serializer = json.dumps
    job_deserializer = json.loads
    max_tries = 1
