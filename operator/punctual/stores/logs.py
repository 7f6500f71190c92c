"""A run store that logs one structured line per slot's fate, on the ``punctual.runs`` logger.

Each finished run (and each slot skipped or lost) is one line "run finished" with the fields
``namespace``, ``name``, ``slot``, ``result``, ``latenessMillis`` and ``durationMillis`` (absent
for a slot that never started), ``replica``, ``attempt`` and ``detail`` (the run's message,
when it has one: the words the status shows, never a secret). Slots given up are one line
"slots missed" with ``count`` and ``newest``. Succeeded and skipped runs log at INFO, the others
at WARNING. The fields go as ``extra={"fields": ...}``, which ``punctual.cli.log_format``
writes as JSON keys or ``key=value``.
"""

import logging
from datetime import datetime, timedelta
from typing import Any

from punctual.contracts import protocols, records
from punctual.scheduling import slots, timeline

logger = logging.getLogger("punctual.runs")

_QUIET = {records.RunResult.SUCCEEDED, records.RunResult.SKIPPED_OVERLAP}


class LogStore(protocols.RunStore):
    """``protocols.RunStore`` logging what became of each slot; the other reports: no-ops."""

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        fields: dict[str, Any] = {
            "namespace": job.namespace,
            "name": job.name,
            "slot": timeline.rfc3339(record.slot),
            "result": record.result.value,
        }
        if record.lateness is not None:
            fields["latenessMillis"] = _millis(record.lateness)
        if record.duration is not None:
            fields["durationMillis"] = _millis(record.duration)
        fields |= {"replica": record.replica, "attempt": record.attempt}
        if record.message:
            fields["detail"] = record.message
        level = logging.INFO if record.result in _QUIET else logging.WARNING
        logger.log(level, "run finished", extra={"fields": fields})

    def slots_missed(
        self,
        job: slots.JobRef,
        *,
        count: int,
        newest: datetime,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        fields = {
            "namespace": job.namespace,
            "name": job.name,
            "count": count,
            "newest": timeline.rfc3339(newest),
            "reason": str(reason),
        }
        logger.warning("slots missed", extra={"fields": fields})


def _millis(span: timedelta) -> int:
    return span // timedelta(milliseconds=1)
