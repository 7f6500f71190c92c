"""The runs asked for by annotation: ``punctual.dev/run-now`` and ``punctual.dev/backfill``.

Every replica sees each request in its watch and hands it to its scheduler, unless it acted on
that value already or the object says a replica took it; the claim keyed by the request lets
one replica carry it out. Apart from the reconciler (``reconciler``), which arms jobs from
their spec: a request is no part of the spec and never re-arms a job. What is wrong with a
request is returned, for the reconciler to post as a Warning Event by the job's owner.
"""

from dataclasses import dataclass

from punctual.api import annotations, status_reader
from punctual.kube import resources
from punctual.runtime import supervisor
from punctual.scheduling import slots


@dataclass(frozen=True, slots=True)
class Refused:
    """A request not carried out, for a Warning Event: its reason (CamelCase) and why."""

    reason: str
    message: str


class AskedRuns:
    """Hands run-now and backfill requests to the scheduler, each value once per replica."""

    def __init__(self, scheduler: supervisor.Supervisor) -> None:
        self._scheduler = scheduler
        self._tokens: dict[slots.JobRef, str] = {}
        """The last ``punctual.dev/run-now`` token this replica acted on, per job."""
        self._backfills: dict[slots.JobRef, str] = {}
        """The last ``punctual.dev/backfill`` value this replica acted on, per job."""

    def observe(self, body: resources.Body) -> list[Refused]:
        """Act on a new ``punctual.dev/run-now`` token or ``punctual.dev/backfill`` request of
        ``body``; the requests refused."""
        return [
            refused
            for refused in (self._run_now(body), self._backfill(body))
            if refused is not None
        ]

    def forget(self, job: slots.JobRef) -> None:
        self._tokens.pop(job, None)
        self._backfills.pop(job, None)

    def _run_now(self, body: resources.Body) -> Refused | None:
        """Run the job once more for a token this replica has not acted on, unless the object
        says a replica took it already; every replica asks, the claim keyed by the token lets
        one run it."""
        job = resources.job_ref(body)
        token = (body["metadata"].get("annotations") or {}).get(annotations.RUN_NOW)
        if not isinstance(token, str) or self._tokens.get(job) == token:
            return None
        self._tokens[job] = token
        if status_reader.last_run_now_token(status_reader.of(body)) == token:
            return None  # taken already (before this replica started, or by another one)
        problem = annotations.token_problem(annotations.RUN_NOW, token)
        if problem is not None:
            return Refused(reason="InvalidRunNow", message=problem)
        if not self._scheduler.run_now(job, token):
            return Refused(
                reason="InvalidRunNow",
                message=f"metadata.annotations[{annotations.RUN_NOW}]: the job is not "
                "scheduled (see its Ready condition); nothing run",
            )
        return None

    def _backfill(self, body: resources.Body) -> Refused | None:
        """Start a backfill request this replica has not acted on, unless the object says a
        replica took it already; every replica asks, the claim of the request lets one carry
        it out."""
        job = resources.job_ref(body)
        value = (body["metadata"].get("annotations") or {}).get(annotations.BACKFILL)
        if not isinstance(value, str) or self._backfills.get(job) == value:
            return None
        self._backfills[job] = value
        asked = annotations.parse_backfill(value)
        if isinstance(asked, str):
            return Refused(reason="InvalidBackfill", message=asked)
        if status_reader.backfill_taken(status_reader.of(body), asked.token):
            return None  # taken already
        problem = self._scheduler.backfill(job, asked)
        if problem is not None:
            return Refused(
                reason="InvalidBackfill",
                message=f"metadata.annotations[{annotations.BACKFILL}]: {problem}; nothing run",
            )
        return None
