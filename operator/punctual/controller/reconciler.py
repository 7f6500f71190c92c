"""What each replica does when it sees a ScheduledJob: arm, re-arm, suspend or disarm it.

Every replica reconciles every object from its own watch stream; nothing here writes anything
that another replica would have to undo (no finalizers, no handler progress). Which replica
runs a slot is decided by the slot lock, not here. With sharding, the conditions and Events
every replica would write alike are written by the job's owner only (the one that ``leads``
it), and again by a new owner when the job moves to it. The runs asked for by annotation
(run-now, backfill) are handed to the scheduler by ``asked_runs``.
"""

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import assert_never

from punctual.api import (
    annotations,
    condition_models,
    exclusion_plans,
    planning,
    spec_bounds,
    status_reader,
)
from punctual.contracts import protocols
from punctual.controller import arming, asked_runs, calendars, failures, readiness, validation
from punctual.kube import objects, resources
from punctual.locks import health
from punctual.runtime import job_loop, supervisor
from punctual.scheduling import hashed, slots
from punctual.scheduling.errors import InvalidSpecError
from punctual.stores import status
from punctual.targets import errors as target_errors
from punctual.targets import kinds
from punctual.targets import problems as target_problems

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Inputs:
    skip: str | None
    """The ``punctual.dev/skip`` value, whose slots the plan leaves out."""
    calendars: calendars.Named
    """The Calendars ``spec.exclude.calendars`` names, at the versions seen."""


@dataclass(frozen=True, slots=True)
class _Scheduling:
    generation: int
    destination: str = ""
    """Where its runs' work goes, for the Ready message (``targets.plugin.Wiring.destination``)."""
    shown: status.Shown = status.NOTHING_SHOWN
    """Its schedule and target as ``status.schedule`` and ``status.target`` show them."""


class Reconciler:
    def __init__(
        self,
        *,
        scheduler: supervisor.Supervisor,
        store: status.StatusStore,
        cache: objects.ObjectCache,
        targets: kinds.Targets,
        wall: protocols.WallClock,
        warnings: protocols.Warnings,
        lock_health: health.HealthTrackingLock | None = None,
        pause: failures.FailurePause | None = None,
        bounds: spec_bounds.Bounds = spec_bounds.DEFAULT_BOUNDS,
        problems: target_problems.TargetProblems | None = None,
    ) -> None:
        """``bounds``: the platform's, a spec past them ``InvalidSpec`` (as at admission);
        ``problems``: what the targets' runs found of jobs' destinations (Ready False)."""
        self._scheduler = scheduler
        self._bounds = bounds
        self._store = store
        self._cache = cache
        self._targets = targets
        self._wall = wall
        self._warnings = warnings
        self._seen: dict[slots.JobRef, arming.Seen] = {}
        self._pause = pause
        self._asked = asked_runs.AskedRuns(scheduler)
        self._calendars = calendars.Calendars()
        self._failures: dict[slots.JobRef, int] = {}
        """``status.consecutiveFailures`` in the last version of each job this replica's watch
        showed (not its cache, which its own writes feed too): a rise is what pauses a job."""
        self._lock_health = lock_health
        self._scheduling: dict[slots.JobRef, _Scheduling] = {}
        """Jobs armed and not suspended, with their generation: Ready follows the lock."""
        self._stopped: dict[slots.JobRef, tuple[str, str]] = {}
        """Jobs armed whose loop stopped by itself, with its reason and message: Ready says
        so until the next generation arms them again."""
        if lock_health is not None:
            lock_health.subscribe(self._lock_backend_changed)
        self._problems = problems
        if problems is not None:
            problems.subscribe(self._target_problem_changed)
        scheduler.when_stopped(self._scheduling_stopped)

    async def observe(self, body: resources.Body) -> None:
        """An object was listed, added or modified: act on a new generation or a new
        ``punctual.dev/skip`` value, and on a new ``punctual.dev/run-now`` token or
        ``punctual.dev/backfill`` request."""
        await self._reconcile(body, inputs=self._inputs(body))
        job = resources.job_ref(body)
        for refused in self._asked.observe(body):
            self._warn(job, reason=refused.reason, message=refused.message)

    def took_in(self, body: resources.Body) -> bool:
        """What ``observe`` does with a version of a job that changes nothing for its scheduling
        (the generation and the inputs of its plan as armed, no pause due): done at once, without
        waiting for anything, and True. False, having done nothing: ``observe`` it.

        Nearly every event is such a version: the echo of a status write, which every replica
        sees for every job, owned or not."""
        job = resources.job_ref(body)
        seen = self._seen.get(job)
        if (
            seen is None
            or seen.generation != int(body["metadata"].get("generation", 0))
            or seen.inputs != self._inputs(body)
            or self._pause_due(body, seen, previous=self._failures.get(job))
        ):
            return False
        self._cache.remember(body)
        self._failures[job] = status_reader.consecutive_failures(status_reader.of(body))
        for refused in self._asked.observe(body):
            self._warn(job, reason=refused.reason, message=refused.message)
        return True

    def _inputs(self, body: resources.Body) -> _Inputs:
        return _Inputs(
            skip=(body["metadata"].get("annotations") or {}).get(annotations.SKIP),
            calendars=self._calendars.named_by(body),
        )

    async def calendar_changed(self, body: resources.Body, *, deleted: bool) -> None:
        """A Calendar was listed, added, modified or deleted: every job of its namespace that
        names it is planned again, at once."""
        if deleted:
            self._calendars.forget(body)
        else:
            self._calendars.remember(body)
        metadata = body["metadata"]
        for user in self._calendars.users(metadata["namespace"], metadata["name"]):
            await self._reconcile(user, inputs=self._inputs(user))

    async def _reconcile(self, body: resources.Body, *, inputs: _Inputs) -> None:
        # Armed as its spec says, without the slots ``punctual.dev/skip`` leaves out and the
        # days of the Calendars it names; armed again when any of them changes.
        self._cache.remember(body)
        job = resources.job_ref(body)
        generation = int(body["metadata"].get("generation", 0))
        seen = self._seen.get(job)
        previous_failures = self._failures.get(job)
        self._failures[job] = status_reader.consecutive_failures(status_reader.of(body))
        if seen is not None and seen.generation == generation and seen.inputs == inputs:
            await self._pause_after_failures(body, seen, previous=previous_failures)
            return  # a status change: nothing for the scheduler
        self._stopped.pop(job, None)
        if self._problems is not None:
            self._problems.forget(job)  # the runs of the new spec tell again
        try:
            checked = validation.check(
                body.get("spec") or {},
                uid=job.uid,
                hash_key=hashed.job_key(namespace=job.namespace, name=job.name),
                bounds=self._bounds,
                now=self._wall(),
                skipped=self._skipped(job, inputs.skip),
                calendars=self._calendars.specs(job.namespace, inputs.calendars.names),
            )
            spec, plan = checked.spec, checked.plan
            wiring = self._targets.wire(job, spec)
        except (InvalidSpecError, target_errors.TargetUnavailableError) as error:
            reason = (
                error.reason
                if isinstance(
                    error,
                    target_errors.TargetUnavailableError | exclusion_plans.CalendarNotFoundError,
                )
                else "InvalidSpec"
            )
            await self._scheduler.disarm(job)
            self._scheduling.pop(job, None)
            self._seen[job] = arming.Seen(generation=generation, suspended=False, inputs=inputs)
            self._show(job, status.NOTHING_SHOWN)
            self._condition(
                job,
                condition_models.READY,
                ok=False,
                reason=reason,
                message=str(error),
                generation=generation,
            )
            self._warn(job, reason=reason, message=str(error))
            return
        executor, lock = wiring.executor, wiring.lock
        shown = status.Shown(
            schedule=planning.shown_schedule(spec), target=planning.shown_target(spec)
        )
        self._show(job, shown)
        self._store.configure(job, history=plan.history)
        threshold = spec.suspend_after_failures
        decision = arming.decide(
            seen=seen, spec=spec, status=status_reader.of(body), plan=plan, now=self._wall()
        )
        match decision:
            case arming.Suspend():
                handled_through = self._scheduler.suspend(job)
                self._seen[job] = arming.Seen(
                    generation=generation,
                    suspended=True,
                    suspend_after_failures=threshold,
                    suspended_after=handled_through if decision.newly else decision.suspended_after,
                    inputs=inputs,
                )
                self._scheduling.pop(job, None)
                self._condition(
                    job,
                    condition_models.SUSPENDED,
                    ok=True,
                    reason=decision.reason,
                    message=decision.message,
                    generation=generation,
                )
                self._condition(
                    job,
                    condition_models.READY,
                    ok=True,
                    reason="Suspended",
                    message="valid, suspended",
                    generation=generation,
                )
            case arming.Arm():
                self._seen[job] = arming.Seen(
                    generation=generation,
                    suspended=False,
                    suspend_after_failures=threshold,
                    inputs=inputs,
                )
                if decision.reset_failures:
                    self._store.reset_failures(job)
                self._scheduler.arm(
                    job,
                    plan,
                    executor,
                    resume_after=decision.resume_after,
                    suspended_through=decision.suspended_through,
                    lock=lock,
                )
                self._active(job, generation)
                self._scheduling[job] = scheduling = _Scheduling(
                    generation, wiring.destination, shown=shown
                )
                self._ready(job, scheduling)
            case _:
                assert_never(decision)

    async def forget(self, body: resources.Body) -> None:
        """The object is gone: no more slots, runs cancelled, nothing left behind."""
        job = resources.job_ref(body)
        await self._scheduler.disarm(job)
        self._seen.pop(job, None)
        self._calendars.drop(job)
        self._failures.pop(job, None)
        self._asked.forget(job)
        self._scheduling.pop(job, None)
        self._stopped.pop(job, None)
        if self._problems is not None:
            self._problems.forget(job)
        self._store.forget(job)
        self._cache.forget(job)

    def _skipped(self, job: slots.JobRef, value: object) -> frozenset[datetime]:
        """The slots ``punctual.dev/skip`` leaves out; none, with a Warning Event, when its
        value is malformed (an annotation is no part of the spec: the job runs as specified)."""
        if not isinstance(value, str):
            return frozenset()
        skipped = annotations.parse_skipped(value)
        if isinstance(skipped, str):
            self._warn(job, reason="InvalidSkip", message=skipped)
            return frozenset()
        return skipped

    def _warn(self, job: slots.JobRef, *, reason: str, message: str) -> None:
        """A Warning Event every replica would post alike: posted by the job's owner only."""
        if self._scheduler.leads(job):
            self._warnings.warn(job, reason=reason, message=message)

    async def _pause_after_failures(
        self, body: resources.Body, seen: arming.Seen, *, previous: int | None
    ) -> None:
        threshold = seen.suspend_after_failures
        if (
            self._pause is not None
            and threshold is not None
            and self._pause_due(body, seen, previous=previous)
        ):
            await self._pause.suspend(body, threshold=threshold)

    def _pause_due(self, body: resources.Body, seen: arming.Seen, *, previous: int | None) -> bool:
        threshold = seen.suspend_after_failures
        if self._pause is None or threshold is None or seen.suspended:
            return False
        return failures.due(previous=previous, body=body, threshold=threshold)

    def members_changed(self, members: frozenset[str]) -> None:
        """The live replicas changed: the scheduler re-arms what moved; the jobs this replica
        now owns get its conditions (written only where the object does not say them yet)."""
        for job in self._scheduler.members_changed(members):
            scheduling = self._scheduling.get(job)
            if scheduling is not None:
                self._show(job, scheduling.shown)
                self._active(job, scheduling.generation)
                self._ready(job, scheduling)

    def _active(self, job: slots.JobRef, generation: int) -> None:
        self._condition(
            job,
            condition_models.SUSPENDED,
            ok=False,
            reason="Active",
            message="scheduling",
            generation=generation,
        )

    def _scheduling_stopped(self, job: slots.JobRef, reason: str, message: str) -> None:
        """The job's loop stopped by itself (``NoFutureSlots``: its schedule ran out): Ready
        False says why nothing runs any more, and a Warning Event. ``Ended`` (its active window
        is over) is what was asked for: Ready True with that reason, and no warning."""
        scheduling = self._scheduling.get(job)
        if scheduling is None:
            return
        self._stopped[job] = (reason, message)
        self._ready(job, scheduling)
        if reason != job_loop.ENDED:
            self._warn(job, reason=reason, message=message)

    def _ready(self, job: slots.JobRef, scheduling: _Scheduling) -> None:
        """Ready for a job being scheduled (``readiness.ready``): users must see why nothing
        runs, or nothing can succeed."""
        lock = self._lock_health
        problem = self._problems.of(job) if self._problems is not None else None
        verdict = readiness.ready(
            stopped=self._stopped.get(job),
            lock_unavailable=lock.message if lock is not None and not lock.available else None,
            problem=problem,
            destination=scheduling.destination,
        )
        self._condition(
            job,
            condition_models.READY,
            ok=verdict.ok,
            reason=verdict.reason,
            message=verdict.message,
            generation=scheduling.generation,
        )

    def _lock_backend_changed(self, available: bool, message: str) -> None:
        for job, scheduling in self._scheduling.items():
            self._ready(job, scheduling)

    def _target_problem_changed(self, job: slots.JobRef) -> None:
        scheduling = self._scheduling.get(job)
        if scheduling is not None:
            self._ready(job, scheduling)

    def _show(self, job: slots.JobRef, shown: status.Shown) -> None:
        """``status.schedule`` and ``status.target``, for ``kubectl get``'s SCHEDULE and TARGET
        columns; ``NOTHING_SHOWN`` removes them."""
        if self._scheduler.leads(job):
            self._store.show(job, shown)

    def _condition(
        self,
        job: slots.JobRef,
        kind: str,
        *,
        ok: bool,
        reason: str,
        message: str,
        generation: int,
    ) -> None:
        if not self._scheduler.leads(job):
            return
        condition = status.Condition(type=kind, status=ok, reason=reason, message=message)
        self._store.set_condition(job, condition, generation=generation)
