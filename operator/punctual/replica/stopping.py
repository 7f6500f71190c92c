"""A replica's stop, as named steps in order, while everything it needs is still open."""

import asyncio
import logging
from dataclasses import dataclass, field
from typing import NoReturn

from punctual.controller import job_events
from punctual.kube import membership
from punctual.replica import parts
from punctual.runtime import supervisor
from punctual.stores import status as status_store

logger = logging.getLogger(__name__)


@dataclass
class Stopping:
    """The replica's stop, in order: the ScheduledJob watch stopped, its membership Lease
    released, every run ended and recorded, run leases released, every status written (the API
    client, Redis and the HTTP connections still open). Idempotent: called by kopf's cleanup
    handler, and again by ``Replica.aclose`` as a safety net."""

    scheduler: supervisor.Supervisor
    statuses: status_store.StatusStore
    flusher: asyncio.Task[None]
    prober: asyncio.Task[None]
    durable: parts.DurableRuns | None
    durable_tasks: list[asyncio.Task[None]]
    members: membership.Membership | None = None
    members_task: asyncio.Task[None] | None = None
    jobs: job_events.JobEvents | None = None
    watches: list[asyncio.Task[NoReturn]] = field(default_factory=list)
    _done: bool = field(default=False, init=False)

    async def stop(self) -> None:
        if self._done:
            return
        clock = asyncio.get_running_loop().time
        started = clock()
        logger.info("replica stopping: ending every run, then writing the last statuses")
        await self._stop_watching()
        await self._leave_the_members()
        self.prober.cancel()  # no Ready changes any more: they would come after the last write
        await self._end_every_run()
        await self._release_the_run_leases()
        runs_ended = clock()
        await self._write_the_last_statuses()
        self._done = True
        logger.info(
            "replica stopped in %.1fs: runs ended in %.1fs, the last statuses written in %.1fs",
            clock() - started,
            runs_ended - started,
            clock() - runs_ended,
        )

    async def _stop_watching(self) -> None:
        """No more ScheduledJob versions: none arms a job again while the runs end."""
        for watch in self.watches:
            watch.cancel()
        await asyncio.gather(*self.watches, return_exceptions=True)
        if self.jobs is not None:
            await self.jobs.stop()

    async def _leave_the_members(self) -> None:
        """First deaf to members that come and go: when every replica stops at once (a
        rollout, a scale-down), re-arming the shares of those that left before this one would
        lengthen the stop. Then the Lease deleted at once: the others take this replica's jobs
        now."""
        if self.members_task is not None:
            self.members_task.cancel()
            await asyncio.gather(self.members_task, return_exceptions=True)
        if self.members is not None:
            await self.members.leave()

    async def _end_every_run(self) -> None:
        """Runs cancelled, recorded Cancelled ("operator stopping"); with run leases, a Job
        that goes on is left to the replica that takes its lease over, unrecorded here."""
        await self.scheduler.shutdown(hand_over=self.durable is not None)

    async def _release_the_run_leases(self) -> None:
        if self.durable is not None:
            await self.durable.stop(self.durable_tasks)

    async def _write_the_last_statuses(self) -> None:
        """The writes in flight finish, then what is left (bounded)."""
        self.statuses.close()
        await asyncio.wait([self.flusher, self.prober])
        if not self.flusher.cancelled() and self.flusher.exception() is not None:
            logger.error("the status writer failed", exc_info=self.flusher.exception())
