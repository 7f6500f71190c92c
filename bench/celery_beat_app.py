"""Celery beat as ``bench/queue_lateness.py`` runs it beside Punctual (``celery -A
celery_beat_app beat``): the Celery app of the queue frameworks' tests
(``tests/integration/queue_workers/celery_app.py``, so the same worker runs both), one entry
every second calling the same recording task.

Beat's messages carry nothing of the time they were due, so its scheduler adds that, and an id
of the run, as the headers the task records (those Punctual's messages carry). Nothing else of
beat changes: when it sends, and what, are its own.
"""

import os
from datetime import datetime, timedelta
from typing import Any

from celery import beat
from queue_workers.celery_app import app

BEAT_JOB = os.environ["BEAT_JOB"]
"""The prefix of beat's run ids (``<prefix>/<due, unix ms>``) in the worker's records."""

app.conf.beat_schedule = {
    "every-second": {"task": "tests.record", "schedule": timedelta(seconds=1), "args": [BEAT_JOB]}
}


class DueTimeScheduler(beat.PersistentScheduler):
    """Beat's own scheduler; each message says when its entry was due."""

    def apply_async(
        self, entry: beat.ScheduleEntry, producer: Any = None, advance: bool = True, **kwargs: Any
    ) -> Any:
        # Due when the interval since the previous send has passed, as beat's ``is_due`` reckons.
        due: datetime = (
            entry.schedule.maybe_make_aware(entry.last_run_at) + entry.schedule.run_every
        )
        entry.options = {
            **entry.options,
            "headers": {
                "punctual_slot": f"{BEAT_JOB}/{int(due.timestamp() * 1000)}",
                "punctual_scheduled_time": due.isoformat(),
            },
        }
        return super().apply_async(entry, producer, advance, **kwargs)
