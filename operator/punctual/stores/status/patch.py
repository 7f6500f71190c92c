"""The status merge patch: one write's ``status``, composed from the status it merges onto and
what the ledger has pending for the job.

What this replica states is dumped from the status models in ``punctual.api.status_models``
(``RunRecord``, ``ActiveRun``, ``Condition``, ``RunCounts``, ``ScheduledJobStatus``), the
models the CRD is generated from, so the shape written is the shape the API server checks.
What the status already holds and is not this replica's to restate (other replicas' runs in
progress, older recent runs, the last run, the conditions not being set) goes back as it was
read, under the models' wire names: running it through a model would refuse, or rewrite, what
other writers put there.

That status is outside input: whoever may write ``scheduledjobs/status`` can put there anything
the API server's schema accepts. It is read by wire name and leniently: what this operator
cannot read counts as absent, and the write replaces it.

The conditions it states, ``LastRunSucceeded`` among them, are merged by ``conditions``.
"""

import collections
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pydantic

from punctual.api import status_models, status_reader
from punctual.contracts import records
from punctual.scheduling import plans, timeline
from punctual.stores.status import conditions, ledger

_COUNTED = {
    records.RunResult.SUCCEEDED: "succeeded",
    records.RunResult.FAILED: "failed",
    records.RunResult.TIMED_OUT: "timed_out",
    records.RunResult.SKIPPED_OVERLAP: "skipped_overlap",
    records.RunResult.SKIPPED_IN_FLIGHT_LIMIT: "skipped_in_flight_limit",
    records.RunResult.SKIPPED_QUEUE_LIMIT: "skipped_queue_limit",
    records.RunResult.MISSED: "missed",
    records.RunResult.LOST: "lost",
    records.RunResult.CANCELLED: "cancelled",
}
"""The field of ``status_models.RunCounts`` that counts each result."""
_SET_ASIDE = {
    records.MissedReason.SUSPENDED: "suspended",
    records.MissedReason.EXCLUDED: "excluded",
}
"""The field that counts the slots set aside for each reason (neither run nor missed)."""
_STATED = {
    "counts",
    "consecutive_failures",
    "last_schedule_time",
    "last_run_now_token",
    "backfill",
    "next_run_time",
    "observed_generation",
}
"""The fields of ``status_models.ScheduledJobStatus`` that a write states outright (the others
merge this replica's entries with those already there)."""
_EARLIEST = datetime.min.replace(tzinfo=UTC)


def compose(
    current: Mapping[str, Any],
    pending: ledger.Pending,
    *,
    replica: str,
    history: plans.History,
    active: Iterable[records.ActiveRun],
    upcoming: datetime | None,
    now: datetime,
) -> dict[str, Any]:
    """The fields of a status merge patch: ``pending`` merged onto ``current``.

    Counts are added, recent runs merged, ``lastScheduleTime`` only moves forward, other
    replicas' runs in progress are kept and this replica's (``active``) stated with ``now`` as
    their heartbeat; the next slot is ``upcoming``.
    """
    new_runs = [_run_entry(record) for record in pending.run_records]
    # A slot recorded here is over wherever it ran: another replica's entry in active for it
    # goes (a run recorded Lost belonged to a replica that died; one followed to its end here
    # was handed over by a replica that stopped).
    ended = {run["slot"] for run in new_runs}
    known_last = status_reader.high_water(current)
    claimed = pending.claimed
    forward = claimed is not None and (known_last is None or claimed > known_last)
    stated = status_models.ScheduledJobStatus(
        counts=_counts(current, pending.counts, set_aside=pending.set_aside),
        consecutive_failures=_consecutive_failures(current, pending),
        last_schedule_time=claimed if forward else None,
        last_run_now_token=pending.run_now_token,
        backfill=_backfill(pending.backfill),
        next_run_time=upcoming,
        observed_generation=pending.observed_generation,
    ).model_dump(mode="json", include=_STATED, exclude_none=True)
    if pending.backfill is not None and pending.backfill.waiting is None:
        # A backfill that waited runs now: null removes its reason from the merge patch.
        stated["backfill"][_wire(status_models.BackfillStatus, "waiting")] = None
    succeeded = [
        run["finishedAt"] for run in new_runs if run["result"] == records.RunResult.SUCCEEDED
    ]
    # Only a run's own end becomes ``lastRun`` (and ``LastRunSucceeded``): not a cancelled run.
    newest_run = _newest([run for run in new_runs if status_reader.final(run["result"])])
    last_run = _newest([current.get("lastRun"), newest_run])
    updates = [(update, pending.observed_generation) for update in pending.conditions.values()]
    health = conditions.last_run_condition(
        current, last_run, fresh=newest_run is not None and last_run is newest_run
    )
    if health is not None:
        updates.append((health, conditions.stated_generation(current, pending)))
    merged = {
        "recent_runs": _recent([*new_runs, *status_reader.entries(current, "recentRuns")], history),
        "active": [
            *(
                run
                for run in status_reader.entries(current, "active")
                if run.get("replica") != replica and run.get("slot") not in ended
            ),
            *(_active_entry(run, heartbeat=now) for run in active),
        ],
        "last_run": last_run,
        "last_successful_time": _max_text([current.get("lastSuccessfulTime"), *succeeded]),
        "conditions": (
            conditions.merge(status_reader.entries(current, "conditions"), updates, now=now)
            if updates
            else None
        ),
    }
    # The empty text says a field is to go: null removes it from the merge patch.
    shown = (
        {}
        if pending.shown is None
        else {
            _wire(status_models.ScheduledJobStatus, "schedule"): pending.shown.schedule or None,
            _wire(status_models.ScheduledJobStatus, "target"): pending.shown.target or None,
        }
    )
    return (
        stated
        | {
            _wire(status_models.ScheduledJobStatus, name): value
            for name, value in merged.items()
            if value is not None
        }
        | shown
    )


def shows(current: Mapping[str, Any], batch: ledger.Pending) -> bool:
    """Whether ``current`` holds a run record of ``batch``: the write that carried it landed."""
    runs = status_reader.entries(current, "recentRuns")
    if not runs:
        return False
    entries = [_run_entry(record) for record in batch.run_records]
    return any(entry.items() <= run.items() for entry in entries for run in runs)


def shows_columns(current: Mapping[str, Any], shown: ledger.Shown) -> bool:
    """Whether ``current`` shows ``shown`` (no field at all, for an empty text)."""
    return (current.get("schedule") or "") == shown.schedule and (
        current.get("target") or ""
    ) == shown.target


def _run_entry(record: records.RunRecord) -> dict[str, Any]:
    return status_models.RunRecord(
        slot=record.slot,
        scheduled_time=record.scheduled_time,
        started_at=record.started_at,
        finished_at=record.finished_at,
        lateness_millis=_millis(record.lateness),
        duration_millis=_millis(record.duration),
        result=record.result,
        message=record.message,
        replica=record.replica,
        trigger=None if record.trigger == records.Trigger.SCHEDULED else record.trigger,
        run_now_token=record.token,
        warm_start=record.start_mode,
        schedules=list(record.schedules) or None,
    ).model_dump(mode="json", exclude_none=True)


def _active_entry(run: records.ActiveRun, *, heartbeat: datetime) -> dict[str, Any]:
    return status_models.ActiveRun(
        slot=run.slot,
        started_at=run.started_at,
        replica=run.replica,
        heartbeat_time=heartbeat,
        job_name=run.job_name,
        attempt=run.attempt if run.attempt > 1 else None,  # a first run says no attempt
        run_now_token=run.token,
    ).model_dump(mode="json", exclude_none=True)


def _counts(
    current: Mapping[str, Any],
    pending: collections.Counter[records.RunResult],
    *,
    set_aside: collections.Counter[records.MissedReason],
) -> status_models.RunCounts:
    known: Mapping[str, Any] = current.get("counts") or {}
    # Read by name, not validated: a newer operator's status may count what this one does not
    # know, and the merge patch leaves such a count as it is.
    added = {name: pending[result] for result, name in _COUNTED.items()} | {
        name: set_aside[reason] for reason, name in _SET_ASIDE.items()
    }
    return status_models.RunCounts(
        **{
            name: known.get(_wire(status_models.RunCounts, name), 0) + count
            for name, count in added.items()
        }
    )


def _backfill(
    progress: records.BackfillProgress | None,
) -> status_models.BackfillStatus | None:
    if progress is None:
        return None
    return status_models.BackfillStatus.model_validate(
        {
            "token": progress.request.token,
            "from": progress.request.start,
            "to": progress.request.end,
            "replica": progress.replica,
            "total": progress.total,
            "done": progress.done,
            "succeeded": progress.succeeded,
            "failed": progress.failed,
            "skipped": progress.skipped,
            "waiting": progress.waiting,
            "finished": progress.finished,
        }
    )


def _consecutive_failures(current: Mapping[str, Any], pending: ledger.Pending) -> int | None:
    """``consecutiveFailures`` after ``pending``'s runs, in the order they were recorded: a
    success sets it to 0, any other run that started adds one, slots that never ran leave it.
    None (left as it is) when ``pending`` changes nothing about it."""
    count = 0 if pending.failures_reset else status_reader.consecutive_failures(current)
    changed = pending.failures_reset
    for record in pending.run_records:
        if record.result.final:
            count = count + 1 if record.result.failed else 0
            changed = True
    return count if changed else None


def _wire(model: type[pydantic.BaseModel], name: str) -> str:
    """The wire name of ``model``'s field ``name`` (KeyError for a field the model lacks)."""
    return model.model_fields[name].alias or name


def _millis(span: timedelta | None) -> int | None:
    return None if span is None else span // timedelta(milliseconds=1)


def _readable(run: Mapping[str, Any] | None) -> bool:
    return run is not None and status_reader.instant(run.get("slot")) is not None


def _slot_key(run: Mapping[str, Any]) -> datetime:
    return timeline.parse_rfc3339(run["slot"])


def _recent(runs: list[Mapping[str, Any]], history: plans.History) -> list[Mapping[str, Any]]:
    """Newest first, one entry per slot, at most ``history`` successes and failures (entries
    whose slot cannot be read are dropped)."""
    return history.shown(
        sorted(filter(_readable, runs), key=_slot_key, reverse=True),
        succeeded=lambda run: run["result"] == records.RunResult.SUCCEEDED,
        # A lost run and its retry are two entries of the same slot.
        key=lambda run: f"{run['slot']}/{run['result'] == records.RunResult.LOST}",
    )


def _newest(runs: list[Mapping[str, Any] | None]) -> Mapping[str, Any] | None:
    """The run of the newest slot; of a slot's two (a run recorded Lost and its retry), the one
    that finished last. The first of those that tie."""
    present = [run for run in runs if run is not None and _readable(run)]
    return max(present, key=_finish_key) if present else None


def _finish_key(run: Mapping[str, Any]) -> tuple[datetime, datetime]:
    return _slot_key(run), status_reader.instant(run.get("finishedAt")) or _EARLIEST


def _max_text(timestamps: list[str | None]) -> str | None:
    present = [text for text in timestamps if text and status_reader.instant(text) is not None]
    return max(present, key=timeline.parse_rfc3339) if present else None
