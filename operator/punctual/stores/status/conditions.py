"""The conditions a status write states, merged onto those the status has: a transition time
kept while a condition's status is, and ``LastRunSucceeded`` derived from the runs.

Apart from the patch (``patch``) because conditions have rules of their own (a generation each,
a transition time, a bounded message), and the writer asks of them alone whether the status
already says what it would write (``has``, ``says``).

``LastRunSucceeded`` is no condition the controller sets but one this module derives from
``lastRun`` (the newest run that started, of any replica): a write that makes one of its runs the
new ``lastRun`` states it (True for Succeeded; False, its reason the result, for Failed,
TimedOut, Lost), and a write onto a status without it states it from the ``lastRun`` there, or
Unknown (``NoRunYet``) before any. Skipped and missed slots never ran: they leave it as it is. It
goes out with the run records that make it, in the writes that carry them (coalesced, or a
kubernetes lock's claim): never a write of its own, never an urgent one.
"""

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from punctual.api import condition_models, status_reader
from punctual.contracts import records
from punctual.scheduling import timeline
from punctual.stores.status import ledger

_NO_RUN_YET_MESSAGE = "no run has finished yet"
"""``LastRunSucceeded``'s message before any run has finished."""
AT_GATE_MESSAGE = "the newest warm run checked had its pod at its gate at its scheduled time"
"""WarmStartReady's message when True: the same every time, so a job whose warm runs are all
ready costs no write for it after the first."""


def says(current: Mapping[str, Any], condition: ledger.Condition, *, generation: int) -> bool:
    """Whether ``current`` has ``condition`` as it is, for ``generation``."""
    if current.get("observedGeneration") != generation:
        return False
    return has(current, condition, generation=generation)


def has(
    current: Mapping[str, Any], condition: ledger.Condition, *, generation: int | None = None
) -> bool:
    """Whether ``current`` has ``condition`` as it is (and, given one, for ``generation``)."""
    known = status_reader.condition(current, condition.type)
    return bool(
        known is not None
        and known.get("status") == _condition_status(condition)
        and known.get("reason") == condition.reason
        and known.get("message") == condition.message
        and (generation is None or known.get("observedGeneration") == generation)
    )


def warm_start_ready(scheduled_time: datetime, *, not_ready: str | None) -> ledger.Condition:
    """``WarmStartReady`` after a warm run due at ``scheduled_time``: False
    (``WarmStartNotReady``, ``not_ready`` the pod's reason) when its pod was not at its gate at
    its time, True otherwise."""
    if not_ready is None:
        return ledger.Condition(
            type=condition_models.WARM_START_READY,
            status=True,
            reason=condition_models.AT_GATE,
            message=AT_GATE_MESSAGE,
        )
    return ledger.Condition(
        type=condition_models.WARM_START_READY,
        status=False,
        reason=condition_models.WARM_START_NOT_READY,
        message=f"run due {timeline.rfc3339(scheduled_time)}: {not_ready}",
    )


def last_run_condition(
    current: Mapping[str, Any], last_run: Mapping[str, Any] | None, *, fresh: bool
) -> ledger.Condition | None:
    """``LastRunSucceeded`` as this write states it, from ``last_run`` (the ``lastRun`` it
    leaves), or None to leave it as ``current`` has it: it changes only when the write carries
    the new ``lastRun`` (``fresh``), or is stated at all when ``current`` lacks it."""
    if not fresh and (
        status_reader.condition(current, condition_models.LAST_RUN_SUCCEEDED) is not None
    ):
        return None
    if last_run is None:
        return ledger.Condition(
            type=condition_models.LAST_RUN_SUCCEEDED,
            status=None,
            reason=condition_models.NO_RUN_YET,
            message=_NO_RUN_YET_MESSAGE,
        )
    result = last_run.get("result")
    if not status_reader.final(result):  # a hand-written lastRun this operator does not read
        return None
    return ledger.Condition(
        type=condition_models.LAST_RUN_SUCCEEDED,
        status=result == records.RunResult.SUCCEEDED,
        reason=str(result),
        message=_bounded(str(last_run.get("message") or "")),
    )


def stated_generation(current: Mapping[str, Any], pending: ledger.Pending) -> int | None:
    """The generation a write states: the one it sets, or the one the status has."""
    if pending.observed_generation is not None:
        return pending.observed_generation
    known = current.get("observedGeneration")
    return known if status_reader.whole(known) else None


def _bounded(message: str) -> str:
    """``message`` cut to what a condition's message may hold (a run's message has no limit)."""
    limit = condition_models.CONDITION_MESSAGE_MAX
    return message if len(message) <= limit else message[: limit - 1] + "…"


def merge(
    current: list[Mapping[str, Any]],
    updates: Iterable[tuple[ledger.Condition, int | None]],
    *,
    now: datetime,
) -> list[dict[str, Any]]:
    """``current`` with ``updates`` (each with the generation it was computed from) in place."""
    merged = {condition["type"]: dict(condition) for condition in current}
    for update, generation in updates:
        status = _condition_status(update)
        previous = merged.get(update.type)
        since = None
        if previous is not None and previous.get("status") == status:
            # The transition time stays while the status does; one this operator cannot read
            # counts as absent, and the condition is restated from now.
            since = status_reader.instant(previous.get("lastTransitionTime"))
        merged[update.type] = condition_models.Condition(
            type=update.type,
            status=status,
            reason=update.reason,
            message=update.message,
            last_transition_time=since or now.replace(microsecond=0),
            observed_generation=generation,
        ).model_dump(mode="json", exclude_none=True)
    return list(merged.values())


def _condition_status(condition: ledger.Condition) -> condition_models.ConditionStatus:
    if condition.status is None:
        return condition_models.ConditionStatus.UNKNOWN
    return (
        condition_models.ConditionStatus.TRUE
        if condition.status
        else condition_models.ConditionStatus.FALSE
    )
