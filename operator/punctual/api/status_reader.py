"""The one lenient reader of a ScheduledJob's own status, for every module that acts on it.

Status is outside input: whoever may write ``scheduledjobs/status`` can put there anything the
CRD's schema lets through, and a status written by an older operator, or by hand, may lack
fields or hold forms Python does not read (a lowercase ``z`` in a timestamp, an instant that
cannot be held in UTC such as ``0001-01-01T00:00:00+01:00``). What this module cannot read
counts as absent: the operator goes on, and its next write replaces the value, instead of
failing every reconcile, claim or write on it.

The wire shape read here is the one ``punctual.api.status_models`` defines; what composes a
status to write is ``punctual.stores.status.patch``.
"""

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeGuard

from punctual.api import condition_models
from punctual.contracts import records
from punctual.scheduling import timeline

Status = Mapping[str, Any]

_RESULTS = frozenset(result.value for result in records.RunResult)


def of(body: Mapping[str, Any] | None) -> Status:
    """``body``'s status; empty when it has none, or not an object."""
    status = (body or {}).get("status")
    return status if isinstance(status, Mapping) else {}


def instant(text: Any) -> datetime | None:
    """``text`` as an instant; None for what this operator cannot read."""
    try:
        return timeline.parse_rfc3339(text)
    except (TypeError, ValueError):
        return None


def whole(value: Any) -> TypeGuard[int]:
    """Whether ``value`` is a count (a JSON boolean is not, though Python calls it an int)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def high_water(status: Status) -> datetime | None:
    """``lastScheduleTime``: the newest slot claimed, the mark a restarted or resumed job's
    slots are counted from."""
    return instant(status.get("lastScheduleTime"))


def consecutive_failures(status: Status) -> int:
    """``consecutiveFailures``; 0 when absent or unreadable (no failure known)."""
    known = status.get("consecutiveFailures")
    return known if whole(known) else 0


def last_run_now_token(status: Status) -> str | None:
    """``lastRunNowToken``: the newest ``punctual.dev/run-now`` token a replica took."""
    token = status.get("lastRunNowToken")
    return token if isinstance(token, str) else None


def run_now_taken(status: Status, token: str) -> bool:
    """Whether a replica took ``token`` already: the newest token taken, or one of a run
    the status still shows."""
    return token == last_run_now_token(status) or any(
        run.get("runNowToken") == token for run in entries(status, "recentRuns")
    )


def backfill(status: Status) -> Mapping[str, Any]:
    """``backfill``: the progress of the newest backfill request taken (empty: none)."""
    progress = status.get("backfill")
    return progress if isinstance(progress, Mapping) else {}


def backfill_taken(status: Status, token: str) -> bool:
    """Whether a replica took the backfill request ``token`` already."""
    return backfill(status).get("token") == token


def entries(status: Status, field: str) -> list[Mapping[str, Any]]:
    """The entries of a list (``recentRuns``, ``active``, ``conditions``) that are objects."""
    entries = status.get(field)
    if not isinstance(entries, list):
        return []
    return [entry for entry in entries if isinstance(entry, Mapping)]


def slot_started(status: Status, slot: datetime) -> bool:
    """Whether the status shows a run of ``slot`` in progress, or one that came to its own
    end (``RunResult.final``)."""
    shown = timeline.rfc3339(slot)
    return any(
        run.get("slot") == shown and final(run.get("result"))
        for run in entries(status, "recentRuns")
    ) or any(run.get("slot") == shown for run in entries(status, "active"))


def run_of_token(status: Status, token: str) -> Mapping[str, Any] | None:
    """The run of the run-now ``token`` that ``lastRun`` or ``recentRuns`` records with a
    result this operator knows, if any."""
    for run in [status.get("lastRun"), *entries(status, "recentRuns")]:
        if (
            isinstance(run, Mapping)
            and run.get("runNowToken") == token
            and run.get("result") in _RESULTS
        ):
            return run
    return None


def condition(status: Status, kind: str) -> Mapping[str, Any] | None:
    """The first condition of type ``kind``, if any."""
    return next(
        (known for known in entries(status, "conditions") if known.get("type") == kind), None
    )


def suspended_since(status: Status) -> datetime | None:
    """When the Suspended condition last turned True, while it is True."""
    suspended = condition(status, condition_models.SUSPENDED)
    if suspended is None or suspended.get("status") != "True":
        return None
    return instant(suspended.get("lastTransitionTime"))


def final(result: Any) -> bool:
    """Whether a run entry's ``result`` is a run's own end (``RunResult.final``); False for a
    value this operator does not know."""
    return result in _RESULTS and records.RunResult(result).final
