"""A job's claims: each firing claimed once across replicas, failing closed; the slots given up
counted once, on the replica that claims each; the slots the lock could not answer for
remembered, and counted once it answers again."""

import asyncio
import itertools
import logging

from punctual.contracts import firings, protocols, records
from punctual.runtime import armed as armed_
from punctual.runtime import tasks
from punctual.scheduling import missed, slots

logger = logging.getLogger(__name__)
_run_ids = itertools.count(1)


class JobClaims:
    """The claims of one job on this replica."""

    def __init__(
        self,
        *,
        job: slots.JobRef,
        store: protocols.RunStore,
        replica: str,
        job_tasks: tasks.JobTasks,
    ) -> None:
        self._job = job
        self._store = store
        self._replica = replica
        self._tasks = job_tasks
        self._unclaimed: missed.Decision | None = None
        """The slots of the schedule whose claim got no answer (the lock unavailable), bounded
        like any slots given up: counted missed once a claim gets an answer again."""
        self._stopped = False
        self.backup: str | None = None
        """The member to tell of each scheduled slot claimed here (sharding: the job's backup,
        while this replica owns it): see ``records.Claim.backup``."""

    def holder(self) -> str:
        """``<replica>:<run-id>``: a new holder of a claim, for humans reading the lock."""
        return f"{self._replica}:{next(_run_ids)}"

    def stop(self) -> None:
        """Count no more unclaimed slots: the job's runs are stopping here."""
        self._stopped = True

    async def claim(self, firing: firings.Firing, armed: armed_.Armed, *, run: bool) -> bool | None:
        """Fail closed: no claim, no run, whatever went wrong. None: the lock could not answer
        (a slot of the schedule to run is then remembered, to be counted missed once it can)."""
        scheduled = firing.trigger is records.Trigger.SCHEDULED
        claim = firing.claim(
            holder=self.holder(),
            ttl=armed.plan.lock_ttl,
            run=run,
            backup=self.backup if run and scheduled else None,
        )
        try:
            won = await armed.lock.claim(claim)
        except protocols.LockForgotError as error:
            self._count_unclaimed(armed)
            if not run:  # claimed to be counted missed: it is, by this replica
                return True
            # Not run: a slot of the schedule is counted missed, here only; a run asked for by
            # hand or a backfill's slot is refused, as one that ran already.
            logger.warning("slot %s not run: %s", claim.slot_id, error)
            if scheduled:
                self._store.slots_missed(
                    self._job, count=1, newest=firing.slot, reason=records.MissedReason.LOCK_FORGOT
                )
        except protocols.LockUnavailableError as error:
            logger.warning("slot %s not claimed, lock unavailable: %s", claim.slot_id, error)
            if run and scheduled:
                self._remember_unclaimed(missed.give_up((firing.slot,), total=1))
            return None
        except Exception:
            logger.exception("slot %s not claimed, the lock failed", claim.slot_id)
        else:
            self._count_unclaimed(armed)
            return won
        return False

    async def count_missed(
        self,
        decision: missed.Decision,
        armed: armed_.Armed,
        *,
        reason: records.MissedReason = records.MissedReason.SLOTS_MISSED,
    ) -> None:
        """Count the slots ``decision`` gives up, each on the one replica that claims it.

        Every replica that fell behind decides on the slots due since its own cursor, and
        replicas fall behind at different times: a slot another replica ran or counted is
        claimed already, so the count never multiplies. The claims go out together (one round
        trip for a lock that batches them), made oldest first: a lock that is a high-water mark
        (the kubernetes backend) takes them in that order. Slots older than the ones listed (a
        long outage) are counted by the replica that claims the oldest listed one. What is won
        is counted even when the caller is cancelled meanwhile (a re-arm, a shutdown); a claim
        with no answer, from the lock or in time, is left to count once the lock answers again
        (``LockUnavailable``) rather than counted twice.
        """
        given_up = [firings.scheduled(self._job, slot, armed.plan) for slot in decision.given_up]
        claims = [
            self._tasks.spawn(self.claim(firing, armed, run=False), name=f"count {firing.slot_id}")
            for firing in given_up
        ]
        try:
            await asyncio.wait(claims)
        finally:
            answers = [
                claim.result() if claim.done() and not claim.cancelled() else None
                for claim in claims
            ]
            for claim in claims:
                claim.cancel()
            tally = missed.tally(decision, answers)
            if tally.newest is not None:
                self._store.slots_missed(
                    self._job, count=tally.counted, newest=tally.newest, reason=reason
                )
            if tally.unanswered is not None:
                self._remember_unclaimed(tally.unanswered)

    def _remember_unclaimed(self, unclaimed: missed.Decision) -> None:
        self._unclaimed = (
            unclaimed if self._unclaimed is None else missed.merge(self._unclaimed, unclaimed)
        )

    def _count_unclaimed(self, armed: armed_.Armed) -> None:
        """The lock answers again: count the slots it could not answer for, in a task of its
        own (their claims are made only to count them, once across replicas)."""
        unclaimed, self._unclaimed = self._unclaimed, None
        if unclaimed is not None and not self._stopped:
            self._tasks.spawn(
                self.count_missed(unclaimed, armed, reason=records.MissedReason.LOCK_UNAVAILABLE),
                name=f"count unclaimed of {self._job.namespace}/{self._job.name}",
            )
