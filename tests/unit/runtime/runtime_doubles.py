"""Test doubles for the runtime: a wall clock driven by the loop, targets, locks, constructors.

The tests run under looptime, so the loop clock is fake and fast-forwards to the next timer.
``FakeWall`` derives wall time from it: ``base + (loop time elapsed) + jumps``. Simulated hours
cost nothing, and a test can step the wall clock forward or backward like an NTP step.
"""

import asyncio
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import protocols, records
from punctual.scheduling import interval, missed, overlap, plans, slots

LOOPTIME = pytest.mark.looptime(
    # The fake clock starts at the real one, so that timers a test leaves behind stay in the
    # future when pytest-asyncio tears fixtures down on the real clock (see tests/conftest.py).
    start=time.monotonic,
    # A safety net: a test that waits for something that never happens fails after three
    # simulated days instead of hanging until pytest-timeout.
    end=lambda: time.monotonic() + 3 * 24 * 3600,
    # Idle loop cycles before the fake clock moves on. They give threads and sockets a chance to
    # deliver; these tests have none, and the default (42) makes a simulated day cost seconds.
    noop_cycles=1,
)

JOB = slots.JobRef(namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-000000000001")
BASE = datetime(2026, 1, 1, tzinfo=UTC)
"""A wall-clock instant on a whole hour: every ``every`` schedule has a slot here."""
SECOND = timedelta(seconds=1)
TOLERANCE = timedelta(milliseconds=1)
"""How late "on time" may be: the loop clock has microsecond resolution, floats round."""


class FakeWall:
    """A wall clock that advances with the event loop's (fake) clock and can jump.

    It starts reading ``base`` at the first call, which must happen inside the test. Once
    looptime is switched off again (fixture teardown runs on the real clock), it stands still.
    """

    def __init__(self, base: datetime) -> None:
        self.base = base
        self.jumped = timedelta()
        self._t0: float | None = None
        self._elapsed = timedelta()

    def __call__(self) -> datetime:
        loop = asyncio.get_running_loop()
        if getattr(loop, "looptime_on", True):
            now = loop.time()
            if self._t0 is None:
                self._t0 = now
            self._elapsed = timedelta(microseconds=round((now - self._t0) * 1_000_000))
        return self.base + self._elapsed + self.jumped

    def jump(self, by: timedelta) -> None:
        """Step the wall clock, as NTP or a VM resume does; the loop clock does not move."""
        self.jumped += by

    async def sleep_until(self, instant: datetime) -> None:
        """Let the loop run until the wall clock reads ``instant`` (no jump in between)."""
        await asyncio.sleep(max((instant - self()).total_seconds(), 0.0))

    async def sleep(self, duration: timedelta) -> None:
        await asyncio.sleep(duration.total_seconds())


@dataclass
class Target:
    """An executor: takes ``duration`` of loop time, then succeeds (or does what it is told).

    ``fail_with`` is raised after ``duration``; ``hang`` never returns on its own.
    """

    wall: FakeWall
    duration: timedelta = timedelta()
    outcome: records.Outcome = field(default_factory=lambda: records.Outcome(True, "done"))
    fail_with: BaseException | None = None
    hang: bool = False
    contexts: list[records.RunContext] = field(default_factory=list)
    started: list[datetime] = field(default_factory=list)
    """Wall time at which each call began, in call order."""
    finished: list[datetime] = field(default_factory=list)
    running: int = 0
    most_running: int = 0
    cancelled: int = 0
    """Calls that saw their cancellation (and let it through)."""

    async def __call__(self, context: records.RunContext) -> records.Outcome:
        self.contexts.append(context)
        self.started.append(self.wall())
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            if self.hang:
                await asyncio.Event().wait()
            await asyncio.sleep(self.duration.total_seconds())
            if self.fail_with is not None:
                raise self.fail_with
            return self.outcome
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.running -= 1
            self.finished.append(self.wall())

    @property
    def slots(self) -> list[datetime]:
        """The slots the target was called for, in call order."""
        return [context.slot for context in self.contexts]


class GrantingLock:
    """Grants every claim, and remembers when each one was asked (wall time)."""

    def __init__(self, wall: FakeWall) -> None:
        self.wall = wall
        self.asked: list[tuple[datetime, datetime]] = []
        """``(slot, wall time of the claim)`` pairs, in order."""

    async def claim(self, claim: records.Claim) -> bool:
        self.asked.append((claim.slot, self.wall()))
        return self.answer(claim)

    def answer(self, claim: records.Claim) -> bool:
        return True


class LosingLock(GrantingLock):
    """Another replica owns the given slots: the claims for them come back False."""

    def __init__(self, wall: FakeWall, *, lost: Iterable[datetime]) -> None:
        super().__init__(wall)
        self.lost = set(lost)

    def answer(self, claim: records.Claim) -> bool:
        return claim.slot not in self.lost


class UnavailableLock(GrantingLock):
    """The lock backend cannot answer for the given slots."""

    def __init__(self, wall: FakeWall, *, down_for: Iterable[datetime]) -> None:
        super().__init__(wall)
        self.down_for = set(down_for)

    def answer(self, claim: records.Claim) -> bool:
        if claim.slot in self.down_for:
            raise protocols.LockUnavailableError("redis: connection refused")
        return True


class OutageLock(GrantingLock):
    """A lock shared by replicas (``SET NX``: the first holder keeps a slot) that cannot answer
    while the wall clock is within ``down`` (``[start, end)``)."""

    def __init__(self, wall: FakeWall, *, down: tuple[datetime, datetime]) -> None:
        super().__init__(wall)
        self.down = down
        self.holders: dict[str, str] = {}

    def answer(self, claim: records.Claim) -> bool:
        if self.down[0] <= self.wall() < self.down[1]:
            raise protocols.LockUnavailableError("redis: connection refused")
        return self.holders.setdefault(claim.slot_id, claim.holder) == claim.holder


class ForgetfulLock(GrantingLock):
    """A lock whose backend lost its memory: claims of slots before ``started`` are won only to
    be counted missed (``LockForgotError``); later ones are granted."""

    def __init__(self, wall: FakeWall, *, started: datetime) -> None:
        super().__init__(wall)
        self.started = started

    def answer(self, claim: records.Claim) -> bool:
        if claim.slot < self.started:
            raise protocols.LockForgotError("redis: slot due before the server started")
        return True


def every(
    period: timedelta,
    *,
    policy: missed.MissedRunPolicy = missed.MissedRunPolicy.RUN_ONCE,
    max_catch_up: int = 10,
    starting_deadline: timedelta | None = None,
    concurrency: overlap.ConcurrencyPolicy = overlap.ConcurrencyPolicy.FORBID,
    max_queued: int = 1,
    max_runs_in_flight: int = overlap.MAX_RUNS_IN_FLIGHT,
    timeout: timedelta = timedelta(minutes=10),
    offset: timedelta = timedelta(),
) -> plans.JobPlan:
    """The plan of an ``every: <period>`` job."""
    return plans.JobPlan(
        schedule=interval.IntervalSchedule(every=period),
        offset=offset,
        missed_runs=missed.MissedRuns(
            policy=policy, max_catch_up=max_catch_up, starting_deadline=starting_deadline
        ),
        concurrency=concurrency,
        max_queued=max_queued,
        max_runs_in_flight=max_runs_in_flight,
        timeout=timeout,
    )


def results(records: Sequence[records.RunRecord]) -> list[tuple[datetime, records.RunResult]]:
    """``(slot, result)`` of each record, in the order they were recorded."""
    return [(record.slot, record.result) for record in records]


def at(seconds: float) -> datetime:
    """The instant ``seconds`` after ``BASE`` (negative: before it)."""
    return BASE + timedelta(seconds=seconds)


def ats(*seconds: float) -> list[datetime]:
    return [at(value) for value in seconds]
