"""A run store that logs one structured line per slot's fate, on the ``punctual.runs`` logger,
up to a rate per job; above it, a periodic summary of the job's runs instead.

Each finished run (and each slot skipped or lost) is one line "run finished" with the fields
``namespace``, ``name``, ``slot``, ``result``, ``latenessMillis`` and ``durationMillis`` (absent
for a slot that never started), ``replica``, ``attempt``, ``schedules`` (for a job with several,
the entries that fired the slot, comma-separated) and ``detail`` (the run's message, when it has
one: the words the status shows, never a secret). Slots given up are one line
"slots missed" with ``count`` and ``newest``. Succeeded and skipped runs log at INFO, the others
at WARNING. The fields go as ``extra={"fields": ...}``, which ``punctual.cli.log_format``
writes as JSON keys or ``key=value``.

Log lines are shared by every tenant (one stream, one log pipeline, its storage), so one job
writes at most ``lines_per_second`` of them a second, after a burst of ``BURST`` (``LinePacer``,
a token bucket per job): a job running every second or less often logs every run. The lines
above that rate are not written; each ``SUMMARY_EVERY`` the job's runs whose lines were kept
back are one line "runs summarized" with their count per result. An ``every: 1ms`` job
therefore costs about one line a second and one a minute, not a thousand a second.
"""

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from punctual.contracts import protocols, records
from punctual.scheduling import slots, timeline

logger = logging.getLogger("punctual.runs")

BURST: Final = 10
"""Lines a job may write at once above its rate (runs that end together, a catch-up)."""
SUMMARY_EVERY: Final = timedelta(minutes=1)
"""How often a job's runs whose lines were kept back are summarized."""

_FIELDS = {result: result.value[0].lower() + result.value[1:] for result in records.RunResult}
"""Each result's field in a summary: ``succeeded``, ``timedOut``, ``missed``…"""


@dataclass(slots=True)
class _Lines:
    """One job's allowance of lines, and the runs whose lines it kept back."""

    left: float
    refilled: float
    held: collections.Counter[records.RunResult] = field(default_factory=collections.Counter)


class LinePacer:
    """Whether a job's next line is written (``admit``), and what was kept back (``hold``,
    ``summaries``): a token bucket per job, ``per_second`` refilled up to ``burst``.

    Decides only, as of the instants passed in: the store reads the clock and logs.
    """

    def __init__(self, *, per_second: int, burst: int = BURST) -> None:
        if per_second < 1:
            raise ValueError("per_second must be at least 1")
        self._rate = per_second
        self._burst = max(1, burst)
        self._jobs: dict[slots.JobRef, _Lines] = {}

    def admit(self, job: slots.JobRef, now: float) -> bool:
        """Whether ``job`` may write a line at ``now`` (a monotonic clock's seconds); if so, it
        is counted."""
        lines = self._jobs.get(job)
        if lines is None:
            lines = self._jobs[job] = _Lines(left=self._burst, refilled=now)
        lines.left = min(self._burst, lines.left + (now - lines.refilled) * self._rate)
        lines.refilled = now
        if lines.left < 1:
            return False
        lines.left -= 1
        return True

    def hold(self, job: slots.JobRef, result: records.RunResult, *, count: int = 1) -> None:
        """Count ``count`` slots of ``result`` whose line ``admit`` refused."""
        self._jobs[job].held[result] += count

    def summaries(self, now: float) -> list[tuple[slots.JobRef, dict[records.RunResult, int]]]:
        """What each job kept back since the last call, then forgotten; a job with nothing kept
        back whose allowance is whole again is forgotten too (it starts afresh)."""
        summaries = []
        for job, lines in list(self._jobs.items()):
            if lines.held:
                summaries.append((job, dict(lines.held)))
                lines.held.clear()
            elif lines.left + (now - lines.refilled) * self._rate >= self._burst:
                del self._jobs[job]
        return summaries


class LogStore(protocols.RunStore):
    """``protocols.RunStore`` logging what became of each slot, paced per job; ``run`` writes
    the summaries (cancel it to stop: it writes the last ones then). The other reports:
    no-ops."""

    def __init__(
        self,
        *,
        lines_per_second: int = 1,
        summary_every: timedelta = SUMMARY_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pacer = LinePacer(per_second=lines_per_second)
        self._lines_per_second = lines_per_second
        self._summary_every = summary_every
        self._clock = clock

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        if not self._pacer.admit(job, self._clock()):
            self._pacer.hold(job, record.result)
            return
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
        if record.schedules:
            fields["schedules"] = ",".join(record.schedules)
        if record.message:
            fields["detail"] = record.message
        level = logging.WARNING if record.result.warns else logging.INFO
        logger.log(level, "run finished", extra={"fields": fields})

    def slots_missed(
        self,
        job: slots.JobRef,
        *,
        count: int,
        newest: datetime,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        if not self._pacer.admit(job, self._clock()):
            if reason.missed:  # slots a suspension passed were asked for: their line may go
                self._pacer.hold(job, records.RunResult.MISSED, count=count)
            return
        fields = {
            "namespace": job.namespace,
            "name": job.name,
            "count": count,
            "newest": timeline.rfc3339(newest),
            "reason": str(reason),
        }
        if reason.missed:
            logger.warning("slots missed", extra={"fields": fields})
        else:
            message = (
                "slots excluded"
                if reason is records.MissedReason.EXCLUDED
                else "slots passed while suspended"
            )
            logger.info(message, extra={"fields": fields})

    async def run(self) -> None:
        """Summarize every ``summary_every`` what was kept back, until cancelled; then once
        more."""
        try:
            while True:
                await asyncio.sleep(self._summary_every.total_seconds())
                self.summarize()
        finally:
            self.summarize()

    def summarize(self) -> None:
        """One line "runs summarized" per job with lines kept back since the last one."""
        for job, held in self._pacer.summaries(self._clock()):
            fields: dict[str, Any] = {
                "namespace": job.namespace,
                "name": job.name,
                "runs": sum(count for result, count in held.items() if result.recorded),
            }
            fields |= {
                _FIELDS[result]: held[result] for result in records.RunResult if held.get(result)
            }
            fields["linesPerSecond"] = self._lines_per_second
            warns = any(result.warns for result in held)
            logger.log(
                logging.WARNING if warns else logging.INFO,
                "runs summarized",
                extra={"fields": fields},
            )


def _millis(span: timedelta) -> int:
    return span // timedelta(milliseconds=1)
